//! What a server shows and whom it asks for a certificate: [`server_config`].

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::{pem, TlsError};

/// A server config from PEM files: `cert` the chain (leaf first), `key` its private key.
/// With `client_ca`, client certificates are verified against its PEM certificates: required
/// when `client_cert_required`, else optional (a client without one is served). ALPN
/// `http/1.1`; TLS 1.2 and 1.3; ring.
///
/// # Errors
/// A file unreadable or without what it should hold; a key that does not fit its certificate
/// ([`TlsError::Identity`]).
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
    client_cert_required: bool,
) -> Result<Arc<ServerConfig>, TlsError> {
    let identity = crate::IdentityFiles {
        cert_file: cert.to_path_buf(),
        key_file: key.to_path_buf(),
    };
    let (chain, key) = identity.load()?;
    let client_ca = client_ca.map(pem::certificates_file).transpose()?;
    build(chain, key, client_ca, client_cert_required)
}

/// [`server_config`] from PEM texts (a [`crate::ThrowawayCa`]'s, say) instead of files.
///
/// # Errors
/// As [`server_config`], the texts named "the certificate", "the key", "the client CA".
pub fn server_config_pem(
    cert_pem: &str,
    key_pem: &str,
    client_ca_pem: Option<&str>,
    client_cert_required: bool,
) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = pem::certificates(cert_pem.as_bytes(), "the certificate")?;
    let key = pem::private_key(key_pem.as_bytes(), "the key")?;
    let (chain, key) = crate::identity::checked(chain, key, &"the certificate", &"the key")?;
    let client_ca = client_ca_pem
        .map(|ca| pem::certificates(ca.as_bytes(), "the client CA"))
        .transpose()?;
    build(chain, key, client_ca, client_cert_required)
}

fn build(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_ca: Option<Vec<CertificateDer<'static>>>,
    client_cert_required: bool,
) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = crate::provider();
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(cas) => {
            let mut roots = RootCertStore::empty();
            for ca in cas {
                roots.add(ca)?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if client_cert_required {
                verifier
            } else {
                verifier.allow_unauthenticated()
            };
            let verifier = verifier
                .build()
                .map_err(|err| TlsError::Config(format!("verify client certificates: {err}")))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key)?;
    config.alpn_protocols = crate::alpn();
    Ok(Arc::new(config))
}
