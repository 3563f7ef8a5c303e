//! A server identity for the loopback, made for one run: `idemspec proxy --tls-self-signed` and
//! `idemspec client --tls` serve with it, and hand clients the CA's file to trust.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;

use crate::{ThrowawayCa, TlsError};

/// A [`ThrowawayCa`], the server config of its certificate for [`LoopbackServer::NAMES`], and the
/// CA's certificate written to `ca.pem` in a temporary directory of its own (`PREFIX-XXXXXX` under
/// `$TMPDIR`, else `/tmp`), removed with everything in it when this is dropped, so runs leave no
/// files behind (a process killed with SIGKILL cannot remove it).
pub struct LoopbackServer {
    config: Arc<ServerConfig>,
    ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for LoopbackServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackServer")
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl LoopbackServer {
    /// The names the server certificate holds (the subject `CN` the first): what a URL on the
    /// loopback may name.
    pub const NAMES: [&'static str; 2] = ["127.0.0.1", "localhost"];

    /// A new CA and its server certificate, the CA's PEM in a new directory named `prefix` and
    /// six random characters.
    ///
    /// # Errors
    /// [`TlsError`] when the certificates cannot be made or the directory or file written.
    pub fn new(prefix: &str) -> Result<Self, TlsError> {
        let ca = ThrowawayCa::new()?;
        let (cert, key) = ca.server_cert(&Self::NAMES)?;
        let config = crate::server_config_pem(&cert, &key, None, false)?;
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map_err(|cause| TlsError::Write {
                path: std::env::temp_dir(),
                cause,
            })?;
        let ca_file = ca.write_ca(dir.path())?;
        Ok(Self {
            config,
            ca_file,
            _dir: dir,
        })
    }

    /// The server config to listen with.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.config.clone()
    }

    /// The CA's certificate file (PEM), for clients to trust, while this lives.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }
}
