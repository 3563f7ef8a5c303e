//! The upstream link ([`UpstreamLink`]): the upstream connections of one downstream connection.

use std::sync::{Arc, Mutex};

use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;

use super::body::RequestBody;
use super::conn_signals::ConnSignals;
use super::originate::Identity;
use super::stream::UpStream;

/// One upstream connection's I/O half; it is polled by the downstream connection's task.
pub(super) type UpstreamConn = http1::Connection<TokioIo<UpStream>, RequestBody>;

/// The most idle upstream connections a downstream connection keeps: one per identity its
/// requests showed, up to this many (the oldest goes first).
const IDLE_LIMIT: usize = 8;

/// The upstream connections of one downstream connection.
///
/// A downstream connection gets its own upstream connection (made on its first request, reused
/// by the next ones), and that connection is driven inside the downstream connection's task: a
/// request and its response never hop between tasks or threads, which is what makes the
/// pass-through path cheap. A second simultaneous send (`duplicate` in concurrent mode) opens
/// another connection. Everything closes with the downstream connection. Over TLS an idle
/// connection is reused only by a request of the identity it showed (the same client
/// certificate, or none), so a connection keeps one idle connection per identity.
#[derive(Debug)]
pub(crate) struct UpstreamLink {
    idle: Mutex<Vec<(Identity, SendRequest<RequestBody>)>>,
    /// Connections opened but not yet taken by the task; `None` once the task is gone.
    pending: Mutex<Option<Vec<UpstreamConn>>>,
    signals: Arc<ConnSignals>,
}

impl UpstreamLink {
    /// A link whose new connections the task behind `signals` drives.
    pub(super) fn new(signals: Arc<ConnSignals>) -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
            pending: Mutex::new(Some(Vec::new())),
            signals,
        }
    }

    /// The sender of an idle connection that showed `identity`, unless there is none open.
    pub(super) fn take(&self, identity: Identity) -> Option<SendRequest<RequestBody>> {
        let mut idle = self.idle.lock().expect("link lock is never poisoned");
        idle.retain(|(_, sender)| !sender.is_closed());
        let at = idle.iter().position(|(shown, _)| *shown == identity)?;
        Some(idle.remove(at).1)
    }

    /// Keeps `sender`, a connection that showed `identity`, for the next request of it.
    pub(super) fn put(&self, identity: Identity, sender: SendRequest<RequestBody>) {
        let mut idle = self.idle.lock().expect("link lock is never poisoned");
        if idle.len() >= IDLE_LIMIT {
            idle.remove(0);
        }
        idle.push((identity, sender));
    }

    /// Hands a new connection to the task (or, if it is gone, to a task of its own).
    pub(super) fn adopt(&self, conn: UpstreamConn) {
        let mut pending = self.pending.lock().expect("link lock is never poisoned");
        match pending.as_mut() {
            Some(pending) => pending.push(conn),
            None => {
                tokio::spawn(conn);
                return;
            }
        }
        drop(pending);
        self.signals.new_upstream();
    }

    /// Moves the connections handed over so far into `into`; with `close`, later ones get a
    /// task of their own.
    pub(super) fn drain(&self, into: &mut impl Extend<UpstreamConn>, close: bool) {
        let mut pending = self.pending.lock().expect("link lock is never poisoned");
        if let Some(conns) = pending.as_mut() {
            into.extend(conns.drain(..));
        }
        if close {
            *pending = None;
        }
    }
}
