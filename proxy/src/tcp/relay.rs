//! The TCP relay: one downstream connection relayed to its upstream, each direction's chunks
//! passed through a [`Transform`] that may delay, cut, pace, drop or reset them, and one
//! [`ProxyEvent`] per connection. idemspec's TCP mode (`super::rules`) and the Toxiproxy
//! proxies (`crate::toxiproxy`) both relay through it; they differ only in their transform.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idemspec_scenarios::rules::Direction;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::event::{ProxyEvent, Side};
use crate::event_log::EventLog;

/// One write of a chunk's bytes: `before` is waited first, then the bytes up to `end` (an
/// offset into the chunk, after the previous piece's end) are written, then `after` is waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Where the piece ends in the chunk, bytes.
    pub end: usize,
    /// The pause before it is written.
    pub before: Duration,
    /// The pause after it was written (and flushed).
    pub after: Duration,
}

/// What follows a chunk passed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterChunk {
    /// Read on.
    Continue,
    /// Close both sides (FIN).
    Close,
    /// Reset both sides (RST).
    Reset,
}

/// What the relay does with one chunk read in one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChunkPlan {
    /// Wait `delay`, write the chunk's first `take` bytes (as `pieces`, or in one write when
    /// `pieces` is empty), then do `then`.
    Pass {
        delay: Duration,
        take: usize,
        pieces: Vec<Piece>,
        then: AfterChunk,
    },
    /// Drop the chunk and read on.
    Discard,
    /// Wait, then reset both sides; the chunk is not sent.
    Reset(Duration),
}

impl ChunkPlan {
    /// The whole chunk of `n` bytes, at once.
    pub(crate) fn pass(n: usize) -> Self {
        Self::Pass {
            delay: Duration::ZERO,
            take: n,
            pieces: Vec::new(),
            then: AfterChunk::Continue,
        }
    }
}

/// What one connection's faults do to its bytes. One value per connection; both directions
/// call it, concurrently (hence `Sync`).
pub(crate) trait Transform: Sync {
    /// The plan for a chunk of `n` bytes read in `dir` (`Upstream`: from the client).
    fn chunk(&self, dir: Direction, n: usize) -> ChunkPlan;

    /// How long an end of stream read in `dir` waits before it is passed on.
    fn eof_delay(&self, _dir: Direction) -> Duration {
        Duration::ZERO
    }

    /// Resolves when the transform closes the connection of its own accord (FIN both ways).
    fn expiry(&self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }

    /// Fills in what the transform did (`rule`, `fault`) once the connection is over.
    fn record(&self, _event: &mut ProxyEvent) {}
}

/// How a pump (one direction of the relay) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The reader reached EOF; the writer was shut down.
    Eof,
    /// The transform closed the connection.
    Close,
    /// The transform reset the connection.
    Reset,
    /// Reading or writing failed.
    Failed(Side),
}

/// The side bytes flowing in `dir` are read from, and the one they are written to.
fn sides(dir: Direction) -> (Side, Side) {
    match dir {
        Direction::Upstream => (Side::Downstream, Side::Upstream),
        _ => (Side::Upstream, Side::Downstream),
    }
}

async fn pause(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

async fn write_pieces<W: AsyncWrite + Unpin>(
    to: &mut W,
    data: &[u8],
    pieces: &[Piece],
) -> std::io::Result<()> {
    if pieces.is_empty() {
        return to.write_all(data).await;
    }
    let mut start = 0;
    for piece in pieces {
        pause(piece.before).await;
        to.write_all(&data[start..piece.end]).await?;
        if !piece.after.is_zero() {
            to.flush().await?;
            pause(piece.after).await;
        }
        start = piece.end;
    }
    Ok(())
}

/// Relays `from` to `to` through `transform` until either ends; counts the bytes written in
/// `passed` as they go (a relay stopped from outside still knows them).
async fn pump<R, W, T>(
    mut from: R,
    mut to: W,
    dir: Direction,
    transform: &T,
    passed: &AtomicU64,
) -> End
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    T: Transform,
{
    let (from_side, to_side) = sides(dir);
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) => {
                pause(transform.eof_delay(dir)).await;
                let _ = to.shutdown().await;
                return End::Eof;
            }
            Ok(n) => n,
            Err(_) => return End::Failed(from_side),
        };
        let (delay, take, pieces, then) = match transform.chunk(dir, n) {
            ChunkPlan::Discard => continue,
            ChunkPlan::Reset(wait) => {
                pause(wait).await;
                return End::Reset;
            }
            ChunkPlan::Pass {
                delay,
                take,
                pieces,
                then,
            } => (delay, take.min(n), pieces, then),
        };
        pause(delay).await;
        if write_pieces(&mut to, &buf[..take], &pieces).await.is_err() {
            return End::Failed(to_side);
        }
        passed.fetch_add(take as u64, Ordering::Relaxed);
        let end = match then {
            AfterChunk::Continue => continue,
            AfterChunk::Close => End::Close,
            AfterChunk::Reset => End::Reset,
        };
        let _ = to.flush().await;
        return end;
    }
}

/// Relays `down` to `upstream` (`host:port`, connected now) through `transform` until both
/// sides have closed, the transform ends the connection, or `stop` resolves; fills in `event`
/// (upstream connected or refused, bytes to the client, how it ended, what the transform did).
/// An upstream that cannot be reached resets the client's connection.
pub(crate) async fn relay<T: Transform>(
    down: TcpStream,
    upstream: &str,
    transform: &T,
    event: &mut ProxyEvent,
    stop: impl Future<Output = ()>,
) {
    relay_connected(down, upstream, transform, event, stop).await;
    transform.record(event);
}

async fn relay_connected<T: Transform>(
    mut down: TcpStream,
    upstream: &str,
    transform: &T,
    event: &mut ProxyEvent,
    stop: impl Future<Output = ()>,
) {
    let mut up = match TcpStream::connect(upstream).await {
        Ok(up) => up,
        Err(err) => {
            event.error_side = Some(Side::Upstream);
            event.upstream_error = Some(format!("connect {upstream}: {err}"));
            // The client sees a reset, as it would from a refusing server.
            let _ = down.set_zero_linger();
            return;
        }
    };
    let _ = up.set_nodelay(true);
    event.upstream_sends = 1;
    let reset = {
        let (dr, dw) = down.split();
        let (ur, uw) = up.split();
        let (sent_up, sent_down) = (AtomicU64::new(0), AtomicU64::new(0));
        let to_up = pump(dr, uw, Direction::Upstream, transform, &sent_up);
        let to_down = pump(ur, dw, Direction::Downstream, transform, &sent_down);
        let expiry = transform.expiry();
        tokio::pin!(to_up, to_down, stop, expiry);
        let (mut up_end, mut down_end) = (None, None);
        loop {
            tokio::select! {
                r = &mut to_up, if up_end.is_none() => up_end = Some(r),
                r = &mut to_down, if down_end.is_none() => down_end = Some(r),
                () = &mut expiry => break,
                () = &mut stop => break,
            }
            let ended = [up_end, down_end];
            if ended.iter().flatten().any(|e| *e != End::Eof) || ended.iter().all(Option::is_some) {
                break;
            }
        }
        event.client_bytes = sent_down.load(Ordering::Relaxed);
        let ends = [up_end, down_end];
        if let Some(End::Failed(side)) = ends.iter().flatten().find(|e| matches!(e, End::Failed(_)))
        {
            event.error_side = Some(*side);
            event.client_disconnected = *side == Side::Downstream;
        }
        event.client_complete = ends.iter().all(|e| *e == Some(End::Eof));
        ends.contains(&Some(End::Reset))
    };
    if reset {
        let _ = down.set_zero_linger();
        let _ = up.set_zero_linger();
    }
}

/// Records `event`, with its duration since `started`, in `events`.
pub(crate) fn record(events: &EventLog, mut event: ProxyEvent, started: Instant) {
    event.duration_ms = started.elapsed().as_millis() as u64;
    events.push(event);
}
