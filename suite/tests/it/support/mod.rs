//! Helpers shared by the integration tests.

pub mod sample;
pub mod reference;
pub mod postgres;
