//! The bundled reference server (leasebroker) as a child process that can really be killed
//! (SIGKILL, or its own abort mid-request) and restarted on the same address and database.
//!
//! The child is `<idemspec> __leasebroker --listen 127.0.0.1:PORT --admin-listen 127.0.0.1:PORT
//! --database-url … --tokens FILE --in-flight-ttl … [--flaw …]` (with `--tls`, `--tls-cert …
//! --tls-client-ca … --tls-require-client-cert` instead of `--tokens`: `tls.rs`); its addresses are
//! read from the `leasebroker listening on http(s)://ADDR` and `leasebroker admin listening on
//! http://ADDR` lines.

mod hooks;
mod options;
mod process;
mod tls;

pub use hooks::ReferenceHooks;
pub use options::ReferenceOptions;
pub use process::ReferenceServer;

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
    /// Making or writing the throwaway certificates of `--tls` failed.
    #[error("make the reference server's throwaway certificates")]
    Certificates(#[source] idemspec_tls::TlsError),
}
