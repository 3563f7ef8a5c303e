//! `idemspec client --tls`: the command served over HTTPS. A throwaway CA made for the run
//! (rcgen, [`idemspec_tls::ThrowawayCa`]) issues one certificate for `127.0.0.1` and `localhost`;
//! every situation's proxy shows it on its port and speaks only TLS there (plain HTTP sent to it
//! is answered `400` and never proxied); the command is told to trust the CA through the
//! variables SDKs read ([`CA_VARIABLES`]). The CA's file lives in a temporary directory of the
//! run's own, removed when the [`TlsEdge`] is dropped at the run's end.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use idemspec_tls::rustls::ServerConfig;
use idemspec_tls::{LoopbackServer, TlsError};

use crate::model::TlsServed;

/// The environment variables that carry the CA's file to the command, each read by a family of
/// clients: `SSL_CERT_FILE` (OpenSSL's default paths, so Python's `ssl` default context, Ruby,
/// PHP; Go's `crypto/x509` on Linux; rustls-native-certs), `REQUESTS_CA_BUNDLE` (Python
/// requests, with `trust_env`, its default), `NODE_EXTRA_CA_CERTS` (Node.js, added to its bundled
/// roots), `AWS_CA_BUNDLE` (botocore, the AWS CLI, the Go SDK), `CURL_CA_BUNDLE` (the curl tool; requests
/// reads it after `REQUESTS_CA_BUNDLE`).
pub const CA_VARIABLES: [&str; 5] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "AWS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
];

/// The TLS every situation's proxy serves the command with, for one run: a
/// [`LoopbackServer`] (CA file in `idemspec-client-tls-XXXXXX`).
#[derive(Debug)]
pub struct TlsEdge {
    server: LoopbackServer,
}

impl TlsEdge {
    /// A new CA, its server certificate for `127.0.0.1` and `localhost`, and the CA's PEM written
    /// to `ca.pem` in a new temporary directory (`idemspec-client-tls-*`).
    ///
    /// # Errors
    /// [`TlsError`] when the certificates cannot be made or the file written.
    pub fn new() -> Result<Self, TlsError> {
        LoopbackServer::new("idemspec-client-tls-").map(|server| Self { server })
    }

    /// The server config each situation's proxy listens with.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.server.server_config()
    }

    /// The CA's certificate file (PEM), while the edge lives.
    pub fn ca_file(&self) -> &Path {
        self.server.ca_file()
    }

    /// The variables the command is given: each of [`CA_VARIABLES`] naming the CA's file.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        CA_VARIABLES
            .iter()
            .map(|var| (*var, self.ca_file().as_os_str().to_owned()))
            .collect()
    }

    /// What the report says of it.
    pub fn served(&self) -> TlsServed {
        TlsServed {
            url: "https://127.0.0.1".to_owned(),
            names: LoopbackServer::NAMES
                .iter()
                .map(|n| (*n).to_owned())
                .collect(),
            variables: CA_VARIABLES.iter().map(|v| (*v).to_owned()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_file_holds_the_ca_and_goes_with_the_edge() {
        let edge = TlsEdge::new().expect("an edge");
        let path = edge.ca_file().to_path_buf();
        let pem = std::fs::read_to_string(&path).expect("the CA file exists while the edge lives");
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        let env = edge.env();
        assert_eq!(env.len(), CA_VARIABLES.len());
        assert!(env.iter().all(|(_, value)| *value == path.as_os_str()));
        let dir = path.parent().expect("a directory").to_path_buf();
        drop(edge);
        assert!(!dir.exists(), "{} is removed with the edge", dir.display());
    }
}
