//! PEM certificates and keys, from a file or a text, with errors that name where they came from.

use std::io::Read as _;
use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::TlsError;

/// Reads a regular file whole, at most [`crate::MAX_PEM_BYTES`], the error naming it.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    let failed = |cause| TlsError::Read {
        path: path.to_path_buf(),
        cause,
    };
    // Opening a FIFO blocks until a writer comes, and a device never ends: a regular file only.
    if !std::fs::metadata(path).map_err(failed)?.is_file() {
        return Err(failed(std::io::Error::other(
            "it is not a regular file (a directory, a FIFO or a device)",
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(crate::MAX_PEM_BYTES + 1).read_to_end(&mut bytes))
        .map_err(failed)?;
    if bytes.len() as u64 > crate::MAX_PEM_BYTES {
        return Err(TlsError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// Every `CERTIFICATE` block of `pem`, in order; at least one. `what` names the source.
pub(crate) fn certificates(
    pem: &[u8],
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            what: what.to_string(),
        });
    }
    Ok(certs)
}

/// The first private key of `pem` (PKCS#8, PKCS#1 RSA or SEC1). `what` names the source.
pub(crate) fn private_key(pem: &[u8], what: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|err| TlsError::BadKey {
        what: what.to_string(),
        reason: match err {
            rustls::pki_types::pem::Error::NoItemsFound => "it holds no private key".to_string(),
            other => other.to_string(),
        },
    })
}

/// The certificates of the PEM file at `path`.
pub(crate) fn certificates_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    certificates(&read(path)?, &path.display().to_string())
}
