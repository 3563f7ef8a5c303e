//! leasebroker as a child process that can really be killed (SIGKILL, an abort) and started again
//! on the same database: started with `--dev` and both listeners on 127.0.0.1:0, its addresses read
//! from the lines it prints once it listens.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a started server may take to print its addresses (PostgreSQL migrations included).
const START_LIMIT: Duration = Duration::from_secs(30);

/// How to start leasebroker: `program`, then `args`, then leasebroker's own flags.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    /// The executable: the `leasebroker` binary, or a program that runs leasebroker's CLI.
    pub program: PathBuf,
    /// Arguments before leasebroker's flags (empty for the binary).
    pub args: Vec<String>,
}

impl ServerCommand {
    /// The `leasebroker` binary at `path` (in a test: `env!("CARGO_BIN_EXE_leasebroker")`).
    pub fn binary(path: impl Into<PathBuf>) -> Self {
        Self {
            program: path.into(),
            args: Vec::new(),
        }
    }
}

/// Why a server process did not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program could not be run.
    #[error("run {program}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// It ran but did not print its addresses in time (it exited, printed something else, or hung).
    #[error("read the addresses it listens on: {0}")]
    Addresses(String),
}

/// A running leasebroker process. Dropping it kills the process.
#[derive(Debug)]
pub struct ServerProcess {
    /// The process (kill it with [`Child::kill`], or [`Child::start_kill`] for SIGKILL without waiting).
    pub child: Child,
    /// `http://ADDR` of the public listener.
    pub base: String,
    /// `http://ADDR` of the admin listener.
    pub admin: String,
}

impl ServerProcess {
    /// Starts `command` on `database_url` with `flags` (after `--dev`, the listeners and
    /// `--database-url`); logs only errors, on this process's stderr.
    pub async fn start(
        command: &ServerCommand,
        database_url: &str,
        flags: &[String],
    ) -> Result<Self, SpawnError> {
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .args(["--dev", "--listen", "127.0.0.1:0"])
            .args(["--admin-listen", "127.0.0.1:0"])
            .args(["--database-url", database_url])
            .args(flags)
            .env("RUST_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SpawnError::Spawn {
                program: command.program.display().to_string(),
                source,
            })?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| SpawnError::Addresses("no stdout".into()))?;
        let mut lines = BufReader::new(stdout).lines();
        let mut addr = async |prefix: &str| -> Result<String, SpawnError> {
            let line = tokio::time::timeout(START_LIMIT, lines.next_line())
                .await
                .map_err(|_| SpawnError::Addresses(format!("nothing within {START_LIMIT:?}")))?
                .map_err(|err| SpawnError::Addresses(err.to_string()))?
                .ok_or_else(|| SpawnError::Addresses("it exited before listening".into()))?;
            line.strip_prefix(prefix)
                .map(str::to_owned)
                .ok_or_else(|| SpawnError::Addresses(format!("unexpected line {line:?}")))
        };
        let base = addr("leasebroker listening on ").await?;
        let admin = addr("leasebroker admin listening on ").await?;
        Ok(Self { child, base, admin })
    }
}
