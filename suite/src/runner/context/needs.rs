//! What a check must prepare and observe around its steps for what judges it: counters, counts,
//! a list probe before the first DELETE, and the twins of retries whose lock is judged.

use std::time::Duration;

/// What a check must observe behind the API for its assertions, merged over all of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Needs {
    /// Side-effect counters, read before the first step and after the last.
    pub counters: bool,
    /// Principals whose resources are counted after the steps (by the name the assertion used;
    /// `None`: A).
    pub counts: Vec<Option<String>>,
    /// Probe the list just before the first DELETE, for this principal's count after it (after a
    /// delete an empty list proves nothing about the profile's `list`).
    pub list_before_delete: Option<Option<String>>,
    /// Retried steps whose unanswered attempts get a twin (see [`twin_step`]): the steps a
    /// `lock_released` judges.
    pub twins: Vec<String>,
}

impl Needs {
    /// Adds what `other` needs.
    pub(crate) fn merge(&mut self, other: Needs) {
        self.counters |= other.counters;
        for t in other.twins {
            if !self.twins.contains(&t) {
                self.twins.push(t);
            }
        }
        for p in other.counts {
            if !self.counts.contains(&p) {
                self.counts.push(p);
            }
        }
        if self.list_before_delete.is_none() {
            self.list_before_delete = other.list_before_delete;
        }
    }
}

/// How long an attempt of a retry whose step a `lock_released` judges may go unanswered before its
/// twin is sent (a correct API refuses a same-key retry within milliseconds).
pub(crate) const TWIN_AFTER: Duration = Duration::from_secs(1);

/// The step name a retry's twins are recorded under (`retry` → `retry-twin`).
///
/// An attempt of a retry that `lock_released` judges, not answered after [`TWIN_AFTER`], gets a
/// twin: the same request sent beside it, with what is left of the attempt's timeout. No answer
/// means either that the key was free and the attempt's handler is working (then the twin is
/// refused as in flight, while the attempt is still unanswered), or that the API makes same-key
/// requests wait on the abandoned record (then the twin waits too, or is refused only as late as
/// the attempt would have been); the twin's answer tells the two apart for `lock_released`.
pub(crate) fn twin_step(step: &str) -> String {
    format!("{step}-twin")
}
