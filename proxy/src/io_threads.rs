//! Thread-per-core serving: a pool of single-threaded tokio runtimes, each connection pinned to
//! one of them (round-robin at accept), as haproxy pins a connection to one of its threads.
//!
//! A connection's request, its upstream connection and its response then never leave one
//! thread: no work stealing, no cross-thread wake-ups (futex) and no socket state bouncing
//! between cores, which is what a multi-threaded runtime pays per exchange under load.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinSet};

/// The pool. Dropping it (or [`IoThreads::stop`]) ends every thread; tasks still on its runtime are
/// dropped with it (the accept loop drains its connections first, see `server::run`).
pub(crate) struct IoThreads {
    handles: Vec<Handle>,
    next: AtomicUsize,
    stops: Mutex<Vec<oneshot::Sender<()>>>,
}

impl IoThreads {
    /// Starts `n` threads (n ≥ 1), each running a current-thread runtime with I/O and timers.
    ///
    /// Errors: a thread or runtime could not be created.
    pub(crate) fn start(n: usize) -> std::io::Result<Self> {
        let mut handles = Vec::with_capacity(n);
        let mut stops = Vec::with_capacity(n);
        for i in 0..n {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(rt.handle().clone());
            let (stop, stopped) = oneshot::channel::<()>();
            stops.push(stop);
            std::thread::Builder::new()
                .name(format!("idemspec-proxy-io-{i}"))
                .spawn(move || {
                    rt.block_on(async {
                        let _ = stopped.await;
                    });
                })?;
        }
        Ok(Self {
            handles,
            next: AtomicUsize::new(0),
            stops: Mutex::new(stops),
        })
    }

    /// Spawns a connection's task on the next worker, into `set`.
    pub(crate) fn spawn_into<F>(&self, set: &mut JoinSet<()>, task: F) -> AbortHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        set.spawn_on(task, &self.handles[i])
    }

    /// Ends every I/O thread (their runtimes drop what is left on them). Idempotent.
    pub(crate) fn stop(&self) {
        for stop in self
            .stops
            .lock()
            .expect("worker lock is never poisoned")
            .drain(..)
        {
            let _ = stop.send(());
        }
    }
}

impl std::fmt::Debug for IoThreads {
    // Every runtime handle and stop sender would print in full (a handle's Debug ran to
    // 175 000 characters with 1 025 threads): the count says what matters.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoThreads")
            .field("threads", &self.handles.len())
            .finish_non_exhaustive()
    }
}

impl Drop for IoThreads {
    fn drop(&mut self) {
        self.stop();
    }
}
