//! Test support (cargo feature `testing`), shared by leasebroker's tests, its examples and the
//! suite's tests: a throwaway PostgreSQL database per test ([`TestDatabase`]), leasebroker as a
//! child process that can be killed ([`ServerProcess`]), and the crash soak ([`soak`]), which kills
//! one mid-create again and again on one database.

mod database;
mod process;
pub mod soak;

pub use database::{pg_base_url, TestDatabase, DEFAULT_PG_URL, PG_URL_VAR};
pub use process::{ServerCommand, ServerProcess, SpawnError};
