//! Handshake failures in words: what went wrong and what to do, for any error chain that holds a
//! rustls error (an `io::Error` from tokio-rustls, hyper's, reqwest's).

use std::error::Error;
use std::io;

use rustls::pki_types::UnixTime;
use rustls::{AlertDescription, CertificateError, InvalidMessage};

/// Where the user sets what an explanation tells them to set: a target profile's `tls` fields
/// (`idemspec run`, `idemspec validate`), or `idemspec proxy`'s flags and its proxy file's
/// `upstream_tls` (the standalone proxy, which has no profile).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Advice {
    /// The target profile's `tls.ca_file`, `tls.server_name` and `principals[].tls`.
    #[default]
    Profile,
    /// `idemspec proxy --tls-ca-file`, `--tls-server-name`, `--tls-client-cert`/`--tls-client-key`.
    ProxyFlags,
}

impl Advice {
    /// The setting that trusts another CA.
    fn ca_file(self) -> &'static str {
        match self {
            Advice::Profile => "set `tls.ca_file` (`--tls-ca-file`)",
            Advice::ProxyFlags => "pass `--tls-ca-file` (the proxy file's `upstream_tls.ca_file`)",
        }
    }

    /// The setting that checks another name.
    fn server_name(self) -> &'static str {
        match self {
            Advice::Profile => "set `tls.server_name` (`--tls-server-name`)",
            Advice::ProxyFlags => {
                "pass `--tls-server-name` (the proxy file's `upstream_tls.server_name`)"
            }
        }
    }

    /// The setting that presents a client certificate.
    fn client_cert(self) -> &'static str {
        match self {
            Advice::Profile => "give the principal `tls: {cert_file, key_file}`",
            Advice::ProxyFlags => {
                "pass `--tls-client-cert` and `--tls-client-key` (the proxy file's \
                 `upstream_tls.client_cert` and `client_key`)"
            }
        }
    }
}

/// The cause of a TLS failure somewhere in `err`'s chain, in words that say what to do, the peer
/// called "the server"; `None` when the chain holds no TLS failure.
pub fn explain(err: &(dyn Error + 'static)) -> Option<String> {
    explain_peer(err, "the server", Advice::Profile)
}

/// [`explain`] with the peer named as given ("the upstream", "the target") and the settings
/// advised where `advice` says the user sets them.
pub fn explain_peer(err: &(dyn Error + 'static), peer: &str, advice: Advice) -> Option<String> {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(rustls_error(tls, peer, advice));
        }
        if let Some(io) = err.downcast_ref::<io::Error>() {
            if let Some(inner) = io.get_ref() {
                if let Some(words) = explain_peer(inner, peer, advice) {
                    return Some(words);
                }
            }
            if is_handshake_eof(io) {
                return Some(format!(
                    "{peer} closed the connection during the TLS handshake: the port may not speak \
                     TLS (check the URL's scheme and port) or {peer} refused this client's hello"
                ));
            }
        }
        next = err.source();
    }
    None
}

/// What a plain-HTTP request's answer says when it reached a TLS port: the 400 that nginx, Go,
/// Apache and others send ("The plain HTTP request was sent to HTTPS port", "Client sent an HTTP
/// request to an HTTPS server", ...), or a TLS alert record. `answer` is the answer's first
/// bytes (head and some body); `None` when it is an ordinary answer.
pub fn explain_plain_answer(answer: &[u8]) -> Option<String> {
    const SAYINGS: [&str; 4] = [
        "plain http request was sent to https port",
        "client sent an http request to an https server",
        "speaking plain http to an ssl-enabled server port",
        "http request to an https server",
    ];
    let tls_alert = answer.len() >= 3 && answer[0] == 0x15 && answer[1] == 0x03;
    let text = String::from_utf8_lossy(&answer[..answer.len().min(4096)]).to_ascii_lowercase();
    let said = SAYINGS.iter().any(|saying| text.contains(saying));
    (tls_alert || said)
        .then(|| "plain HTTP was sent to a port that speaks TLS: use an https:// URL".to_string())
}

fn is_handshake_eof(io: &io::Error) -> bool {
    io.kind() == io::ErrorKind::UnexpectedEof && io.to_string().contains("handshake")
}

fn rustls_error(err: &rustls::Error, peer: &str, advice: Advice) -> String {
    match err {
        rustls::Error::InvalidCertificate(cert) => certificate_error(cert, peer, advice),
        rustls::Error::AlertReceived(alert) => alert_received(*alert, peer, advice),
        rustls::Error::NoCertificatesPresented => {
            format!("{peer} presented no certificate: check that the URL names a TLS server")
        }
        rustls::Error::InvalidMessage(InvalidMessage::InvalidContentType) => {
            format!(
                "{peer}'s port speaks plain HTTP, not TLS: use an http:// URL (or the TLS port)"
            )
        }
        rustls::Error::PeerIncompatible(why) => format!(
            "{peer} shares no TLS version or cipher suite with this client ({why:?}): \
             idemspec speaks TLS 1.2 and 1.3"
        ),
        other => format!("the TLS handshake with {peer} failed: {other}"),
    }
}

fn certificate_error(err: &CertificateError, peer: &str, advice: Advice) -> String {
    match err {
        CertificateError::UnknownIssuer => format!(
            "{peer}'s certificate was issued by an authority this client does not trust \
             (unknown issuer): {} to the PEM certificate of the CA that issued it",
            advice.ca_file()
        ),
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "{peer}'s certificate is not valid for the name `{}` (name mismatch): it names {}; \
             reach it by one of those names or {}",
            expected.to_str(),
            presented_names(presented),
            advice.server_name()
        ),
        CertificateError::NotValidForName => format!(
            "{peer}'s certificate is not valid for the name it was reached by (name mismatch): \
             reach it by a name the certificate carries or {}",
            advice.server_name()
        ),
        CertificateError::ExpiredContext { time, not_after } => format!(
            "{peer}'s certificate expired at {} (it is now {}): renew it",
            rfc3339(*not_after),
            rfc3339(*time)
        ),
        CertificateError::Expired => format!("{peer}'s certificate has expired: renew it"),
        CertificateError::NotValidYetContext { time, not_before } => format!(
            "{peer}'s certificate is not valid before {} (it is now {}): check the clocks",
            rfc3339(*not_before),
            rfc3339(*time)
        ),
        CertificateError::NotValidYet => {
            format!("{peer}'s certificate is not valid yet: check the clocks")
        }
        CertificateError::BadSignature => format!(
            "{peer}'s certificate names a trusted CA as its issuer but was not signed by it (bad \
             signature): the trusted CA file holds another CA of the same name; give the one \
             that issued it"
        ),
        other => format!("{peer}'s certificate was refused: {other:?}"),
    }
}

fn alert_received(alert: AlertDescription, peer: &str, advice: Advice) -> String {
    use AlertDescription as A;
    match alert {
        A::CertificateRequired => format!(
            "{peer} demanded a client certificate and none was sent: {}",
            advice.client_cert()
        ),
        A::BadCertificate
        | A::UnsupportedCertificate
        | A::CertificateRevoked
        | A::CertificateExpired
        | A::CertificateUnknown
        | A::UnknownCA
        | A::AccessDenied
        | A::DecryptError => format!(
            "{peer} refused this client's certificate (TLS alert {alert:?}): check that it was \
             issued by a CA {peer} trusts and is still valid"
        ),
        A::HandshakeFailure => format!(
            "{peer} ended the TLS handshake (handshake_failure): it may demand a client \
             certificate, or share no cipher suite with this client"
        ),
        A::ProtocolVersion => format!(
            "{peer} speaks no TLS version this client does: idemspec speaks TLS 1.2 and 1.3"
        ),
        other => format!("{peer} ended the TLS handshake with the alert {other:?}"),
    }
}

/// The names a certificate carries, as webpki reports them (`DnsName("api.internal")`,
/// `IpAddress(127.0.0.1)`), written plain and comma-separated; "no name" for none.
fn presented_names(presented: &[String]) -> String {
    if presented.is_empty() {
        return "no name".into();
    }
    presented
        .iter()
        .map(|name| plain_name(name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One of webpki's debug renderings of a name, the name alone: `DnsName("a")` is `a`,
/// `IpAddress(::1)` is `::1`; anything else as it is.
fn plain_name(name: &str) -> &str {
    ["DnsName(", "IpAddress(", "UniformResourceIdentifier("]
        .iter()
        .find_map(|kind| name.strip_prefix(kind)?.strip_suffix(')'))
        .map_or(name, |inner| inner.trim_matches('"'))
}

fn rfc3339(at: UnixTime) -> String {
    let secs = i64::try_from(at.as_secs()).unwrap_or(i64::MAX);
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("{secs} s after 1970"))
}
