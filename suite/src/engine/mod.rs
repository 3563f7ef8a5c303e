//! What `idemspec run` and `idemspec client` share to judge checks: what a check is ([`About`]),
//! the verdict model and its one grader (`grade`), the selection by `--only` and `--skip`
//! (`select`), and the bookkeeping of a run from its first event to its report (`record`).
//!
//! The two drivers (`runner` for an API, `client_check` for an HTTP client) differ in what they
//! send and observe; what a finding means, how findings grade into a verdict, which checks run and
//! what a run reports are decided here, once.

mod grade;
mod record;
mod select;

pub use grade::{grade, Finding, Graded, Judgement};
pub use record::{EventSink, RunRecord};
pub use select::{select, SelectError};

use idemspec_scenarios::Level;

/// What a check is: its id, title, level and the source of its rule.
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
