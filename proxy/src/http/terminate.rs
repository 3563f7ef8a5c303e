//! TLS on the proxy's own port ([`crate::ProxyConfig::listen_tls`]): a downstream connection's
//! handshake, bounded by the header-read timeout and the shutdown, and plain HTTP sent to it
//! answered in plain HTTP with what to do.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use idemspec_tls::rustls::ServerConfig;
use idemspec_tls::tokio_rustls::TlsAcceptor;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::linger::{linger, LINGER};
use super::rejections::problem_response;
use super::stream::DownStream;
use super::Shared;

/// The first byte of a TLS handshake record.
const HANDSHAKE_RECORD: u8 = 0x16;

/// How long a handshake may take when no header-read timeout is set.
const HANDSHAKE_BOUND: Duration = Duration::from_secs(10);

/// The connection after its TLS handshake, or `None` when it ended there: a failed or slow
/// handshake, the proxy shutting down, or plain HTTP (answered `400` with a problem body that
/// says to use `https://`, the saying nginx uses, then closed).
pub(super) async fn accept(
    config: &Arc<ServerConfig>,
    mut tcp: TcpStream,
    shared: &Shared,
) -> Option<DownStream> {
    let bound = shared.header_read_timeout.unwrap_or(HANDSHAKE_BOUND);
    let handshake = async {
        let mut first = [0u8; 1];
        if tcp.peek(&mut first).await.ok()? == 0 {
            return None;
        }
        if first[0] != HANDSHAKE_RECORD {
            refuse_plain(&mut tcp, shared).await;
            return None;
        }
        match TlsAcceptor::from(config.clone()).accept(tcp).await {
            Ok(tls) => Some(DownStream::Tls(Box::new(tls))),
            Err(err) => {
                let cause = idemspec_tls::explain_peer(&err, "the client", Default::default());
                tracing::debug!(error = %err, cause, "TLS handshake with a client failed");
                None
            }
        }
    };
    tokio::select! {
        accepted = tokio::time::timeout(bound, handshake) => accepted.ok().flatten(),
        () = shared.shutting_down() => None,
    }
}

/// Answers plain HTTP on the TLS port, then closes the connection the lingering way.
async fn refuse_plain(tcp: &mut TcpStream, shared: &Shared) {
    let detail = "The plain HTTP request was sent to HTTPS port: idemspec-proxy speaks TLS on \
                  this port, use an https:// URL";
    let answer = problem_response(StatusCode::BAD_REQUEST, detail);
    let end = async {
        if tcp.write_all(&answer).await.is_ok() {
            linger(tcp, shared.shutting_down()).await;
        }
    };
    let _ = tokio::time::timeout(LINGER, end).await;
}
