//! The per-check context every kind of check works through, [`CheckRun`]: the sender (with the
//! check's marker and fault proxy), what each step did, every exchange paired with what the proxy
//! did, and what was observed behind the API. Steps, assertions and procedures sit above it; the
//! driver of one check (`check.rs`) above them all.
//!
//! - `send`: the only way a check sends a request.
//! - `evidence`: pairs what was sent with what the proxy did and picks the exchanges a verdict
//!   shows.
//! - `reading`: the contract's reading of a status (mismatch, in flight, released).
//! - `needs`: what a check prepares and observes around its steps for its judges.
//! - `operations`: long-running operations a check's answers name, and waiting for them to settle.

mod check_run;
pub(crate) mod evidence;
mod needs;
mod operations;
pub(crate) mod reading;
mod send;

pub(crate) use check_run::{CheckRun, StepMeta};
pub(crate) use needs::{twin_step, Needs, TWIN_AFTER};
pub(crate) use operations::same_operation;
pub(crate) use send::{member_bytes, Sender, DEFAULT_TIMEOUT, STEP_HEADER};
