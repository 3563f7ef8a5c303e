//! TLS for every edge idemspec speaks on, in one place: the trust a client extends
//! ([`TrustOptions`]), the certificate it shows ([`IdentityFiles`]), the configs rustls is given
//! ([`client_config`], [`server_config`], [`server_config_pem`]), throwaway certificate
//! authorities for tests and `--tls` runs ([`ThrowawayCa`]), one handshake's facts for a report
//! ([`probe`], [`HandshakeFacts`]), and handshake failures told in words that say what to do
//! ([`explain`], [`explain_plain_answer`]). rustls on the ring provider; no OpenSSL.
//!
//! Every config speaks ALPN `http/1.1` only: idemspec's HTTP edges are HTTP/1.1.

mod cache;
mod error;
mod explain;
mod identity;
mod loopback;
mod pem;
mod probe;
mod server;
mod throwaway;
mod trust;

pub use cache::ConfigCache;
pub use error::TlsError;
pub use explain::{explain, explain_peer, explain_plain_answer, Advice};
pub use identity::{identity_problem, IdentityFiles};
pub use loopback::LoopbackServer;
pub use probe::{probe, HandshakeFacts, CONNECT_FAILED};
pub use server::{server_config, server_config_pem};
pub use throwaway::{write_identity, ThrowawayCa};
pub use trust::{client_config, TrustOptions};

/// The largest PEM file read (16 MiB), certificate, key or CA bundle. Debian's
/// `ca-certificates.crt` is about 220 KB and corporate bundles with every internal CA reach a
/// few MB; 16 MiB holds several times the largest of those while still refusing a file that is
/// no PEM bundle at all (a log, a disk image) before it is read into memory.
pub const MAX_PEM_BYTES: u64 = 16 << 20;

/// rustls itself, so callers name its types (`ClientConfig`, `ServerConfig`, `pki_types`) in the
/// version this crate builds with.
pub use rustls;
/// tokio-rustls, the async streams over a `ClientConfig` or `ServerConfig`.
pub use tokio_rustls;

/// The ALPN protocols every config of this crate offers: HTTP/1.1 only.
pub(crate) fn alpn() -> Vec<Vec<u8>> {
    vec![b"http/1.1".to_vec()]
}

/// The one crypto provider every config is built on: ring, the workspace's choice (no C toolchain
/// beyond ring's own). rustls 0.23.48 deprecates it for lacking post-quantum key exchange, which
/// aws-lc-rs would bring with a heavier build; X25519 and the NIST curves remain.
///
/// Key exchange groups in the order OpenSSL, browsers and rustls's aws-lc-rs provider use:
/// X25519, then P-256, then P-384. ring's own default leads with P-384, so a client sent its
/// key share for P-384 and every server took it; ring's P-384 is generic big-number code, and
/// it was 45% of the proxy's CPU time with a new upstream connection per request
/// (docs/BENCHMARKS.md, idemspec-proxy over TLS).
#[allow(deprecated)]
pub(crate) fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    use rustls::crypto::ring::{default_provider, kx_group};
    let mut provider = default_provider();
    provider.kx_groups = vec![kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1];
    std::sync::Arc::new(provider)
}
