//! One relayed TCP connection, with the fault its rule chose.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idemspec_scenarios::rules::{Direction, TcpFault};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::event::{ProxyEvent, Side};
use crate::matcher::SplitMix64;
use crate::server::{Shared, Upstream};

/// How a pump (one direction of the relay) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The reader reached EOF; the writer was shut down.
    Eof,
    /// The byte budget was spent: the whole connection is to be closed.
    Cut,
    /// Reading or writing failed.
    Failed(Side),
}

/// The per-connection fault settings a pump applies.
struct Policy {
    latency: Option<(Duration, Duration, Direction)>,
    budget: Option<(Mutex<u64>, Direction)>,
    rng: Mutex<SplitMix64>,
}

fn applies(selected: Direction, dir: Direction) -> bool {
    selected == Direction::Both || selected == dir
}

impl Policy {
    fn delay(&self, dir: Direction) -> Option<Duration> {
        let (base, jitter, selected) = self.latency?;
        if !applies(selected, dir) {
            return None;
        }
        let u = self
            .rng
            .lock()
            .expect("rng lock is never poisoned")
            .next_f64();
        // Uniform in [base - jitter, base + jitter], never negative.
        let offset = jitter.as_secs_f64() * (2.0 * u - 1.0);
        Some(Duration::from_secs_f64(
            (base.as_secs_f64() + offset).max(0.0),
        ))
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

async fn pump<R, W>(mut from: R, mut to: W, dir: Direction, policy: &Policy) -> (End, u64)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let from_side = if dir == Direction::Upstream {
        Side::Downstream
    } else {
        Side::Upstream
    };
    let to_side = if from_side == Side::Upstream {
        Side::Downstream
    } else {
        Side::Upstream
    };
    let mut buf = vec![0u8; 16 * 1024];
    let mut passed = 0u64;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) => {
                let _ = to.shutdown().await;
                return (End::Eof, passed);
            }
            Ok(n) => n,
            Err(_) => return (End::Failed(from_side), passed),
        };
        if let Some(delay) = policy.delay(dir) {
            tokio::time::sleep(delay).await;
        }
        let (take, spent) = policy.take(dir, n);
        if to.write_all(&buf[..take]).await.is_err() {
            return (End::Failed(to_side), passed);
        }
        passed += take as u64;
        if spent {
            let _ = to.flush().await;
            return (End::Cut, passed);
        }
    }
}

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
    let fault = rule.as_ref().map(|r| r.rule.fault.clone());
    let mut policy = Policy {
        latency: None,
        budget: None,
        rng: Mutex::new(SplitMix64::new(0)),
    };
    let mut reset = false;
    match fault {
        Some(TcpFault::Refuse { reset }) => {
            if reset {
                let _ = down.set_zero_linger();
            }
            finish(&shared, event, started);
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
            finish(&shared, event, started);
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
            reset: r,
        }) => {
            policy.budget = Some((Mutex::new(bytes), direction));
            reset = r;
        }
        None => {}
    }
    let mut up = match TcpStream::connect(upstream.as_str()).await {
        Ok(up) => up,
        Err(err) => {
            event.error_side = Some(Side::Upstream);
            event.upstream_error = Some(format!("connect {upstream}: {err}"));
            // The client sees a reset, as it would from a refusing server.
            let _ = down.set_zero_linger();
            finish(&shared, event, started);
            return;
        }
    };
    let _ = up.set_nodelay(true);
    event.upstream_sends = 1;
    let cut = {
        let (dr, dw) = down.split();
        let (ur, uw) = up.split();
        let to_up = pump(dr, uw, Direction::Upstream, &policy);
        let to_down = pump(ur, dw, Direction::Downstream, &policy);
        // A shutdown lets the bytes flow for its grace period (there is no "exchange" to wait
        // for in a byte stream), ending just before the accept loop cuts the task, so that the
        // event is still recorded.
        let last_call = async {
            shared.shutting_down().await;
            tokio::time::sleep(shared.grace.saturating_sub(SHUTDOWN_MARGIN)).await;
        };
        tokio::pin!(to_up, to_down, last_call);
        let (mut up_end, mut down_end) = (None, None);
        loop {
            tokio::select! {
                r = &mut to_up, if up_end.is_none() => up_end = Some(r),
                r = &mut to_down, if down_end.is_none() => down_end = Some(r),
                () = &mut last_call => break,
            }
            let ended = [up_end, down_end];
            if ended.iter().flatten().any(|(e, _)| *e != End::Eof)
                || ended.iter().all(Option::is_some)
            {
                break;
            }
        }
        event.client_bytes = down_end.map_or(0, |(_, n)| n);
        let ends = [up_end.map(|(e, _)| e), down_end.map(|(e, _)| e)];
        if let Some(End::Failed(side)) = ends.iter().flatten().find(|e| matches!(e, End::Failed(_)))
        {
            event.error_side = Some(*side);
            event.client_disconnected = *side == Side::Downstream;
        }
        event.client_complete = ends.iter().all(|e| *e == Some(End::Eof));
        ends.contains(&Some(End::Cut))
    };
    if cut && reset {
        let _ = down.set_zero_linger();
        let _ = up.set_zero_linger();
    }
    finish(&shared, event, started);
}

/// How long before the end of a shutdown's grace period a relay stops on its own.
const SHUTDOWN_MARGIN: std::time::Duration = std::time::Duration::from_millis(100);

fn finish(shared: &Shared, mut event: ProxyEvent, started: Instant) {
    event.duration_ms = started.elapsed().as_millis() as u64;
    shared.events.push(event);
}
