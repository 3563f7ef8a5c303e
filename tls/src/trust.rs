//! What a client trusts and shows: [`TrustOptions`] and [`client_config`].

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::{pem, IdentityFiles, TlsError};

/// The trust a client extends to the servers it reaches.
///
/// Trusted: the platform's roots (rustls-native-certs: `SSL_CERT_FILE`, `SSL_CERT_DIR` or the
/// system store) plus every PEM certificate of `ca_file`. `insecure_skip_verify` accepts any
/// certificate of any name (the handshake's signatures are still checked); callers say so
/// loudly. `server_name` replaces the URL's host as the name checked and sent as SNI, for a
/// connection to one of `server_name_hosts` (every host when that is empty); a connection to any
/// other host (a token endpoint, a hook) is checked for its own name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TrustOptions {
    /// A PEM file of CA certificates trusted besides the platform's roots.
    pub ca_file: Option<PathBuf>,
    /// The name the server's certificate must carry (and SNI), instead of the URL's host.
    pub server_name: Option<String>,
    /// The URL hosts `server_name` applies to (any case; an IPv6 address with or without its
    /// brackets): a profile's base URLs' hosts. Empty: every host (the proxy's one upstream).
    pub server_name_hosts: Vec<String>,
    /// Accept any server certificate: no chain, name or validity check.
    pub insecure_skip_verify: bool,
}

impl TrustOptions {
    /// The name to check and send for a connection to `host` (a URL's host, IPv6 in brackets or
    /// not): `server_name` when set and it applies to `host`, else `host`.
    ///
    /// # Errors
    /// [`TlsError::ServerName`] when the name is neither a DNS name nor an IP address.
    pub fn server_name_for(&self, host: &str) -> Result<ServerName<'static>, TlsError> {
        let name = match &self.server_name {
            Some(name) if self.applies_to(host) => name.as_str(),
            _ => host,
        };
        ServerName::try_from(bare(name).to_string()).map_err(|_| TlsError::ServerName {
            name: name.to_string(),
        })
    }

    /// Whether `server_name` applies to a connection to `host` (see
    /// [`TrustOptions::server_name_hosts`]).
    pub fn applies_to(&self, host: &str) -> bool {
        self.server_name_hosts.is_empty()
            || self
                .server_name_hosts
                .iter()
                .any(|h| bare(h).eq_ignore_ascii_case(bare(host)))
    }
}

/// A host without the brackets of an IPv6 literal.
fn bare(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// A client config: `trust` as above, `identity` shown when a server asks for a client
/// certificate (none: the client shows none). ALPN `http/1.1`; TLS 1.2 and 1.3; ring.
///
/// # Errors
/// The CA file or identity files unreadable or without what they should hold; a key that does
/// not fit its certificate.
pub fn client_config(
    trust: &TrustOptions,
    identity: Option<&IdentityFiles>,
) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = crate::provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match (trust.insecure_skip_verify, &trust.server_name) {
        (false, None) => builder.with_root_certificates(roots(trust)?),
        (true, _) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Verifier {
                provider,
                webpki: None,
            })),
        (false, Some(name)) => {
            let name = trust.server_name_for(name)?;
            let webpki = WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(trust)?),
                provider.clone(),
            )
            .build()
            .map_err(|err| TlsError::Config(format!("build the certificate verifier: {err}")))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Verifier {
                    provider,
                    webpki: Some(Named {
                        webpki,
                        name,
                        trust: trust.clone(),
                    }),
                }))
        }
    };
    let mut config = match identity {
        Some(files) => {
            let (chain, key) = files.load()?;
            builder.with_client_auth_cert(chain, key)?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = crate::alpn();
    Ok(Arc::new(config))
}

/// The platform's roots plus `ca_file`'s certificates.
fn roots(trust: &TrustOptions) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    store.add_parsable_certificates(platform_roots().iter().cloned());
    if let Some(path) = &trust.ca_file {
        for cert in pem::certificates_file(path)? {
            store.add(cert).map_err(|err| {
                TlsError::Config(format!("trust a certificate of {}: {err}", path.display()))
            })?;
        }
    }
    Ok(store)
}

/// The platform's roots, read once per process; unreadable ones are left out.
fn platform_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

/// The two checks other than rustls's own: `server_name` (`webpki` with that name: the certificate
/// is verified as usual, chain and validity, but for the configured name when the connection was
/// opened to a host it applies to, so a client that sets SNI from its URL, as reqwest does, still
/// checks the profile's name; a connection to another host is checked for its own) and
/// `insecure_skip_verify` (`webpki: None`: every certificate is accepted). Handshake signatures
/// are verified with the provider's algorithms either way, so the peer holds the key it presented.
#[derive(Debug)]
struct Verifier {
    provider: Arc<CryptoProvider>,
    webpki: Option<Named>,
}

/// A configured `server_name` and where it applies.
#[derive(Debug)]
struct Named {
    webpki: Arc<WebPkiServerVerifier>,
    /// `trust.server_name`, parsed.
    name: ServerName<'static>,
    /// Which hosts it applies to ([`TrustOptions::applies_to`]).
    trust: TrustOptions,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(named) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        let name = match named.trust.applies_to(&server_name.to_str()) {
            true => &named.name,
            false => server_name,
        };
        named
            .webpki
            .verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
