//! The TLS handshake on an accepted connection of a TLS listener: what the client's first byte
//! says it speaks, the handshake within the header read timeout, and the client certificate it
//! verified.

use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::edge::ClientCertificate;

/// The first byte of a TLS record that carries a handshake (RFC 8446 §5.1, `ContentType.handshake`).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// What an accepted connection of a TLS listener turned out to be.
pub(super) enum Accepted {
    /// A finished handshake, with the client certificate it verified (if the client showed one).
    Tls(Box<TlsStream<TcpStream>>, Option<ClientCertificate>),
    /// The client began with plain HTTP (its first byte is a letter, as a request method's is).
    PlainHttp(TcpStream),
    /// Nothing to serve: the client closed, the handshake failed (logged at debug), or it did not
    /// finish within the limit.
    Gone,
}

/// Waits up to `limit` for the client's first byte and, if it begins a handshake (or anything but
/// plain HTTP), for the whole handshake.
pub(super) async fn handshake(
    stream: TcpStream,
    acceptor: &TlsAcceptor,
    limit: Duration,
) -> Accepted {
    let work = async {
        let mut first = [0_u8; 1];
        match stream.peek(&mut first).await {
            Ok(0) | Err(_) => return Accepted::Gone,
            Ok(_) if first[0] != TLS_HANDSHAKE_RECORD && first[0].is_ascii_alphabetic() => {
                return Accepted::PlainHttp(stream);
            }
            Ok(_) => {}
        }
        match acceptor.accept(stream).await {
            Ok(tls) => {
                let cert = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|chain| chain.first())
                    .map(|leaf| ClientCertificate::from_der(leaf));
                Accepted::Tls(Box::new(tls), cert)
            }
            Err(err) => {
                tracing::debug!(error = %err, "TLS handshake failed");
                Accepted::Gone
            }
        }
    };
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or(Accepted::Gone)
}
