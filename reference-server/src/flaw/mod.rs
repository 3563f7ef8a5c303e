//! Deliberate flaws (`--flaw NAME`, repeatable): each breaks exactly one rule of the contract, so the
//! suite can be proven to catch it (the flaw matrix, `suite/tests/it/flaw_matrix.rs`, names the
//! check that catches each). Without flaws the server is correct. One file per flaw, of one of
//! three kinds:
//! - a **bend** of the idempotency layer's [`Rules`](crate::idempotency::Rules): one rule bent, the
//!   rest passed through, so the layer's state machine asks its rules and never knows of flaws
//!   ([`Flaws::rules`] stacks the bends on the [`ArticleRules`](crate::idempotency::ArticleRules));
//! - a **wrapper**, a middleware the router puts around a route only when the flaw is on
//!   ([`WRAPPERS`]: `replay_drops_headers.rs`, `create_drops_location.rs`);
//! - the fleet's one switch, `failed_create_leaves_worker.rs`.

pub mod cache_5xx;
pub mod check_then_act;
pub mod create_drops_location;
pub mod endpoint_unscoped;
pub mod failed_create_leaves_worker;
pub mod global_keyspace;
pub mod no_delete_replay;
pub mod no_fingerprint;
pub mod no_idempotency;
pub mod no_in_flight_ttl;
pub mod non_resumable;
pub mod proceed_in_flight;
pub mod reclaim_reallocates;
pub mod replay_drops_headers;
mod set;

pub use set::{Flaw, Flaws, WRAPPERS};
