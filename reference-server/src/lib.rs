//! leasebroker: the reference provisioning API of idemspec — workers, a node pool, leases and a
//! simulated hypervisor — with a complete Idempotency-Key implementation on SQLite (default) and
//! PostgreSQL. It is the target the idemspec suite is proven against; `--flaw NAME` breaks one rule on
//! purpose so the suite can be shown to catch it.
//!
//! # The contract (leasebroker's choices)
//!
//! - **Key**: header `Idempotency-Key`, 1–255 visible ASCII characters; an RFC 8941 sf-string (`"…"`) is
//!   unquoted (draft-ietf-httpapi-idempotency-key-header-07 §2.1). Invalid → 400 `invalid-idempotency-key`.
//!   Required on `POST /v1/workers` and `POST /v1/workers/{id}/reboot` (400 `missing-idempotency-key`;
//!   `--key-optional` relaxes it), optional on `DELETE` (`--require-key-on-delete`).
//! - **Scope**: a record is (principal, endpoint, key); principal = the bearer token's principal
//!   (or, over TLS with `--tls-client-ca` and no token, the client certificate's subject CN; see
//!   [`auth`]), endpoint = method + route template (`POST /v1/workers/{id}/reboot`).
//! - **Fingerprint**: SHA-256 over method, path, query and the raw body bytes (not a canonical form).
//!   Same key, different fingerprint → **409** `key-reused-with-different-request` (the article's
//!   contract; the IETF draft suggests 422).
//! - **In flight**: a second request gets **409** `request-in-progress` with `Retry-After: 1` at once;
//!   after the in-flight TTL (`--in-flight-ttl`, default 30 s) a retry reclaims the record with an
//!   optimistic `UPDATE … WHERE started_at = ?` (one winner).
//! - **What is cached**: terminal outcomes only — 2xx, and 4xx except 408, 409, 425, 429 — replayed byte
//!   for byte with `Location` and `Content-Type` and `Idempotent-Replayed: true`, also after the worker
//!   was deleted. A 5xx or a panic marks the record failed; the retry runs again and resumes. Bodies over
//!   4 KiB are stored deflate-compressed. Records live for the retention window (`--retention`, 24 h),
//!   then a batched sweeper deletes them.
//! - **Side effects converge**: node allocation, lease, boot, worker and reboot are each keyed by a
//!   sub-key `H(principal, endpoint, key, record nonce, purpose)` (the nonce is kept across retries of
//!   one record, new when a key is reused after its record expired) and are "do or return the existing
//!   one". The boot is
//!   two-phase (pending row committed → hypervisor call tagged with `boot_id` → completed); a retry that
//!   finds a pending row reconciles by listing the hypervisor's instances by tag. A deleted worker's
//!   boot rows are its tombstone: no later attempt of its create writes it again.
//! - **Asynchronous creates** (`--creates async`): a create answers `202` with an operation
//!   (`GET /v1/operations/{id}`) and boots after the answer; a failed operation marks its record
//!   failed, so the retry runs again and resumes; a running operation no process took up for the
//!   in-flight TTL is taken up by one replica's watchdog.
//!
//! Problem types are `https://idemspec.dev/problems/<name>`; the full list is in [`edge::ApiError`]'s
//! module (`missing-idempotency-key`, `invalid-idempotency-key`, `request-in-progress`,
//! `key-reused-with-different-request`, `unauthorized`, `malformed-json`, `invalid-request-body`,
//! `unsupported-media-type`, `payload-too-large`, `request-timeout`, `not-found`, `method-not-allowed`,
//! `pool-exhausted`, `hypervisor-error`, `internal-error`, and for what hyper refuses before the
//! router: `malformed-request`, `uri-too-long`, `request-header-fields-too-large`,
//! `plain-http-to-tls-port`).
//!
//! # Layout
//! - [`cli`]: flags ([`cli::Args`]) and [`cli::run`]; [`server`]: start/stop; [`listener`]: accepting
//!   and serving connections (TLS with `--tls-cert`, header read timeout, problem bodies for what
//!   hyper refuses, lingering close).
//! - [`edge`]: what every route and the listener share: problem bodies, body reading, head limits.
//! - [`api`]: the router, handlers, admin router.
//! - [`idempotency`]: key parsing, fingerprint, the middleware/state machine, stored responses, sub-keys.
//! - [`store`]: one trait per domain ([`store::RecordStore`], [`store::FleetStore`],
//!   [`store::CreateStore`], [`store::OperationStore`], [`store::StatsStore`]), one implementation over SQLite and
//!   PostgreSQL, migrations.
//! - [`fleet`]: node pool, leases, the simulated hypervisor, the asynchronous creates' operations.
//! - [`injection`]: what a process can be told to inject (failing, panicking or hanging boots, a crash
//!   at a chosen point of a create); `clock`: the wall clock rows are stamped with.
//! - [`metrics`]: the Prometheus metrics on the admin listener (`GET /metrics`).
//! - [`sweeper`], [`flaw`], [`auth`]; `error_chain`: an error and its causes on one line.
//! - `testing` (cargo feature `testing`): a throwaway PostgreSQL database per test, leasebroker as a
//!   child process that can be killed, and the crash soak, for this crate's tests and examples and
//!   the suite's tests.

#![warn(missing_docs)]

pub mod api;
pub mod auth;
pub mod cli;
mod clock;
pub mod edge;
mod error_chain;
pub mod flaw;
pub mod fleet;
pub mod idempotency;
pub mod injection;
pub mod listener;
pub mod metrics;
pub mod server;
pub mod state;
pub mod store;
pub mod sweeper;
#[cfg(feature = "testing")]
pub mod testing;
