//! `idemspec client`: judging the client side of retries (`docs/client.md`).
//!
//! The article ends with the client's half of the contract: one key per logical operation,
//! generated before the first attempt and kept across every retry; different operations,
//! different keys; backoff with jitter, `Retry-After` honoured; no retry of a mismatch or another
//! permanent 4xx; retries bounded. This module checks an HTTP client against it. idemspec serves
//! a canned upstream on `127.0.0.1:0` (the client profile's success response) — or forwards to
//! the user's — and, for each situation a check needs, starts a fresh fault proxy in front of it
//! and runs the user's command once (one logical operation through the client), telling it the
//! proxy's address. The proxy's event log is the ground truth: each attempt's key, its time,
//! the fault applied, what the client was answered. The checks grade verdicts with the server
//! suite's vocabulary and produce the same [`RunReport`](crate::model::RunReport), so every reporter works unchanged.
//!
//! - [`run`] with [`ClientOptions`] (`options`): the whole run, emitting
//!   [`RunEvent`](crate::model::RunEvent)s (`run`).
//! - `checks/`: the catalogue, one file per check behind [`checks::ClientCheck`].
//! - `situation`: one run of the command under planned faults, and what it [`CommandRun`].
//! - `command`: running the command (bounded, its process group killed at the deadline).
//! - `canned`: the canned upstream. `attempt`: attempts read from proxy events.
//! - `tls_edge`: `--tls`, the command served over HTTPS with a throwaway CA per run.
//! - `discover`: `--discover`, where a client puts its key.
//! - `outcome`: evidence, notes and timeline. Findings and grading are the engine's
//!   ([`crate::engine`]).

pub mod assemble;
pub mod attempt;
pub mod canned;
pub mod checks;
pub mod command;
pub mod discover;
mod options;
mod run;
pub mod situation;
pub mod tls_edge;

pub use options::{ClientError, ClientOptions, Ctx};
pub use run::{discover, run};
pub use situation::CommandRun;
