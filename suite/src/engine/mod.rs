//! The one check engine of `idemspec run` and `idemspec client`: what a check is ([`About`], the
//! [`Check`] trait), the verdict model and its one grader (`grade`), the selection by `--only` and
//! `--skip` (`select`), the driver that runs checks alone or side by side (`drive`, each check
//! holding its weight of the run's one semaphore, `slots`), and the bookkeeping of a run from its first event to its report
//! (`record`).
//!
//! `runner` (an API) and `client_check` (an HTTP client) differ in what a check sends and
//! observes; what a finding means, how findings grade into a verdict, which checks run, in what
//! order and beside what, and what a run reports are decided here, once.

mod drive;
mod grade;
mod record;
mod select;
mod slots;

pub use drive::{drive, Check};
pub use grade::{grade, Finding, Graded, Judgement};
pub use record::{EventSink, RunRecord};
pub use select::{select, SelectError};
pub use slots::{Hold, Slots, Weight};

use idemspec_scenarios::Level;

use crate::model::{CheckOutcome, Evidence, Timeline};

/// What a check is: its id, title, level and the source of its rule.
///
/// [`About::outcome`] makes the report's record of it from its graded findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct About {
    /// Its id, e.g. `lost-response`.
    pub id: String,
    /// One-line title.
    pub title: String,
    /// MUST or SHOULD: the level a broken finding counts at unless it says otherwise.
    pub level: Level,
    /// The rule's source, e.g. `article: retries`: cited after a broken finding unless it names
    /// its own.
    pub reference: String,
}

impl About {
    /// The check's outcome as reports show it: `graded`'s verdict and sentence, `notes` (the
    /// graded notes and whatever the driver adds), the `evidence` its driver picked, how long it
    /// took, and its requests on a time axis.
    pub fn outcome(
        self,
        graded: Graded,
        notes: Vec<String>,
        evidence: Vec<Evidence>,
        duration_ms: u64,
        timeline: Timeline,
    ) -> CheckOutcome {
        CheckOutcome {
            id: self.id,
            title: self.title,
            level: self.level,
            reference: self.reference,
            verdict: graded.verdict,
            summary: graded.summary,
            notes,
            evidence,
            duration_ms,
            timeline,
            claims: graded.claims,
            audit: Vec::new(),
            documented: None,
        }
    }
}
