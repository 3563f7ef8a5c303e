//! The toxics of one relayed connection, as a [`Transform`] of the TCP relay: each chunk of a
//! stream (client → upstream is `upstream`, upstream → client `downstream`) meets the toxics of
//! that stream, in the order they were added.
//!
//! Toxics are read afresh for every chunk, so a toxic added, updated or removed takes hold of
//! open connections as in Toxiproxy. Whether a toxic acts on a connection is drawn once, against
//! its toxicity, when the connection first meets it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemspec_scenarios::rules::Direction;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;
use tokio::time::Instant;

use super::toxics::{Kind, Stream, Toxic};
use crate::event::ProxyEvent;
use crate::tcp::relay::{AfterChunk, ChunkPlan, Piece, Transform};

/// The toxics of a proxy, as its connections see them.
pub(crate) type Toxics = watch::Receiver<Arc<Vec<Toxic>>>;

/// Whether a toxic acts on the connection, and since when.
#[derive(Debug, Clone, Copy)]
struct Drawn {
    acts: bool,
    since: Instant,
}

/// What one connection knows of the toxics it met.
pub(crate) struct Chain {
    toxics: Toxics,
    /// Per toxic id.
    drawn: Mutex<HashMap<u64, Drawn>>,
    /// The toxics that acted on the connection, in the order they took hold: name and type.
    acted: Mutex<Vec<(String, &'static str)>>,
    /// Per `limit_data` toxic id: the bytes it has let through.
    sent: Mutex<HashMap<u64, u64>>,
    rng: Mutex<StdRng>,
}

fn stream_of(dir: Direction) -> Stream {
    match dir {
        Direction::Upstream => Stream::Upstream,
        _ => Stream::Downstream,
    }
}

impl Chain {
    /// The chain of a connection accepted now, over the proxy's `toxics`.
    pub(crate) fn new(toxics: Toxics) -> Self {
        Self {
            toxics,
            drawn: Mutex::default(),
            acted: Mutex::default(),
            sent: Mutex::default(),
            rng: Mutex::new(StdRng::from_entropy()),
        }
    }

    /// The toxics acting on this connection now, in order, with when each took hold.
    fn acting(&self) -> Vec<(Toxic, Instant)> {
        let toxics = self.toxics.borrow().clone();
        let mut drawn = self.drawn.lock().expect("never poisoned");
        let mut rng = self.rng.lock().expect("never poisoned");
        toxics
            .iter()
            .filter_map(|t| {
                let d = *drawn.entry(t.id).or_insert_with(|| {
                    let acts = rng.gen::<f32>() < t.toxicity;
                    if acts {
                        let mut acted = self.acted.lock().expect("never poisoned");
                        acted.push((t.name.clone(), t.kind.type_name()));
                    }
                    Drawn {
                        acts,
                        since: Instant::now(),
                    }
                });
                d.acts.then(|| (t.clone(), d.since))
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

    /// How many of `n` bytes the `limit_data` toxics of `chain` let through, and whether one is
    /// then full; counts them.
    fn admit(&self, chain: &[Toxic], n: usize) -> (usize, bool) {
        let (mut take, mut reached) = (n, false);
        let mut sent = self.sent.lock().expect("never poisoned");
        for t in chain {
            if let Kind::LimitData(limit) = &t.kind {
                let (admitted, full) = limit.admit(*sent.get(&t.id).unwrap_or(&0), take);
                take = admitted;
                reached |= full;
            }
        }
        for t in chain {
            if matches!(t.kind, Kind::LimitData(_)) {
                *sent.entry(t.id).or_default() += take as u64;
            }
        }
        (take, reached)
    }

    /// The writes of `len` bytes through the `slicer` (the first) and `bandwidth` (the slowest)
    /// toxics of `chain`; none (one write) without either.
    fn pieces(&self, chain: &[Toxic], len: usize) -> Vec<Piece> {
        let slicer = chain.iter().find_map(|t| match &t.kind {
            Kind::Slicer(s) => Some(s),
            _ => None,
        });
        let bandwidth = chain
            .iter()
            .filter_map(|t| match &t.kind {
                Kind::Bandwidth(b) => b.piece().map(|size| (b, size)),
                _ => None,
            })
            .min_by_key(|(b, _)| b.rate);
        if slicer.is_none() && bandwidth.is_none() {
            return Vec::new();
        }
        let (ends, pause) = match slicer {
            Some(s) => (
                s.cuts(len, &mut *self.rng.lock().expect("never poisoned")),
                s.delay(),
            ),
            None => (vec![len], Duration::ZERO),
        };
        let mut pieces = Vec::new();
        let mut start = 0;
        for end in ends {
            match bandwidth {
                Some((b, size)) => {
                    for part_start in (start..end).step_by(size) {
                        let part_end = (part_start + size).min(end);
                        pieces.push(Piece {
                            end: part_end,
                            before: b.time_for(part_end - part_start),
                            after: Duration::ZERO,
                        });
                    }
                }
                None => pieces.push(Piece {
                    end,
                    before: Duration::ZERO,
                    after: Duration::ZERO,
                }),
            }
            if let Some(last) = pieces.last_mut() {
                last.after = pause;
            }
            start = end;
        }
        pieces
    }
}

impl Transform for Chain {
    /// In this order: `timeout` (drop), `reset_peer`, the sum of the `latency` delays,
    /// `limit_data`, then the writes, cut by the `slicer` and paced by the slowest `bandwidth`.
    fn chunk(&self, dir: Direction, n: usize) -> ChunkPlan {
        let chain = self.acting_on(stream_of(dir));
        if chain.is_empty() {
            return ChunkPlan::pass(n);
        }
        if chain.iter().any(|t| matches!(t.kind, Kind::Timeout(_))) {
            return ChunkPlan::Discard;
        }
        if let Some(wait) = chain.iter().find_map(|t| match &t.kind {
            Kind::ResetPeer(r) => Some(r.after()),
            _ => None,
        }) {
            return ChunkPlan::Reset(wait);
        }
        let delay = chain
            .iter()
            .filter_map(|t| match &t.kind {
                Kind::Latency(l) => Some(l.delay(&mut *self.rng.lock().expect("never poisoned"))),
                _ => None,
            })
            .sum();
        let (take, reached) = self.admit(&chain, n);
        ChunkPlan::Pass {
            delay,
            take,
            pieces: self.pieces(&chain, take),
            then: if reached {
                AfterChunk::Close
            } else {
                AfterChunk::Continue
            },
        }
    }

    /// The longest `slow_close` delay of the stream.
    fn eof_delay(&self, dir: Direction) -> Duration {
        self.acting_on(stream_of(dir))
            .iter()
            .filter_map(|t| match &t.kind {
                Kind::SlowClose(s) => Some(s.delay()),
                _ => None,
            })
            .max()
            .unwrap_or_default()
    }

    /// When a `timeout` toxic's time is up; looked at again whenever the toxics change.
    async fn expiry(&self) {
        let mut changes = self.toxics.clone();
        loop {
            let deadline = self.deadline();
            tokio::select! {
                () = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => return,
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The proxy is gone; its accept loop stops the relay.
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }

    /// `rule`: the names of the toxics that acted on the connection, in the order they took
    /// hold, joined by `,`; `fault`: their types, likewise. Neither when none acted.
    fn record(&self, event: &mut ProxyEvent) {
        let acted = self.acted.lock().expect("never poisoned");
        if acted.is_empty() {
            return;
        }
        let names: Vec<&str> = acted.iter().map(|(name, _)| name.as_str()).collect();
        let kinds: Vec<&str> = acted.iter().map(|(_, kind)| *kind).collect();
        event.rule = Some(names.join(","));
        event.fault = Some(kinds.join(","));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(toxics: &[serde_json::Value]) -> Chain {
        let toxics = toxics
            .iter()
            .enumerate()
            .map(|(id, body)| {
                let serde_json::Value::Object(body) = body else {
                    panic!("an object")
                };
                Toxic::create(id as u64, body).expect("a valid toxic")
            })
            .collect();
        // A receiver still reads the last value once its sender is gone.
        Chain::new(watch::channel(Arc::new(toxics)).1)
    }

    #[test]
    fn toxics_act_on_their_stream_in_the_documented_order() {
        let c = chain(&[
            serde_json::json!({"type": "latency", "attributes": {"latency": 20}}),
            serde_json::json!({"type": "latency", "name": "more", "attributes": {"latency": 30}}),
            serde_json::json!({"type": "limit_data", "attributes": {"bytes": 10}}),
            serde_json::json!({"type": "reset_peer", "stream": "upstream", "attributes": {"timeout": 5}}),
        ]);
        assert_eq!(
            c.chunk(Direction::Upstream, 100),
            ChunkPlan::Reset(Duration::from_millis(5))
        );
        let ChunkPlan::Pass {
            delay, take, then, ..
        } = c.chunk(Direction::Downstream, 6)
        else {
            panic!("passed")
        };
        assert_eq!(
            (delay, take, then),
            (Duration::from_millis(50), 6, AfterChunk::Continue)
        );
        let ChunkPlan::Pass { take, then, .. } = c.chunk(Direction::Downstream, 6) else {
            panic!("passed")
        };
        assert_eq!(
            (take, then),
            (4, AfterChunk::Close),
            "10 bytes, then the close"
        );
        let mut event = ProxyEvent::starting_now();
        c.record(&mut event);
        assert_eq!(
            event.rule.as_deref(),
            Some("latency_downstream,more,limit_data_downstream,reset_peer_upstream")
        );
        assert_eq!(
            event.fault.as_deref(),
            Some("latency,latency,limit_data,reset_peer")
        );
        let timeout = chain(&[
            serde_json::json!({"type": "reset_peer"}),
            serde_json::json!({"type": "timeout"}),
        ]);
        assert_eq!(timeout.chunk(Direction::Downstream, 1), ChunkPlan::Discard);
        assert_eq!(timeout.chunk(Direction::Upstream, 1), ChunkPlan::pass(1));
    }

    #[test]
    fn slicer_and_bandwidth_pieces_cover_the_chunk() {
        let c = chain(&[
            serde_json::json!({"type": "slicer", "attributes": {"average_size": 300, "size_variation": 0, "delay": 1000}}),
            // 100 bytes per 100 ms piece.
            serde_json::json!({"type": "bandwidth", "attributes": {"rate": 1}}),
        ]);
        let ChunkPlan::Pass { pieces, .. } = c.chunk(Direction::Downstream, 1000) else {
            panic!("passed")
        };
        assert_eq!(pieces.last().map(|p| p.end), Some(1000));
        let mut start = 0;
        for p in &pieces {
            assert!(p.end > start && p.end - start <= 100, "{pieces:?}");
            assert_eq!(
                p.before,
                Duration::from_micros((p.end - start) as u64 * 1000)
            );
            start = p.end;
        }
        let pauses = pieces.iter().filter(|p| !p.after.is_zero()).count();
        assert!(pauses >= 3, "a pause after each slice: {pieces:?}");
    }
}
