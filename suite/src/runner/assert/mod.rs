//! The assertion vocabulary: one file per kind, each implementing [`Judge`] for its schema type
//! from `idemspec_scenarios::scenario`. A rule says what it needs observed besides the steps'
//! exchanges ([`Needs`]) and judges what the check saw, by the profile's declared contract (never
//! by one server's shape).
//!
//! Adding a kind: its schema type and entry in `scenarios/src/scenario/assertion.rs`, its file
//! here with `impl Judge`, its arm in `judge_of` (`evaluate.rs`) (the match is exhaustive, so the compiler points
//! there), its documentation in `docs/writing-scenarios.md`.

mod compare;
mod conflict;
mod consistent;
mod created;
mod distinct_ids;
mod distinct_problems;
mod effect_delta;
mod evaluate;
mod failure_handled;
mod fault_applied;
mod header;
mod judge;
mod lock_released;
mod no_5xx;
mod no_response;
mod not_replay_of;
mod overlapped;
mod same_response;
mod side_effects;
mod status;
mod succeeded_within;
mod wait_bounded;

pub(crate) use compare::same_response;
pub(crate) use evaluate::{evaluate, needs};
pub(crate) use judge::Judge;
use judge::{answered, responses, unmatched};
