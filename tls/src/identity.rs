//! The certificate a client shows (mutual TLS): a PEM chain and its private key, as files.

use std::path::PathBuf;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::{pem, TlsError};

/// A client (or server) identity on disk: `cert_file` holds the PEM certificate chain, leaf
/// first; `key_file` the PEM private key (PKCS#8 `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY` or SEC1
/// `EC PRIVATE KEY`). Read when a config is built, not before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityFiles {
    /// The PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// The PEM private key of the leaf.
    pub key_file: PathBuf,
}

impl IdentityFiles {
    /// Reads both files: the chain (at least one certificate) and the key.
    ///
    /// # Errors
    /// [`TlsError::Read`] naming a file that cannot be read, [`TlsError::NoCertificate`] or
    /// [`TlsError::BadKey`] naming a file without what it should hold.
    pub(crate) fn load(
        &self,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
        let chain = pem::certificates_file(&self.cert_file)?;
        let key = pem::private_key(
            &pem::read(&self.key_file)?,
            &self.key_file.display().to_string(),
        )?;
        Ok((chain, key))
    }
}
