//! The bundled reference server (leasebroker) as a child process that can really be killed and
//! restarted on the same database.

/// Why the reference server could not be started or restarted.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// Spawning the child failed.
    #[error("spawn `{program}`")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The child did not print its listening lines in time.
    #[error("wait for the reference server to listen: {0}")]
    NotListening(String),
    /// Preparing the temporary directory or tokens file failed.
    #[error("prepare the reference server's files")]
    Files(#[source] std::io::Error),
}
