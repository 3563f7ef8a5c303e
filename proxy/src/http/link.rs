//! The upstream link ([`UpstreamLink`]): the upstream connections of one downstream connection.

use std::sync::{Arc, Mutex};

use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::body::RequestBody;
use super::conn_signals::ConnSignals;

/// One upstream connection's I/O half; it is polled by the downstream connection's task.
pub(super) type UpstreamConn = http1::Connection<TokioIo<TcpStream>, RequestBody>;

/// The upstream connections of one downstream connection.
///
/// A downstream connection gets its own upstream connection (made on its first request, reused
/// by the next ones), and that connection is driven inside the downstream connection's task: a
/// request and its response never hop between tasks or threads, which is what makes the
/// pass-through path cheap. A second simultaneous send (`duplicate` in concurrent mode) opens
/// another connection. Everything closes with the downstream connection.
#[derive(Debug)]
pub(crate) struct UpstreamLink {
    idle: Mutex<Option<SendRequest<RequestBody>>>,
    /// Connections opened but not yet taken by the task; `None` once the task is gone.
    pending: Mutex<Option<Vec<UpstreamConn>>>,
    signals: Arc<ConnSignals>,
}

impl UpstreamLink {
    /// A link whose new connections the task behind `signals` drives.
    pub(super) fn new(signals: Arc<ConnSignals>) -> Self {
        Self {
            idle: Mutex::new(None),
            pending: Mutex::new(Some(Vec::new())),
            signals,
        }
    }

    /// The idle connection's sender, unless there is none or it closed.
    pub(super) fn take(&self) -> Option<SendRequest<RequestBody>> {
        self.idle
            .lock()
            .expect("link lock is never poisoned")
            .take()
            .filter(|s| !s.is_closed())
    }

    /// Keeps `sender` for the next request.
    pub(super) fn put(&self, sender: SendRequest<RequestBody>) {
        *self.idle.lock().expect("link lock is never poisoned") = Some(sender);
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
