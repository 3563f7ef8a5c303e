//! How to start the bundled reference server.

use std::path::PathBuf;
use std::time::Duration;

/// How to start the bundled reference server.
#[derive(Debug, Clone)]
pub struct ReferenceOptions {
    /// The program to execute; `None` means `std::env::current_exe()` (the `idemspec` binary).
    /// Tests pass `env!("CARGO_BIN_EXE_idemspec")`.
    pub program: Option<PathBuf>,
    /// Arguments before leasebroker's own flags (default `["__leasebroker"]`, the hidden subcommand
    /// that calls `leasebroker::cli::run`).
    pub subcommand: Vec<String>,
    /// `--flaw NAME` flags, to show what a broken server looks like.
    pub flaws: Vec<String>,
    /// A PostgreSQL URL; `None` uses an SQLite file in a temporary directory.
    pub database_url: Option<String>,
    /// The in-flight TTL given to leasebroker (and declared in its profile); default 2 s, the
    /// shortest that still proves each rule with room for a loaded machine: `stuck-in-flight` waits
    /// it out after a crash (its check takes about the TTL), `slow-handler-outlives-ttl`'s `slow`
    /// request takes the TTL plus 2 s (its retry, every 250 ms, must reclaim the key while that
    /// handler still runs; the check takes about twice the TTL plus 2 s, the run's longest), and no
    /// ordinary create (leasebroker's boot latency is 300 ms, so that a retry 100 ms after a create
    /// finds it in flight) comes near it. docs/BENCHMARKS.md has the run's wall time.
    pub in_flight_ttl: Duration,
    /// How the reference's creates answer: `201` once booted (`sync`, its profile
    /// `scenarios/targets/leasebroker.yaml`), or `202` with a long-running operation
    /// (`async`, `scenarios/targets/leasebroker-async.yaml`).
    pub creates: leasebroker::fleet::CreateMode,
    /// Send the child's log to this process's stderr (`-v`, or `IDEMSPEC_REFERENCE_LOG` set)
    /// instead of `leasebroker.log` in its temporary directory.
    pub show_log: bool,
    /// Serve over mutual TLS (`--tls`): a throwaway CA per run, leasebroker requiring a client
    /// certificate from it, and the profile's principals named by their certificates instead of
    /// bearer tokens (see `reference/tls.rs`).
    pub tls: bool,
}

impl Default for ReferenceOptions {
    fn default() -> Self {
        Self {
            program: None,
            subcommand: vec!["__leasebroker".into()],
            flaws: Vec::new(),
            database_url: None,
            in_flight_ttl: Duration::from_secs(2),
            creates: leasebroker::fleet::CreateMode::Sync,
            show_log: false,
            tls: false,
        }
    }
}
