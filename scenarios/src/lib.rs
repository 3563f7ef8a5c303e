//! # idemspec-scenarios
//!
//! The schema shared by the idemspec proxy and the conformance runner, and the loader that turns
//! YAML into validated types or located errors. It does no networking: text in, types or
//! [`LoadError`]s out.
//!
//! - [`load`]: the located YAML loader (`file:line:column: message` plus a snippet).
//! - [`rules`]: proxy rules (`Rule { match, fault }`), the fault verbs, and standalone proxy files.
//! - [`scenario`]: a check's scenario file (`id`, `level`, `steps`, `assert`, ...).
//! - [`profile`]: target profiles and contract presets.
//! - [`client_profile`]: client profiles, for judging an HTTP client's retries (`idemspec client`).
//! - [`catalogue`]: the built-in checks, embedded with `include_str!`.
#![warn(missing_docs)]

pub mod load;
pub mod rules;

pub use load::{from_yaml, LoadError};
pub mod catalogue;
pub mod client_profile;
pub mod profile;
pub mod scenario;
pub mod template;
pub mod value;

pub use scenario::Level;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod mutate;
