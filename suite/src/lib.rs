//! # idemspec
//!
//! The conformance runner: reads a target profile and scenarios, drives requests (through the
//! fault-injecting proxy where a scenario injects faults), evaluates assertions into graded verdicts,
//! and writes reports.
//!
//! - [`model`]: verdicts, evidence, outcomes, run events, statistics and exit codes.
//! - [`report`]: the terminal table with evidence, JUnit, JSON and Markdown reports, progress.
#![warn(missing_docs)]

pub mod model;
pub mod reference;
pub mod runner;
pub mod report;
