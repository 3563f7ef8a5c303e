//! Deliberate flaws (`--flaw NAME`, repeatable): each breaks exactly one rule of the contract, so the
//! suite can be proven to catch it (the flaw matrix, `suite/tests/it/flaw_matrix.rs`, names the
//! check that owns each). Without flaws the server is correct.
//!
//! A flaw is one of two kinds:
//! - a **wrapper**, a middleware in its own file that the router puts around a route only when the
//!   flaw is on, leaving the layer and the handlers as they are: `replay_drops_headers.rs`,
//!   `create_drops_location.rs` ([`WRAPPERS`]);
//! - a **switch** of [`Behaviour`] (`behaviour.rs`), named for the correct behaviour, that the
//!   idempotency layer or the fleet reads at the one point the flaw bends.

mod behaviour;
pub mod create_drops_location;
pub mod replay_drops_headers;
mod set;

pub use behaviour::Behaviour;
pub use set::{Flaw, Flaws};

/// The flaws that are wrappers around a route, not switches of [`Behaviour`].
pub const WRAPPERS: &[Flaw] = &[Flaw::ReplayDropsHeaders, Flaw::CreateDropsLocation];
