//! What the runner tells reporters as a run progresses.

use super::{CheckOutcome, RunReport};

/// What the runner tells reporters as a run progresses (model: nextest's reporter events).
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// The run begins: which target, which contract, how many checks.
    RunStarted {
        /// Target profile name.
        target: String,
        /// Contract preset name.
        contract: String,
        /// Number of checks that will run (including ones that will SKIP).
        total: usize,
    },
    /// A check begins.
    CheckStarted {
        /// The check's id.
        id: String,
    },
    /// A check ended with this outcome.
    CheckFinished(Box<CheckOutcome>),
    /// The run ended.
    RunFinished(Box<RunReport>),
}
