//! Proxy rules: what the idemspec proxy matches and which fault it injects.
//!
//! One schema serves three readers: a scenario's `faults:` list (a `Vec<Rule>`), a standalone
//! proxy file ([`ProxyFile`]) and the proxy's control API (the same shapes as JSON).
//!
//! - [`Rule`]: `{ name, match, fault, times }`, evaluated in order, first match wins.
//! - [`Match`]: method, path (exact, prefix or glob), a header, the Idempotency-Key, the nth
//!   matching request, a probability with an explicit seed.
//! - [`Fault`]: one variant per verb of `docs/writing-scenarios.md`, "Faults" (`refuse`, `respond`,
//!   `delay_request`, `delay_response`, `drop_response`, `reset_mid_response`, `hang`, `duplicate`).
//! - [`TcpRule`] / [`TcpFault`]: the byte-level subset for TCP mode.
//! - [`ProxyFile`]: `version: 1`, `listen`, `upstream`, `mode`, `rules` / `tcp_rules`.
//!
//! Values that are wrong on their own (`nth: 0`, `probability: 1.5`, a bad glob, `250 ms`, an
//! empty rule name, `status: 101`, a content type that is no media type) are rejected while
//! parsing, so the error points at the value. Cross-field problems (a probability
//! without a seed, two path matchers) are rejected when the enclosing mapping is converted from
//! its raw form, and the error points at that mapping; two rules of one list with the same name are
//! rejected where the list is loaded ([`ProxyFile`]; [`duplicate_name`] for other lists). Either
//! way a [`crate::LoadError`] names file, line and column, and the control API's JSON gets the same
//! checks. [`Rule::check`] and [`TcpRule::check`] apply them to rules built in code.

mod file;
mod http;
mod tcp;
mod values;
pub(crate) use values::duplicate_message;

pub use file::{check_upstream, ListenTlsFile, Mode, ProxyFile, UpstreamTlsFile};
pub use http::{DuplicateMode, Fault, HeaderMatch, Match, Rule};
pub use tcp::{Direction, TcpFault, TcpMatch, TcpRule};
pub use values::{
    duplicate_name, Count, HttpMethod, Probability, ResponseHeaders, Status, CONNECTION_HEADERS,
};

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
