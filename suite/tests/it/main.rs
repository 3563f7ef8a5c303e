//! The idemspec crate's one integration-test binary.

mod cli;
mod report;
mod support;
