//! idemspec's TCP mode: the rule a connection matched, as a [`Transform`] of the relay (latency
//! with jitter, close or reset after N bytes in a direction), or handled before any relaying
//! (refuse, blackhole).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idemspec_scenarios::rules::{Direction, TcpFault};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use super::relay::{self, AfterChunk, ChunkPlan, Transform};
use crate::event::ProxyEvent;
use crate::http::{Shared, Upstream};
use crate::matcher::SplitMix64;

/// The per-connection fault settings of a latency or close-after rule.
struct Policy {
    latency: Option<(Duration, Duration, Direction)>,
    budget: Option<(Mutex<u64>, Direction)>,
    /// Whether a spent budget resets the connection instead of closing it.
    reset: bool,
    rng: Mutex<SplitMix64>,
}

fn applies(selected: Direction, dir: Direction) -> bool {
    selected == Direction::Both || selected == dir
}

impl Policy {
    fn delay(&self, dir: Direction) -> Duration {
        let Some((base, jitter, selected)) = self.latency else {
            return Duration::ZERO;
        };
        if !applies(selected, dir) {
            return Duration::ZERO;
        }
        let u = self
            .rng
            .lock()
            .expect("rng lock is never poisoned")
            .next_f64();
        // Uniform in [base - jitter, base + jitter], never negative.
        let offset = jitter.as_secs_f64() * (2.0 * u - 1.0);
        Duration::from_secs_f64((base.as_secs_f64() + offset).max(0.0))
    }

    /// How many of `n` bytes may pass, and whether the budget is now spent.
    fn take(&self, dir: Direction, n: usize) -> (usize, bool) {
        let Some((budget, selected)) = &self.budget else {
            return (n, false);
        };
        if !applies(*selected, dir) {
            return (n, false);
        }
        let mut left = budget.lock().expect("budget lock is never poisoned");
        let take = (*left).min(n as u64);
        *left -= take;
        (take as usize, *left == 0)
    }
}

impl Transform for Policy {
    fn chunk(&self, dir: Direction, n: usize) -> ChunkPlan {
        let (take, spent) = self.take(dir, n);
        let then = match (spent, self.reset) {
            (false, _) => AfterChunk::Continue,
            (true, false) => AfterChunk::Close,
            (true, true) => AfterChunk::Reset,
        };
        ChunkPlan::Pass {
            delay: self.delay(dir),
            take,
            pieces: Vec::new(),
            then,
        }
    }
}

/// How long before the end of a shutdown's grace period a relay stops on its own.
const SHUTDOWN_MARGIN: Duration = Duration::from_millis(100);

/// Serves one downstream connection in TCP mode and records one event for it.
pub(crate) async fn serve_connection(mut down: TcpStream, shared: Arc<Shared>) {
    let Upstream::Tcp(upstream) = &shared.upstream else {
        unreachable!("TCP connections are only served in TCP mode")
    };
    let started = Instant::now();
    let mut event = ProxyEvent::starting_now();
    let rule = shared.tcp_rules().select();
    if let Some(rule) = &rule {
        event.rule = Some(rule.rule.name.clone());
        event.fault = Some(rule.rule.fault.verb().to_owned());
        tracing::info!(rule = %rule.rule.name, fault = rule.rule.fault.verb(), "applying TCP fault");
    }
    let mut policy = Policy {
        latency: None,
        budget: None,
        reset: false,
        rng: Mutex::new(SplitMix64::new(0)),
    };
    match rule.as_ref().map(|r| r.rule.fault.clone()) {
        Some(TcpFault::Refuse { reset }) => {
            if reset {
                let _ = down.set_zero_linger();
            }
            relay::record(&shared.events, event, started);
            return;
        }
        Some(TcpFault::Blackhole {}) => {
            let mut sink = vec![0u8; 16 * 1024];
            tokio::select! {
                _ = async { while matches!(down.read(&mut sink).await, Ok(n) if n > 0) {} } => {
                    event.client_disconnected = true;
                }
                () = shared.shutting_down() => {}
            }
            relay::record(&shared.events, event, started);
            return;
        }
        Some(TcpFault::Latency {
            duration,
            jitter,
            direction,
        }) => {
            policy.latency = Some((duration, jitter.unwrap_or_default(), direction));
            if let Some(rule) = &rule {
                policy.rng = Mutex::new(rule.gate.jitter_rng());
            }
        }
        Some(TcpFault::CloseAfter {
            bytes,
            direction,
            reset,
        }) => {
            policy.budget = Some((Mutex::new(bytes), direction));
            policy.reset = reset;
        }
        None => {}
    }
    // A shutdown lets the bytes flow for its grace period (there is no "exchange" to wait for
    // in a byte stream), ending just before the accept loop cuts the task, so that the event is
    // still recorded.
    let last_call = async {
        shared.shutting_down().await;
        tokio::time::sleep(shared.grace.saturating_sub(SHUTDOWN_MARGIN)).await;
    };
    relay::relay(down, upstream, &policy, &mut event, last_call).await;
    relay::record(&shared.events, event, started);
}
