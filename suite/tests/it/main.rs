//! The idemspec crate's one integration-test binary.

mod cli;
mod flaw_matrix;
mod reference_run;
mod report;
mod support;
mod verdicts;
