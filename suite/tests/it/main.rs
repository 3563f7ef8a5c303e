//! The idemspec crate's one integration-test binary.

mod report;
mod support;
