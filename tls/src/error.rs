//! What can go wrong building a TLS config or a certificate.

use std::path::PathBuf;

/// A TLS configuration that could not be built. Messages read after "failed to" and name the
/// file concerned; none carries key material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read.
    #[error("read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A PEM text held no `CERTIFICATE` block.
    #[error("find a PEM certificate in {what}: it has no `-----BEGIN CERTIFICATE-----` block")]
    NoCertificate {
        /// The file or text, as named to the user.
        what: String,
    },
    /// A PEM text held no private key (PKCS#8, RSA or SEC1) or one that could not be parsed.
    #[error("read a private key from {what}: {reason} (expected a PEM `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY` block)")]
    BadKey {
        /// The file or text, as named to the user.
        what: String,
        /// What was wrong.
        reason: String,
    },
    /// A name to check the server's certificate against is not a DNS name or an IP address.
    #[error("use {name:?} as a TLS server name: it is neither a DNS name nor an IP address")]
    ServerName {
        /// The name as given.
        name: String,
    },
    /// rustls refused the configuration (a key that does not match its certificate, a CA that
    /// is not a certificate authority, ...).
    #[error("build the TLS configuration: {0}")]
    Config(String),
    /// rcgen could not make a throwaway certificate.
    #[error("generate a throwaway certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// A throwaway certificate or key could not be written.
    #[error("write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl From<rustls::Error> for TlsError {
    fn from(err: rustls::Error) -> Self {
        TlsError::Config(err.to_string())
    }
}
