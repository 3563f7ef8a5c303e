//! A run's bookkeeping from its first event to its report: the clock, the run events reporters
//! read, and the counts per verdict.

use std::time::Instant;

use crate::model::{CheckOutcome, RunEvent, RunReport, RunStats, TlsReached, TlsServed};

/// Where run events go: reporters read the other end. A closed receiver is ignored.
pub type EventSink = tokio::sync::mpsc::UnboundedSender<RunEvent>;

/// One run being recorded: started when the driver starts, it announces the run and each check
/// to the [`EventSink`] and assembles the [`RunReport`].
#[derive(Debug, Clone)]
pub struct RunRecord {
    events: EventSink,
    started: Instant,
    started_at: String,
    target: String,
    contract: String,
    /// How the target was reached over TLS ([`RunRecord::reached_over_tls`]).
    tls: Vec<TlsReached>,
    /// Whether the target's certificates went unverified.
    tls_unverified: bool,
    /// How the command was served over TLS ([`RunRecord::served_over_tls`]).
    served_tls: Option<TlsServed>,
}

impl RunRecord {
    /// Starts the run's clock (RFC 3339 wall time for the report, a monotonic one for its
    /// duration); nothing is announced yet.
    pub fn new(events: EventSink) -> Self {
        Self {
            events,
            started: Instant::now(),
            started_at: time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            target: String::new(),
            contract: String::new(),
            tls: Vec::new(),
            tls_unverified: false,
            served_tls: None,
        }
    }

    /// Records how the target was reached over TLS (one entry per `https://` base URL) and
    /// whether its certificates went unverified, for the report.
    pub fn reached_over_tls(&mut self, reached: Vec<TlsReached>, unverified: bool) {
        self.tls = reached;
        self.tls_unverified = unverified;
    }

    /// Records that `idemspec client` served the command over TLS, and how, for the report.
    pub fn served_over_tls(&mut self, served: TlsServed) {
        self.served_tls = Some(served);
    }

    /// When the run started (its deadlines count from here).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Announces the run: `total` checks of `target` under `contract` (a preset's name).
    pub fn announce(&mut self, target: &str, contract: &str, total: usize) {
        self.target = target.to_owned();
        self.contract = contract.to_owned();
        self.send(RunEvent::RunStarted {
            target: target.to_owned(),
            contract: contract.to_owned(),
            total,
        });
    }

    /// Announces that check `id` started.
    pub fn check_started(&self, id: &str) {
        self.send(RunEvent::CheckStarted { id: id.to_owned() });
    }

    /// Announces a check's outcome.
    pub fn check_finished(&self, outcome: &CheckOutcome) {
        self.send(RunEvent::CheckFinished(Box::new(outcome.clone())));
    }

    /// The report of `checks` (in the order reported), with the log of a target idemspec
    /// started, announced as the run's last event.
    pub fn finish(self, checks: Vec<CheckOutcome>, target_log: Option<String>) -> RunReport {
        let mut stats = RunStats::default();
        for c in &checks {
            stats.record(c);
        }
        let report = RunReport {
            version: RunReport::VERSION,
            target: self.target.clone(),
            contract: self.contract.clone(),
            started_at: self.started_at.clone(),
            duration_ms: self.started.elapsed().as_millis() as u64,
            checks,
            stats,
            target_log,
            tls: self.tls.clone(),
            served_tls: self.served_tls.clone(),
            warnings: self
                .tls_unverified
                .then(|| RunReport::UNVERIFIED_WARNING.to_owned())
                .into_iter()
                .collect(),
        };
        self.send(RunEvent::RunFinished(Box::new(report.clone())));
        report
    }

    fn send(&self, event: RunEvent) {
        // A closed receiver only means nobody reads the progress.
        let _ = self.events.send(event);
    }
}
