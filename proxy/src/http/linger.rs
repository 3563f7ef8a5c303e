//! The lingering close (as nginx's `lingering_close`): how a downstream connection ends when the
//! proxy, not the client, ends it.
//!
//! A client may still be sending when its answer is already written: the proxy answered before
//! reading the whole body (`respond`, a 502, the control API's 413), or hyper gave up on the
//! request. Closing the socket then, with the client's bytes unread in it, makes the kernel send
//! a reset, and a reset discards whatever the client had not read yet: the client that writes
//! its whole request before reading (Python's `http.client`) sees a broken pipe instead of the
//! answer, and retries a permanent rejection as if the network had failed. So the proxy shuts
//! down its sending side (the client reads the answer, then EOF) and reads and discards what the
//! client still sends until the client closes, for a bounded time.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The longest a connection lingers: a client on the same host finishes writing tens of MiB in
/// far less; one that never stops sending holds its descriptor at most this long.
pub(crate) const LINGER: Duration = Duration::from_secs(2);

/// Sends FIN after what was written, then reads and discards until the client closes, an error,
/// [`LINGER`], or `stop` (the proxy shuts down), whichever comes first.
pub(crate) async fn linger<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    stop: impl std::future::Future<Output = ()>,
) {
    if stream.shutdown().await.is_err() {
        return;
    }
    let drain = async {
        // Most clients have closed already: their EOF needs no buffer of size.
        let mut first = [0u8; 256];
        if !matches!(stream.read(&mut first).await, Ok(n) if n > 0) {
            return;
        }
        let mut buf = vec![0u8; 64 * 1024];
        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    tokio::select! {
        _ = tokio::time::timeout(LINGER, drain) => {}
        () = stop => {}
    }
}
