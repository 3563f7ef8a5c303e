//! The event log: a bounded, ordered, in-memory log of [`ProxyEvent`]s, one per proxied request
//! (HTTP mode) or connection (TCP mode and the Toxiproxy proxies), counted into the proxy's
//! [`Metrics`] as each is pushed.
//!
//! The log is the runner's ground truth for "did the server do the work"; `GET /events` reads it
//! by cursor (`since`).

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::event::ProxyEvent;
use crate::metrics::Metrics;

/// A bounded, ordered, in-memory log of [`ProxyEvent`]s.
///
/// Holds at most `capacity` events; the oldest are dropped first. `seq` keeps counting across
/// drops and [`EventLog::clear`], so `since(seq)` stays a reliable cursor.
#[derive(Debug)]
pub struct EventLog {
    kept: Mutex<Kept>,
    capacity: usize,
    /// Counts every event as it is pushed (`GET /metrics`).
    metrics: Metrics,
}

/// The events kept (oldest first, at most `capacity`) and the sequence number of the next one.
#[derive(Debug, Default)]
struct Kept {
    events: VecDeque<ProxyEvent>,
    next_seq: u64,
}

impl EventLog {
    /// An empty log that keeps at most `capacity` events (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            kept: Mutex::new(Kept {
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
    /// [`Metrics`]; returns the seq. What the event keeps of the request's own text is cut to
    /// its bounds first ([`ProxyEvent::bound`]).
    pub fn push(&self, mut event: ProxyEvent) -> u64 {
        self.metrics.record(&event);
        event.bound();
        let mut kept = self.kept.lock().expect("event log lock is never poisoned");
        event.seq = kept.next_seq;
        kept.next_seq += 1;
        if kept.events.len() == self.capacity {
            kept.events.pop_front();
        }
        kept.events.push_back(event);
        kept.next_seq - 1
    }

    /// Applies `f` to the retained event `seq`; nothing when it was evicted or cleared.
    pub(crate) fn update(&self, seq: u64, f: impl FnOnce(&mut ProxyEvent)) {
        let mut kept = self.kept.lock().expect("event log lock is never poisoned");
        let first = kept.events.front().map_or(0, |e| e.seq);
        let Some(index) = seq.checked_sub(first) else {
            return;
        };
        if let Some(event) = kept.events.get_mut(index as usize) {
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
        self.page(since, usize::MAX)
    }

    /// The first `limit` retained events with `seq > since`, oldest first: a page, the next one
    /// from the last one's `seq`.
    pub fn page(&self, since: u64, limit: usize) -> Vec<ProxyEvent> {
        let kept = self.kept.lock().expect("event log lock is never poisoned");
        // seqs are consecutive in the deque, so the start index is arithmetic.
        let first = kept.events.front().map_or(0, |e| e.seq);
        let skip = since.saturating_add(1).saturating_sub(first) as usize;
        kept.events.iter().skip(skip).take(limit).cloned().collect()
    }

    /// The seq of the newest event, 0 when none was ever recorded.
    pub fn last_seq(&self) -> u64 {
        self.kept
            .lock()
            .expect("event log lock is never poisoned")
            .next_seq
            - 1
    }

    /// Forgets the retained events; seqs continue where they were.
    pub fn clear(&self) {
        self.kept
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
