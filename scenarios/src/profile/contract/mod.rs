//! The idempotency contract a target claims: a named preset and the fields it overrides
//! (`spec.rs`, as written), a same-key request's wait (`wait.rs`), the presets' contracts (`presets.rs`), resolution into the contract
//! checks judge against (`resolve.rs`, `resolved.rs`), and the contract's own rules
//! (`problems.rs`); what a refusal's body is promised to look like (`error_shape.rs`).

mod body_condition;
mod error_shape;
mod presets;
mod problems;
mod replay;
mod resolve;
mod resolved;
mod retention;
mod spec;
mod statuses;
mod wait;

pub use body_condition::BodyCondition;
pub use error_shape::ErrorShape;
pub use presets::Preset;
pub use replay::{ReplayBody, ReplayBy};
pub use resolved::{Contract, MismatchAnswer, Promise, Refusal, Replays, MAX_KEY_MAX_LEN};
pub use retention::{Retention, RetentionCase};
pub use spec::{ContractSpec, Covered, KeyForm};
pub(crate) use statuses::deviation_statuses;
pub use statuses::StoredStatus;
pub use wait::{InFlightWait, InFlightWaitSpec, MAX_IN_FLIGHT_WAIT, WAIT_SLACK};

#[cfg(test)]
mod tests;
