//! One handshake with a server and what it showed: the facts a report states about a target
//! reached over TLS, or the failure in words.

use std::sync::Arc;
use std::time::Duration;

use rustls::{ClientConfig, CommonState, ProtocolVersion};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How long [`probe`] waits for the connection, the handshake and the first answer bytes.
const PROBE_BOUND: Duration = Duration::from_secs(10);

/// What one handshake showed: `version` as "TLS 1.3" or "TLS 1.2"; the server certificate's
/// `subject` and `issuer` as RFC 4514-style text ("CN=leasebroker"), empty when it showed none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeFacts {
    /// The negotiated protocol version, "TLS 1.3" or "TLS 1.2".
    pub version: String,
    /// The leaf certificate's subject.
    pub subject: String,
    /// The leaf certificate's issuer.
    pub issuer: String,
}

impl HandshakeFacts {
    /// The facts of a finished handshake (a client's or a server's connection state; on a
    /// server it is the client's certificate that is described).
    pub fn of(state: &CommonState) -> Self {
        let version = match state.protocol_version() {
            Some(ProtocolVersion::TLSv1_3) => "TLS 1.3".to_string(),
            Some(ProtocolVersion::TLSv1_2) => "TLS 1.2".to_string(),
            Some(other) => format!("{other:?}"),
            None => "unknown".to_string(),
        };
        let leaf = state.peer_certificates().and_then(|certs| certs.first());
        let parsed = leaf.and_then(|der| x509_parser::parse_x509_certificate(der).ok());
        let (subject, issuer) = parsed
            .map(|(_, cert)| (cert.subject().to_string(), cert.issuer().to_string()))
            .unwrap_or_default();
        Self {
            version,
            subject,
            issuer,
        }
    }
}

/// How a [`probe`] failure that never reached TLS starts: no TCP connection could be made.
pub const CONNECT_FAILED: &str = "connect to ";

/// One TLS connection to `authority` ("host:port"), checked as `server_name`, with `config`;
/// a `HEAD /` request is sent and the answer's first bytes read, so that a refusal the server
/// sends after the handshake (TLS 1.3's "certificate required") is seen. Bounded by 10 s.
///
/// # Errors
/// The failure in words: [`crate::explain`]'s when it is a TLS failure; `connect to AUTHORITY:
/// ERROR` when no TCP connection could be made (nothing listens: no TLS cause, see
/// [`CONNECT_FAILED`]); else the connection's error with the authority.
pub async fn probe(
    authority: &str,
    config: &Arc<ClientConfig>,
    server_name: &str,
) -> Result<HandshakeFacts, String> {
    match tokio::time::timeout(PROBE_BOUND, handshake(authority, config, server_name)).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "no TLS handshake with {authority} within {} s: does the port speak TLS, or does a \
             proxy or firewall hold the connection?",
            PROBE_BOUND.as_secs()
        )),
    }
}

async fn handshake(
    authority: &str,
    config: &Arc<ClientConfig>,
    server_name: &str,
) -> Result<HandshakeFacts, String> {
    let name = rustls::pki_types::ServerName::try_from(server_name.to_string())
        .map_err(|_| format!("{server_name:?} is neither a DNS name nor an IP address"))?;
    let tcp = TcpStream::connect(authority)
        .await
        .map_err(|err| format!("{CONNECT_FAILED}{authority}: {err}"))?;
    let mut tls = TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .map_err(|err| words(&err, authority))?;
    let facts = HandshakeFacts::of(tls.get_ref().1);
    let request = format!("HEAD / HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes())
        .await
        .map_err(|err| words(&err, authority))?;
    let mut first = [0u8; 64];
    tls.read(&mut first)
        .await
        .map_err(|err| words(&err, authority))?;
    Ok(facts)
}

fn words(err: &std::io::Error, authority: &str) -> String {
    crate::explain(err).unwrap_or_else(|| format!("TLS with {authority}: {err}"))
}
