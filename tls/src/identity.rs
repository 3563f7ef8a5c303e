//! The certificate a client shows (mutual TLS): a PEM chain and its private key, as files, and
//! whether the two go together ([`identity_problem`]).

use std::path::PathBuf;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::{pem, TlsError};

/// A client (or server) identity on disk: `cert_file` holds the PEM certificate chain, leaf
/// first; `key_file` the PEM private key (PKCS#8 `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY` or SEC1
/// `EC PRIVATE KEY`). Read when a config is built, not before.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdentityFiles {
    /// The PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// The PEM private key of the leaf.
    pub key_file: PathBuf,
}

impl IdentityFiles {
    /// Reads both files: the chain (at least one certificate) and the key, and checks that they
    /// go together ([`identity_problem`]).
    ///
    /// # Errors
    /// [`TlsError::Read`] or [`TlsError::TooLarge`] naming a file that cannot be read,
    /// [`TlsError::NoCertificate`] or [`TlsError::BadKey`] naming a file without what it should
    /// hold, [`TlsError::Identity`] when the key and the chain do not go together.
    pub(crate) fn load(
        &self,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
        let chain = pem::certificates_file(&self.cert_file)?;
        let key = pem::private_key(
            &pem::read(&self.key_file)?,
            &self.key_file.display().to_string(),
        )?;
        checked(
            chain,
            key,
            &self.cert_file.display(),
            &self.key_file.display(),
        )
    }
}

/// `(chain, key)` when they go together, else [`TlsError::Identity`] naming `cert_file` and
/// `key_file` as given.
pub(crate) fn checked(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    cert_file: &dyn std::fmt::Display,
    key_file: &dyn std::fmt::Display,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    match identity_problem(&chain, &key) {
        None => Ok((chain, key)),
        Some(problem) => Err(TlsError::Identity {
            cert_file: cert_file.to_string(),
            key_file: key_file.to_string(),
            problem,
        }),
    }
}

/// Why `chain` (leaf first, as TLS sends it) and `key` cannot be one identity, in words that
/// say what to do; `None` when they can. Told: a first certificate rustls cannot use (X.509 v1,
/// or not DER it reads), a key that belongs to a later certificate of the chain (the chain is
/// out of order), a key that belongs to none. The key's public half is compared with each
/// certificate's (rustls's own `keys_match` comparison, over the whole chain); a key the crypto
/// provider does not load, or whose public half it does not give, is left to rustls.
pub fn identity_problem(chain: &[CertificateDer<'_>], key: &PrivateKeyDer<'_>) -> Option<String> {
    let leaf = chain.first()?;
    if let Err(err) = webpki::EndEntityCert::try_from(leaf) {
        return Some(match err {
            webpki::Error::UnsupportedCertVersion => "its first certificate is an X.509 v1 \
                certificate, which TLS libraries refuse: reissue it as v3 (with openssl, give \
                `x509 -req` an `-extfile` or `-extensions`, e.g. a subjectAltName)"
                .into(),
            other => format!(
                "its first certificate cannot be read as a TLS certificate ({other:?}): give \
                 the PEM certificate issued for this key first"
            ),
        });
    }
    let signing = crate::provider()
        .key_provider
        .load_private_key(key.clone_key())
        .ok()?;
    let public = signing.public_key()?;
    let holder = chain.iter().position(|cert| {
        webpki::EndEntityCert::try_from(cert)
            .is_ok_and(|parsed| parsed.subject_public_key_info() == public)
    });
    match holder {
        Some(0) => None,
        Some(at) => Some(format!(
            "the key belongs to certificate {} of {} in the chain, not to the first: put the \
             certificate issued for this key first, then its issuers (leaf first, as TLS sends \
             them)",
            at + 1,
            chain.len()
        )),
        None => Some(
            "the key does not belong to the first certificate (nor to any in the chain): give \
             the key file that was made with this certificate, or the certificate issued for \
             this key"
                .into(),
        ),
    }
}
