//! Where one downstream connection is in reading request heads: one atomic word per connection
//! (in its `ConnSignals`) that the socket's reads, the request's context and its response body update
//! with plain loads and stores, and that the header-read timeout's sweep ([`super::head_timer`])
//! reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A request is in the service or its response is being sent: nothing is timed.
const BUSY: u64 = u64::MAX;
/// Between requests, no byte of the next head yet: nothing is timed.
const IDLE: u64 = u64::MAX - 1;
/// As [`BUSY`], and bytes came meanwhile (the next head, pipelined): they are timed from the
/// end of the exchange, as if they came then.
const BUSY_READ: u64 = u64::MAX - 2;
// Any other value: waiting for a head since `value >> 1` ms after the epoch; bit 0 says whether a
// byte of it has arrived.

/// Where one downstream connection is in reading request heads.
#[derive(Debug)]
pub(crate) struct HeadClock {
    state: AtomicU64,
    epoch: Instant,
}

/// What [`HeadClock::check`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// A head has been awaited for the whole timeout; `started` says whether a byte of it came.
    Expired { started: bool },
    /// No head is awaited, or not for that long.
    InTime,
}

/// Milliseconds in `d`, without the 128-bit division of `Duration::as_millis`.
fn millis(d: Duration) -> u64 {
    d.as_secs() * 1000 + u64::from(d.subsec_millis())
}

impl HeadClock {
    /// A connection accepted now, waiting for its first head.
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    /// The socket read bytes: after an idle spell, they begin the next head. On the hot path:
    /// one load and a compare; the rest is out of line.
    #[inline]
    pub(crate) fn read(&self) {
        // Relaxed: the connection's own task is the only writer; the sweep only reads, and a
        // stale value delays a cut by one period at most.
        let state = self.state.load(Ordering::Relaxed);
        if state == BUSY {
            self.state.store(BUSY_READ, Ordering::Relaxed);
            return;
        }
        // Odd: a head's byte already came (or BUSY_READ); IDLE is even.
        if state & 1 == 1 {
            return;
        }
        self.begin(state);
    }

    /// The first byte of a head: stamp it (after an idle spell) or mark it (the first head,
    /// timed from the accept).
    #[cold]
    #[inline(never)]
    fn begin(&self, state: u64) {
        let begun = if state == IDLE {
            millis(self.epoch.elapsed()) << 1 | 1
        } else {
            state | 1
        };
        self.state.store(begun, Ordering::Relaxed);
    }

    /// A request head is complete and in the service.
    pub(crate) fn busy(&self) {
        self.state.store(BUSY, Ordering::Relaxed);
    }

    /// The response is over (its body is done with): the next head is timed from its first byte,
    /// or from now when bytes of it came during the exchange.
    pub(crate) fn idle(&self) {
        if self.state.swap(IDLE, Ordering::Relaxed) == BUSY_READ {
            self.begin(IDLE);
        }
    }

    /// Whether the head being waited for has taken `timeout` or more.
    pub(crate) fn check(&self, timeout: Duration) -> Expiry {
        let state = self.state.load(Ordering::Relaxed);
        if state >= BUSY_READ {
            return Expiry::InTime;
        }
        let waited = millis(self.epoch.elapsed()).saturating_sub(state >> 1);
        if waited >= millis(timeout) {
            Expiry::Expired {
                started: state & 1 == 1,
            }
        } else {
            Expiry::InTime
        }
    }
}
