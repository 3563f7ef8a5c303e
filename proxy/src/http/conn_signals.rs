//! Signals to a downstream connection's task ([`ConnSignals`]) and the registry that lets a shutdown
//! reach every live connection ([`ConnRegistry`]).
//!
//! One atomic word and one waker per connection: the task checks them with a load on each wake,
//! where a `Notify` and a shared `watch` cost a lock per poll, and every request wakes the task
//! two or three times.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures::task::AtomicWaker;

use super::head_clock::HeadClock;

/// End the connection now.
pub(super) const ABORT: u8 = 1;
/// End it with RST instead of FIN.
const RESET: u8 = 1 << 1;
/// Abort once what was written so far is flushed.
const ABORT_AFTER_FLUSH: u8 = 1 << 2;
/// The proxy shuts down: finish the exchange in progress, take no new request.
pub(super) const SHUTDOWN: u8 = 1 << 3;
/// The upstream link has connections for the task to drive.
pub(super) const NEW_UPSTREAM: u8 = 1 << 4;
/// The header-read timer found a request head overdue (`head_timer`).
pub(super) const SLOW_HEAD: u8 = 1 << 5;

/// Lets a request's fault, the upstream link, a shutdown and the header-read sweep reach the
/// connection's task: close (FIN) or reset (RST), now or after the bytes written so far have
/// been flushed. Also where the connection is in reading request heads, for the sweep.
#[derive(Debug)]
pub(crate) struct ConnSignals {
    flags: AtomicU8,
    waker: AtomicWaker,
    /// Updated by the socket's reads and each request; read by `head_timer::sweep`.
    pub(crate) head: HeadClock,
}

impl Default for ConnSignals {
    /// The signals of a connection accepted now.
    fn default() -> Self {
        Self {
            flags: AtomicU8::new(0),
            waker: AtomicWaker::new(),
            head: HeadClock::new(),
        }
    }
}

impl ConnSignals {
    fn raise(&self, bits: u8) {
        self.flags.fetch_or(bits, Ordering::AcqRel);
        self.waker.wake();
    }

    /// Ends the connection as soon as the connection task sees it.
    pub(crate) fn abort(&self, reset: bool) {
        self.raise(if reset { ABORT | RESET } else { ABORT });
    }

    /// Resets the connection once what has been written so far is flushed.
    pub(crate) fn reset_after_flush(&self) {
        self.flags
            .fetch_or(RESET | ABORT_AFTER_FLUSH, Ordering::AcqRel);
    }

    /// Asks the connection to close once its exchange in progress is over.
    pub(super) fn shutdown(&self) {
        self.raise(SHUTDOWN);
    }

    /// Wakes the task: a request head is overdue.
    pub(super) fn slow_head(&self) {
        self.raise(SLOW_HEAD);
    }

    /// Wakes the task: the link has new upstream connections for it.
    pub(super) fn new_upstream(&self) {
        self.raise(NEW_UPSTREAM);
    }

    /// Registers the task's waker, then returns the flags (so that no raise is missed).
    pub(super) fn poll_flags(&self, waker: &std::task::Waker) -> u8 {
        self.waker.register(waker);
        self.flags.load(Ordering::Acquire)
    }

    /// Whether any of `bits` is raised (no waker registered).
    pub(super) fn raised(&self, bits: u8) -> bool {
        self.flags.load(Ordering::Acquire) & bits != 0
    }

    /// Clears `bits`.
    pub(super) fn clear(&self, bits: u8) {
        self.flags.fetch_and(!bits, Ordering::AcqRel);
    }

    /// Whether a flush should now trigger the reset asked for by [`ConnSignals::reset_after_flush`]
    /// (true once).
    pub(super) fn take_abort_after_flush(&self) -> bool {
        self.flags.fetch_and(!ABORT_AFTER_FLUSH, Ordering::AcqRel) & ABORT_AFTER_FLUSH != 0
    }

    /// Whether the connection is to end with RST.
    pub(super) fn wants_reset(&self) -> bool {
        self.flags.load(Ordering::Acquire) & RESET != 0
    }
}

/// The live downstream connections of one proxy, so that a shutdown can signal each of them.
#[derive(Debug, Default)]
pub(crate) struct ConnRegistry {
    next: AtomicU64,
    live: Mutex<HashMap<u64, Weak<ConnSignals>>>,
    closed: AtomicBool,
}

/// A connection's place in the registry; leaves it on drop.
#[derive(Debug)]
pub(super) struct Registration {
    registry: Arc<ConnRegistry>,
    id: u64,
}

impl ConnRegistry {
    /// Adds `signals` for as long as the registration lives. A connection registered after the
    /// shutdown began is told at once.
    pub(super) fn register(self: &Arc<Self>, signals: &Arc<ConnSignals>) -> Registration {
        let registry = self;
        let id = registry.next.fetch_add(1, Ordering::Relaxed);
        let closed = {
            let mut live = registry
                .live
                .lock()
                .expect("registry lock is never poisoned");
            live.insert(id, Arc::downgrade(signals));
            registry.closed.load(Ordering::Acquire)
        };
        if closed {
            signals.shutdown();
        }
        Registration {
            registry: self.clone(),
            id,
        }
    }

    /// Calls `f` with every live connection's signals (under the registry's lock: keep it short).
    pub(crate) fn each(&self, mut f: impl FnMut(&ConnSignals)) {
        let live = self.live.lock().expect("registry lock is never poisoned");
        for signals in live.values().filter_map(Weak::upgrade) {
            f(&signals);
        }
    }

    /// Tells every live connection, and every later one, that the proxy shuts down.
    pub(crate) fn shutdown_all(&self) {
        let live: Vec<Arc<ConnSignals>> = {
            let live = self.live.lock().expect("registry lock is never poisoned");
            self.closed.store(true, Ordering::Release);
            live.values().filter_map(Weak::upgrade).collect()
        };
        for signals in live {
            signals.shutdown();
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry
            .live
            .lock()
            .expect("registry lock is never poisoned")
            .remove(&self.id);
    }
}
