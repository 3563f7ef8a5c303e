//! Helpers shared by the integration tests.

pub mod alt_api;
pub mod sample;
pub mod reference;
pub mod postgres;
