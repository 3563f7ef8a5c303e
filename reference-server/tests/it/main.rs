//! leasebroker's integration tests: real servers on 127.0.0.1:0 over real HTTP, on file-backed SQLite
//! and on PostgreSQL (`IDEMSPEC_TEST_PG_URL`).

mod async_creates;
mod bad_input;
mod behaviour;
mod concurrency;
mod config;
mod crash;
mod flaws;
mod generated;
mod hostile;
mod metrics;
mod migrations;
mod replicas;
mod soak;
mod support;
mod tls;
mod wire;
