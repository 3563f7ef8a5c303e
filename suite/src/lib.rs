//! # idemspec
//!
//! The conformance runner: reads a target profile and scenarios, drives requests (through the
//! fault-injecting proxy where a scenario injects faults), evaluates assertions into graded verdicts,
//! and writes reports.
//!
//! - [`runner`]: [`runner::run`] drives the checks (steps, barrier, embedded proxy, assertions,
//!   graded verdicts) and emits run events; [`runner::RunOptions`] says what to run.
//! - [`reference`]: the bundled leasebroker as a child process that can be killed and restarted.
//! - [`client_check`]: `idemspec client`, judging an HTTP client's retries (the client side).
//! - [`engine`]: what both judge with: the verdict model and its grader, the selection, a run's
//!   events and report.
//! - [`http_client`]: the HTTP client that records every exchange as evidence.
//! - [`hooks`]: the profile's crash / restart / fail_next hooks (shell command or HTTP request).
//! - [`target_process`]: a target idemspec starts from its profile, kills mid-flight and restarts.
//! - [`process_group`]: child processes in a group of their own, killed as a whole.
//! - [`model`]: verdicts, evidence, outcomes, run events, statistics and exit codes.
//! - [`report`]: the terminal table with evidence, JUnit, JSON, Markdown and HTML reports, progress.
#![warn(missing_docs)]

pub mod client_check;
pub mod engine;
pub mod hooks;
pub mod http_client;
pub mod model;
pub mod process_group;
pub mod reference;
pub mod report;
pub mod runner;
pub mod target_process;
