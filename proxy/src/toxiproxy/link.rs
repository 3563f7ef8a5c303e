//! One relayed connection of a Toxiproxy-style proxy: two pumps (client → upstream is the
//! `upstream` stream, upstream → client `downstream`), each passing every chunk it reads through
//! the toxics of its stream, in the order they were added, and a supervisor that closes the
//! connection when a `timeout` toxic's time is up.
//!
//! Toxics are read afresh for every chunk, so a toxic added, updated or removed takes hold of
//! open connections as in Toxiproxy. Whether a toxic acts on a connection is drawn once, against
//! its toxicity, when the connection first meets it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::toxics::{Kind, Stream, Toxic};

/// The toxics of a proxy, as its connections see them.
pub(crate) type Toxics = watch::Receiver<Arc<Vec<Toxic>>>;

/// How a pump ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The reader reached EOF; the writer was shut down.
    Eof,
    /// A toxic ended the connection: close both sides.
    Close,
    /// A `reset_peer` toxic ended it: reset both sides.
    Reset,
    /// Reading or writing failed.
    Failed,
}

/// What one connection knows of the toxics it met.
struct Conn {
    toxics: Toxics,
    /// Per toxic id: whether it acts on this connection, and when it took hold.
    drawn: Mutex<HashMap<u64, (bool, Instant)>>,
    /// Per `limit_data` toxic id: the bytes it has let through.
    sent: Mutex<HashMap<u64, u64>>,
    rng: Mutex<StdRng>,
}

impl Conn {
    /// The toxics acting on this connection now, in order, with when each took hold.
    fn acting(&self) -> Vec<(Toxic, Instant)> {
        let toxics = self.toxics.borrow().clone();
        let mut drawn = self.drawn.lock().expect("never poisoned");
        let mut rng = self.rng.lock().expect("never poisoned");
        toxics
            .iter()
            .filter_map(|t| {
                let (acts, since) = *drawn
                    .entry(t.id)
                    .or_insert_with(|| (rng.gen::<f32>() < t.toxicity, Instant::now()));
                acts.then(|| (t.clone(), since))
            })
            .collect()
    }

    fn acting_on(&self, stream: Stream) -> Vec<Toxic> {
        self.acting()
            .into_iter()
            .filter(|(t, _)| t.stream == stream)
            .map(|(t, _)| t)
            .collect()
    }

    /// When the first `timeout` toxic with a time closes the connection.
    fn deadline(&self) -> Option<Instant> {
        self.acting()
            .iter()
            .filter_map(|(t, since)| match &t.kind {
                Kind::Timeout(timeout) => timeout.close_after().map(|d| *since + d),
                _ => None,
            })
            .min()
    }

    fn rng(&self) -> std::sync::MutexGuard<'_, StdRng> {
        self.rng.lock().expect("never poisoned")
    }
}

/// Writes `data` through the `slicer` and `bandwidth` toxics in `chain`.
async fn write_through<W: AsyncWrite + Unpin>(
    to: &mut W,
    data: &[u8],
    chain: &[Toxic],
    conn: &Conn,
) -> std::io::Result<()> {
    let slicer = chain.iter().find_map(|t| match &t.kind {
        Kind::Slicer(s) => Some(s.clone()),
        _ => None,
    });
    let bandwidth = chain
        .iter()
        .filter_map(|t| match &t.kind {
            Kind::Bandwidth(b) if b.piece().is_some() => Some(b.clone()),
            _ => None,
        })
        .min_by_key(|b| b.rate);
    let mut start = 0;
    let ends = match &slicer {
        Some(s) => s.cuts(data.len(), &mut *conn.rng()),
        None => vec![data.len()],
    };
    for end in ends {
        let piece = &data[start..end];
        match &bandwidth {
            Some(b) => {
                let size = b.piece().expect("a limited rate");
                for part in piece.chunks(size) {
                    tokio::time::sleep(b.time_for(part.len())).await;
                    to.write_all(part).await?;
                }
            }
            None => to.write_all(piece).await?,
        }
        if let Some(s) = &slicer {
            to.flush().await?;
            tokio::time::sleep(s.delay()).await;
        }
        start = end;
    }
    Ok(())
}

async fn pump<R, W>(mut from: R, mut to: W, stream: Stream, conn: &Conn) -> End
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(n) => n,
            Err(_) => return End::Failed,
        };
        let chain = conn.acting_on(stream);
        if n == 0 {
            let slow = chain.iter().filter_map(|t| match &t.kind {
                Kind::SlowClose(s) => Some(s.delay()),
                _ => None,
            });
            tokio::time::sleep(slow.max().unwrap_or_default()).await;
            let _ = to.shutdown().await;
            return End::Eof;
        }
        if chain.iter().any(|t| matches!(t.kind, Kind::Timeout(_))) {
            continue;
        }
        if let Some(wait) = chain.iter().find_map(|t| match &t.kind {
            Kind::ResetPeer(r) => Some(r.after()),
            _ => None,
        }) {
            tokio::time::sleep(wait).await;
            return End::Reset;
        }
        let delay: Duration = chain
            .iter()
            .filter_map(|t| match &t.kind {
                Kind::Latency(l) => Some(l.delay(&mut *conn.rng())),
                _ => None,
            })
            .sum();
        tokio::time::sleep(delay).await;
        let (mut take, mut reached) = (n, false);
        {
            let mut sent = conn.sent.lock().expect("never poisoned");
            for t in &chain {
                if let Kind::LimitData(limit) = &t.kind {
                    let (admitted, full) = limit.admit(*sent.get(&t.id).unwrap_or(&0), take);
                    take = admitted;
                    reached |= full;
                }
            }
            for t in &chain {
                if matches!(t.kind, Kind::LimitData(_)) {
                    *sent.entry(t.id).or_default() += take as u64;
                }
            }
        }
        if write_through(&mut to, &buf[..take], &chain, conn)
            .await
            .is_err()
        {
            return End::Failed;
        }
        if reached {
            let _ = to.flush().await;
            return End::Close;
        }
    }
}

/// Relays `down` (the client) to `upstream` until both sides close, a toxic ends the connection
/// or the proxy stops (the task is then aborted, which closes both sockets).
pub(crate) async fn relay(mut down: TcpStream, upstream: String, toxics: Toxics) {
    let Ok(mut up) = TcpStream::connect(upstream.as_str()).await else {
        // As Toxiproxy does, the client sees its connection closed.
        return;
    };
    let _ = up.set_nodelay(true);
    let _ = down.set_nodelay(true);
    let conn = Conn {
        toxics,
        drawn: Mutex::default(),
        sent: Mutex::default(),
        rng: Mutex::new(StdRng::from_entropy()),
    };
    let mut changes = conn.toxics.clone();
    let end = {
        let (dr, dw) = down.split();
        let (ur, uw) = up.split();
        let to_up = pump(dr, uw, Stream::Upstream, &conn);
        let to_down = pump(ur, dw, Stream::Downstream, &conn);
        tokio::pin!(to_up, to_down);
        let (mut up_end, mut down_end) = (None, None);
        loop {
            let deadline = conn.deadline();
            tokio::select! {
                e = &mut to_up, if up_end.is_none() => up_end = Some(e),
                e = &mut to_down, if down_end.is_none() => down_end = Some(e),
                () = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => {
                    break End::Close;
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The proxy is gone; its accept loop aborts this task.
                        std::future::pending::<()>().await;
                    }
                }
            }
            match (up_end, down_end) {
                (Some(End::Eof), Some(End::Eof)) => break End::Eof,
                (Some(e), _) | (_, Some(e)) if e != End::Eof => break e,
                _ => {}
            }
        }
    };
    if end == End::Reset {
        let _ = down.set_zero_linger();
        let _ = up.set_zero_linger();
    }
}
