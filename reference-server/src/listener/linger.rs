//! The lingering close (RFC 9112 §9.6): after answering a request whose body may still be on its
//! way, close the write side (the client sees the answer end), then read and drop what the client
//! still sends until it closes too, bounded in bytes and time. Closing both sides at once instead
//! makes the kernel answer the client's next bytes with a reset, which can erase the answer from
//! the client's receive buffer before it reads it: a client that writes its whole body first (most
//! SDKs) sees a broken pipe or a reset, and retries what was a permanent rejection. nginx does the
//! same (`lingering_close`, `lingering_time`, `lingering_timeout`).

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// The longest a lingering close lasts in all (nginx's `lingering_time` is 30 s; a leasebroker body
/// is at most 1 MiB, so a client still sending after 5 s is not finishing a request).
pub const LINGER_TIME: Duration = Duration::from_secs(5);

/// The longest wait for the client's next bytes or its close while lingering (nginx's
/// `lingering_timeout`, 5 s; shorter here, for the same reason).
pub const LINGER_QUIET: Duration = Duration::from_secs(1);

/// The most bytes read and dropped while lingering: 16 MiB, sixteen times the body limit.
pub const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// Closes `stream` lingering: shuts down the write side, then drains reads until the client closes,
/// a read fails, [`LINGER_QUIET`] passes without bytes, [`LINGER_BYTES`] were read or
/// [`LINGER_TIME`] is up. The stream is dropped (fully closed) by the caller afterwards. Over TLS
/// the write side's close is a `close_notify` alert, then the TCP shutdown, and what is drained is
/// the client's records, decrypted and dropped.
pub(super) async fn linger<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) {
    // Already shut down by hyper after a clean end; a second shutdown is harmless.
    let _ = stream.shutdown().await;
    let deadline = Instant::now() + LINGER_TIME;
    let mut buf = vec![0_u8; 64 * 1024];
    let mut drained = 0;
    while drained < LINGER_BYTES {
        let wait = LINGER_QUIET.min(deadline.saturating_duration_since(Instant::now()));
        match tokio::time::timeout(wait, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return,
            Ok(Ok(n)) => drained += n,
        }
    }
}
