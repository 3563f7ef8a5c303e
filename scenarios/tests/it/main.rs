//! The scenarios crate's integration tests: one binary, one module per concern.

mod function_length;
mod tls_profile;
