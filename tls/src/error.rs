//! What can go wrong building a TLS config or a certificate.

use std::path::PathBuf;

/// A TLS configuration that could not be built. Messages read after "failed to" and name the
/// file concerned; none carries key material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read. The cause is in the message and not a
    /// `source()`, so an error chain (anyhow's `{:#}`) says it once.
    #[error("read {path}: {cause}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// A certificate or key file is larger than [`crate::MAX_PEM_BYTES`].
    #[error(
        "read {path}: it is larger than {} MiB, the most idemspec reads as a PEM file (a \
         certificate chain is kilobytes, a CA bundle at most a few megabytes)",
        crate::MAX_PEM_BYTES >> 20
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A client or server identity whose certificate chain and key do not go together: the
    /// key belongs to no certificate of the chain, or to one that is not first, or the first
    /// certificate is one rustls cannot use (X.509 v1). The message says what to do.
    #[error("use {cert_file} with the key {key_file}: {problem}")]
    Identity {
        /// The certificate chain's file, as named to the user.
        cert_file: String,
        /// The key's file, as named to the user.
        key_file: String,
        /// What is wrong, and what to do ([`crate::identity_problem`]).
        problem: String,
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
    /// A throwaway certificate or key could not be written (the cause in the message, as for
    /// [`TlsError::Read`]).
    #[error("write {path}: {cause}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
}

impl From<rustls::Error> for TlsError {
    fn from(err: rustls::Error) -> Self {
        TlsError::Config(err.to_string())
    }
}
