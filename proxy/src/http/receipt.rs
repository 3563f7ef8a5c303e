//! What an upstream exchange tells its request's event when the client left before it ended.
//!
//! A client that gives up (times out, disconnects) while its request is at the upstream ends the
//! request's context early, and the exchange finishes in the background (`detach`). Without a
//! receipt the event would say the upstream was never reached — the opposite of what a
//! `hang {forward: true}` or a client timeout is staged to show. The [`Receipt`] counts the copies
//! handed to an upstream connection, and records the upstream's status into the event, even when
//! it arrives after the event was recorded.

use std::sync::{Arc, Mutex};

use crate::event::ProxyEvent;
use crate::event_log::EventLog;

/// Shared by a request's context and its upstream exchanges.
#[derive(Debug)]
pub(crate) struct Receipt {
    log: Arc<EventLog>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Copies handed to an upstream connection and not provably unsent.
    handed: u8,
    /// The first upstream status.
    status: Option<u16>,
    /// The event's seq, once recorded for a client that left.
    seq: Option<u64>,
}

impl Receipt {
    /// A receipt whose events go to `log`.
    pub(crate) fn new(log: Arc<EventLog>) -> Arc<Self> {
        Arc::new(Self {
            log,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("receipt lock is never poisoned")
    }

    /// The log the request's event goes to.
    pub(crate) fn log(&self) -> &EventLog {
        &self.log
    }

    /// A copy of the request was handed to an upstream connection: it may reach the upstream.
    pub(crate) fn handed(&self) {
        let mut state = self.state();
        state.handed = state.handed.saturating_add(1);
    }

    /// A handed copy provably never left (hyper gave it back unsent).
    pub(crate) fn unsent(&self) {
        let mut state = self.state();
        state.handed = state.handed.saturating_sub(1);
    }

    /// The upstream answered with `status` (the first answer counts). An event already recorded
    /// for a client that left gets the status now.
    pub(crate) fn answered(&self, status: u16) {
        let mut state = self.state();
        if state.status.is_some() {
            return;
        }
        state.status = Some(status);
        if let Some(seq) = state.seq {
            self.log.update(seq, |event| {
                event.upstream_status.get_or_insert(status);
            });
        }
    }

    /// Records the event of a request whose client left, with the copies handed so far and the
    /// upstream's status if it is known; a later answer updates it.
    pub(crate) fn record_orphan(&self, mut event: ProxyEvent) {
        let mut state = self.state();
        event.upstream_sends = event.upstream_sends.max(state.handed);
        if let Some(status) = state.status {
            event.upstream_status.get_or_insert(status);
        }
        state.seq = Some(self.log.push(event));
    }
}
