//! Helpers shared by the integration tests.

pub mod alt_api;
pub mod hostile;
pub mod postgres;
pub mod redact;
pub mod reference;
pub mod sample;
pub mod tls_edge;
