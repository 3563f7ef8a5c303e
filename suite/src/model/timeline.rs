//! A check's requests on a time axis, for the HTML report's picture: each attempt with when it
//! started, how long it took, how it ended and what the proxy did to it — or, for a check with more
//! attempts than a picture can show one by one (a retry storm), counts per time bucket.

use serde::{Deserialize, Serialize};

/// How an attempt ended, as a reader sorts it (the contract decides which 409 is which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptEnd {
    /// A 2xx that was not a replay.
    Success,
    /// A 2xx marked as a replay (the contract's replay header).
    Replay,
    /// The contract's in-flight conflict status.
    InFlight,
    /// The contract's mismatch status.
    Mismatch,
    /// Any other 4xx.
    ClientError,
    /// A 5xx.
    ServerError,
    /// No response: refused, reset, cut off, timed out.
    NoResponse,
    /// A status in both the contract's in-flight and mismatch lists (an API that answers 409 for
    /// both): the status cannot say which it was.
    Conflict,
}

impl AttemptEnd {
    /// Every kind, in the order a legend lists them.
    /// `Conflict` comes last so that bucket counts keep the other kinds at their indices.
    pub const ALL: [AttemptEnd; 8] = [
        AttemptEnd::Success,
        AttemptEnd::Replay,
        AttemptEnd::InFlight,
        AttemptEnd::Mismatch,
        AttemptEnd::ClientError,
        AttemptEnd::ServerError,
        AttemptEnd::NoResponse,
        AttemptEnd::Conflict,
    ];

    /// Words for a legend.
    pub fn label(self) -> &'static str {
        match self {
            AttemptEnd::Success => "2xx",
            AttemptEnd::Replay => "2xx replayed",
            AttemptEnd::InFlight => "in flight",
            AttemptEnd::Mismatch => "mismatch",
            AttemptEnd::ClientError => "other 4xx",
            AttemptEnd::ServerError => "5xx",
            AttemptEnd::NoResponse => "no response",
            AttemptEnd::Conflict => "in flight or mismatch",
        }
    }
}

/// One request as the timeline shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// When it was sent, in ms from the check's first request.
    pub start_ms: u64,
    /// How long until the response ended or the request failed, in ms.
    pub duration_ms: u64,
    /// How it ended.
    pub end: AttemptEnd,
    /// The status, when a response arrived.
    pub status: Option<u16>,
    /// The fault the proxy applied (`drop_response`, …), if any.
    pub fault: Option<String>,
    /// The upstream's status as the proxy saw it, when the request went through the proxy and the
    /// upstream answered: "201 upstream, nothing to the client" is a lost response.
    pub upstream_status: Option<u16>,
}

/// The attempts of one step (or one client of a procedure), in send order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lane {
    /// The step's name.
    pub name: String,
    /// Its attempts.
    pub attempts: Vec<Span>,
}

/// Attempts that started in one slice of time, counted by how they ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// Start of the slice, in ms from the check's first request.
    pub start_ms: u64,
    /// Counts per ending, in [`AttemptEnd::ALL`] order.
    pub counts: [u32; AttemptEnd::ALL.len()],
    /// Attempts the proxy applied a fault to.
    pub faulted: u32,
}

/// A check's requests on a time axis: lanes of attempts, or (over [`Timeline::MAX_DRAWN`]
/// attempts) buckets of counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// From the first request's start to the last one's end, in ms.
    pub span_ms: u64,
    /// Every request the check sent.
    pub attempts: u64,
    /// One lane per step, in first-send order; empty when aggregated.
    #[serde(default)]
    pub lanes: Vec<Lane>,
    /// Width of one bucket, in ms (0 when not aggregated).
    #[serde(default)]
    pub bucket_ms: u64,
    /// Counts per time slice, when there were too many attempts to draw one by one.
    #[serde(default)]
    pub buckets: Vec<Bucket>,
    /// Lanes behind the buckets (e.g. 1000 storm clients).
    #[serde(default)]
    pub lanes_aggregated: u64,
}

impl Timeline {
    /// The most attempts drawn one by one; beyond it the timeline is buckets of counts.
    pub const MAX_DRAWN: usize = 400;
    /// How many buckets an aggregated timeline has.
    pub const BUCKETS: u64 = 60;

    /// Builds the timeline of `lanes` (attempts in send order, per lane in first-send order).
    pub fn of(lanes: Vec<Lane>) -> Self {
        let attempts: usize = lanes.iter().map(|l| l.attempts.len()).sum();
        let span_ms = lanes
            .iter()
            .flat_map(|l| &l.attempts)
            .map(|a| a.start_ms + a.duration_ms)
            .max()
            .unwrap_or(0);
        if attempts <= Self::MAX_DRAWN {
            return Self {
                span_ms,
                attempts: attempts as u64,
                lanes,
                ..Self::default()
            };
        }
        let bucket_ms = (span_ms / Self::BUCKETS).max(1);
        let mut buckets: Vec<Bucket> = (0..=span_ms / bucket_ms)
            .map(|i| Bucket {
                start_ms: i * bucket_ms,
                counts: [0; AttemptEnd::ALL.len()],
                faulted: 0,
            })
            .collect();
        for a in lanes.iter().flat_map(|l| &l.attempts) {
            let i = ((a.start_ms / bucket_ms) as usize).min(buckets.len() - 1);
            let end = AttemptEnd::ALL
                .iter()
                .position(|e| *e == a.end)
                .expect("ALL lists every ending");
            buckets[i].counts[end] += 1;
            buckets[i].faulted += u32::from(a.fault.is_some());
        }
        Self {
            span_ms,
            attempts: attempts as u64,
            lanes: Vec::new(),
            bucket_ms,
            buckets,
            lanes_aggregated: lanes.len() as u64,
        }
    }
}
