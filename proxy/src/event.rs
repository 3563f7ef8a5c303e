//! The event log: one [`ProxyEvent`] per proxied request (HTTP mode) or connection (TCP mode and
//! the Toxiproxy proxies).
//!
//! The log is the runner's ground truth for "did the server do the work": it records the rule that
//! applied, the fault, what the upstream answered and whether the downstream client got it.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::metrics::Metrics;

/// Which side of the proxy a failure happened on, in pingora's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The client side: the connection the request arrived on.
    Downstream,
    /// The server side: the connection to the API under test.
    Upstream,
}

/// What happened to one request (or, in TCP mode, one connection).
///
/// Serialised as JSON by the control API (`GET /events`). An event is recorded when the exchange is
/// over: the response was delivered, a fault ended it, or the downstream client went away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyEvent {
    /// Position in the log: increases by one per event, never reused (not even by a reset).
    pub seq: u64,
    /// When the request arrived, RFC 3339 in UTC.
    pub at: String,
    /// The request method (`POST`); empty in TCP mode.
    pub method: String,
    /// The request path and query as sent by the client; empty in TCP mode.
    pub path: String,
    /// The idempotency key where [`crate::ProxyConfig::key_at`] puts it (the `Idempotency-Key`
    /// header by default), as sent, if any; bytes that are not UTF-8 shown as `\xNN`.
    pub idempotency_key: Option<String>,
    /// Why the key could not be read from the request, where it could not (a body longer than the
    /// proxy reads, or not JSON): the request may carry one nobody saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_unread: Option<String>,
    /// The value of the `X-Idemspec-Step` control header, if any (stripped before forwarding).
    pub step: Option<String>,
    /// The name of the rule that applied, if any.
    pub rule: Option<String>,
    /// The fault verb applied (`drop_response`), if any.
    pub fault: Option<String>,
    /// How many times the request was sent upstream: 0 (refused, synthetic answer, upstream down
    /// before sending), 1, or 2 (`duplicate`). A copy counts once handed to an upstream
    /// connection, so a client that gave up before the answer still shows its send.
    pub upstream_sends: u8,
    /// The status of the (first) upstream response, when one arrived. When the client gave up
    /// first, the event is recorded at once and this is filled in when the upstream answers.
    pub upstream_status: Option<u16>,
    /// Why the exchange failed, when it did (upstream unreachable, reset mid-body, …).
    pub upstream_error: Option<String>,
    /// Which side `upstream_error` happened on.
    pub error_side: Option<Side>,
    /// The status the downstream client was sent, if a response head was sent at all.
    pub client_status: Option<u16>,
    /// Body bytes delivered to the client (TCP mode: all bytes sent to the client).
    pub client_bytes: u64,
    /// Whether the client got the complete response.
    pub client_complete: bool,
    /// Whether the client went away before the exchange was over (not because of a fault).
    pub client_disconnected: bool,
    /// Milliseconds from the request's arrival until the event was recorded.
    pub duration_ms: u64,
    /// The Toxiproxy proxy the connection came through (`crate::toxiproxy`), by name; `None`
    /// for idemspec's own proxies. For such a connection `rule` and `fault` are the names and
    /// types of the toxics that acted on it, joined by `,`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
}

impl ProxyEvent {
    /// A placeholder with no allocation, left behind when an event moves into the log.
    pub(crate) const EMPTY: ProxyEvent = ProxyEvent {
        seq: 0,
        at: String::new(),
        method: String::new(),
        path: String::new(),
        idempotency_key: None,
        key_unread: None,
        step: None,
        rule: None,
        fault: None,
        upstream_sends: 0,
        upstream_status: None,
        upstream_error: None,
        error_side: None,
        client_status: None,
        client_bytes: 0,
        client_complete: false,
        client_disconnected: false,
        duration_ms: 0,
        proxy: None,
    };

    /// An event for an exchange starting now, with nothing recorded yet.
    pub(crate) fn starting_now() -> Self {
        let at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Self { at, ..Self::EMPTY }
    }
}

/// A bounded, ordered, in-memory log of [`ProxyEvent`]s.
///
/// Holds at most `capacity` events; the oldest are dropped first. `seq` keeps counting across
/// drops and [`EventLog::clear`], so `since(seq)` stays a reliable cursor.
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<Inner>,
    capacity: usize,
    /// Counts every event as it is pushed (`GET /metrics`).
    metrics: Metrics,
}

#[derive(Debug, Default)]
struct Inner {
    events: VecDeque<ProxyEvent>,
    next_seq: u64,
}

impl EventLog {
    /// An empty log that keeps at most `capacity` events (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                next_seq: 1,
            }),
            capacity: capacity.max(1),
            metrics: Metrics::default(),
        }
    }

    /// The metrics counted from this log's events.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Appends `event`, assigning its `seq` (the first event gets 1), and counts it in the
    /// [`Metrics`]; returns the seq.
    pub fn push(&self, mut event: ProxyEvent) -> u64 {
        self.metrics.record(&event);
        let mut inner = self.inner.lock().expect("event log lock is never poisoned");
        event.seq = inner.next_seq;
        inner.next_seq += 1;
        if inner.events.len() == self.capacity {
            inner.events.pop_front();
        }
        inner.events.push_back(event);
        inner.next_seq - 1
    }

    /// Applies `f` to the retained event `seq`; nothing when it was evicted or cleared.
    pub(crate) fn update(&self, seq: u64, f: impl FnOnce(&mut ProxyEvent)) {
        let mut inner = self.inner.lock().expect("event log lock is never poisoned");
        let first = inner.events.front().map_or(0, |e| e.seq);
        let Some(index) = seq.checked_sub(first) else {
            return;
        };
        if let Some(event) = inner.events.get_mut(index as usize) {
            if event.seq == seq {
                f(event);
            }
        }
    }

    /// Every retained event, oldest first.
    pub fn all(&self) -> Vec<ProxyEvent> {
        self.since(0)
    }

    /// The retained events with `seq > since`, oldest first.
    pub fn since(&self, since: u64) -> Vec<ProxyEvent> {
        let inner = self.inner.lock().expect("event log lock is never poisoned");
        // seqs are consecutive in the deque, so the start index is arithmetic.
        let first = inner.events.front().map_or(0, |e| e.seq);
        let skip = since.saturating_add(1).saturating_sub(first) as usize;
        inner.events.iter().skip(skip).cloned().collect()
    }

    /// The seq of the newest event, 0 when none was ever recorded.
    pub fn last_seq(&self) -> u64 {
        self.inner
            .lock()
            .expect("event log lock is never poisoned")
            .next_seq
            - 1
    }

    /// Forgets the retained events; seqs continue where they were.
    pub fn clear(&self) {
        self.inner
            .lock()
            .expect("event log lock is never poisoned")
            .events
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> ProxyEvent {
        ProxyEvent::starting_now()
    }

    #[test]
    fn since_is_a_cursor_across_eviction_and_clear() {
        let log = EventLog::new(3);
        for _ in 0..5 {
            log.push(event());
        }
        let seqs = |v: Vec<ProxyEvent>| v.into_iter().map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(log.all()), [3, 4, 5]);
        assert_eq!(seqs(log.since(4)), [5]);
        assert_eq!(seqs(log.since(1)), [3, 4, 5]);
        assert_eq!(seqs(log.since(5)), Vec::<u64>::new());
        log.clear();
        assert_eq!(log.push(event()), 6);
        assert_eq!(seqs(log.since(0)), [6]);
    }
}
