//! The runner: drives each check's steps against the target (through an embedded proxy where faults
//! apply), evaluates assertions into graded verdicts and emits
//! [`RunEvent`](crate::model::RunEvent)s.
//!
//! Layout: [`run`] (the run end to end: target, preflight, the engine's driver, the report),
//! `options` (what to run), `select` (which checks, capabilities), `api_ctx` (what every
//! check shares), `context` (the per-check context, `CheckRun`: the only way a check sends a
//! request, its evidence, the contract's reading of a status), `steps` (a scenario's requests,
//! barrier, retries, hooks), `procedures` (checks written in Rust), `assert` (the assertion
//! vocabulary, one file per kind), `check` (one check end to end, above them all), `observe` (list
//! counts, counters), `proxy` (one embedded proxy per faulted check). Grading is the engine's
//! ([`crate::engine`]), shared with `idemspec client`.

mod api_ctx;
mod assert;
mod capabilities;
mod check;
mod context;
mod documented;
mod observe;
mod options;
mod procedures;
mod proxy;
mod run;
mod steps;
mod tls_preflight;
mod tokens;

pub use crate::engine::EventSink;
pub use options::{RunError, RunOptions, Target, Unreachable};
pub use procedures::check_known as check_procedure;
pub use run::run;

use idemspec_scenarios::scenario::Scenario;

/// The built-in checks, in run order: those written as YAML steps
/// ([`idemspec_scenarios::catalogue`]), then those written in Rust (`procedures`).
pub fn catalogue() -> Vec<Scenario> {
    let mut checks = idemspec_scenarios::catalogue::builtin();
    checks.extend(procedures::builtin());
    checks
}

/// The ids of [`catalogue`]'s checks, in its order, without loading them (a procedure's id is
/// its name).
pub fn catalogue_ids() -> Vec<String> {
    let yaml = idemspec_scenarios::catalogue::SOURCES
        .iter()
        .map(|(id, _)| *id);
    yaml.chain(procedures::ALL.iter().map(|p| p.name()))
        .map(str::to_owned)
        .collect()
}
