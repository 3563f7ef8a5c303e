//! How a check shares the target with the checks running beside it.
//!
//! Most checks touch only their own resources and keys (each check has its own marker), so they
//! run side by side. A check runs alone only for a reason it can state, and only for as long as
//! the reason lasts:
//! - a `crash` or `restart` hook cuts every other check's requests, but once the target is back
//!   nothing the check does reaches another's: it runs alone through its last such hook, then
//!   beside the others (its wait for the in-flight TTL overlaps theirs);
//! - a `fail_next` hook fails whichever mutating request comes next, and the global
//!   `side_effects` counters move with every other check's creates: alone from start to end;
//! - `exclusive: true`: alone from start to end, for the reason its author had.

use super::{HookName, Scenario};

/// Why a check runs alone from start to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AloneReason {
    /// The scenario says `exclusive: true`.
    Declared,
    /// A `fail_next` hook fails whichever mutating request comes next, another check's too.
    FailNext,
    /// An assertion reads the global `side_effects` counters, which other checks' creates move.
    SideEffects,
    /// A `crash` with no `restart` after it: the target stays down for every other check.
    CrashWithoutRestart,
}

impl AloneReason {
    /// The reason as a sentence fragment ("it reads …").
    pub fn text(self) -> &'static str {
        match self {
            Self::Declared => "it says `exclusive: true`",
            Self::FailNext => "its `fail_next` hook fails whichever create comes next",
            Self::SideEffects => "it reads the global side-effect counters",
            Self::CrashWithoutRestart => "it crashes the target and does not restart it",
        }
    }
}

/// How a check shares the target ([`Scenario::isolation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Beside any other check.
    Shared,
    /// Alone until the step at this 0-based position (its last `crash` or `restart` hook) has
    /// run, then beside the others.
    AloneThrough(usize),
    /// Alone from start to end.
    Alone(AloneReason),
}

impl Scenario {
    /// How this check shares the target. `runs_hook` says whether a hook step really calls the
    /// target's hook: a profile without the hook may do the same with a request variant
    /// (`fails_once`, `hangs`), which touches only the check's own request.
    pub fn isolation(&self, runs_hook: impl Fn(HookName) -> bool) -> Isolation {
        if self.exclusive {
            return Isolation::Alone(AloneReason::Declared);
        }
        if self
            .assertions
            .iter()
            .any(|a| a.value.side_effects.is_some())
        {
            return Isolation::Alone(AloneReason::SideEffects);
        }
        let hooks: Vec<(usize, HookName)> = self
            .steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.value.hook.map(|h| (i, h)))
            .filter(|(_, h)| runs_hook(*h))
            .collect();
        if hooks.iter().any(|(_, h)| *h == HookName::FailNext) {
            return Isolation::Alone(AloneReason::FailNext);
        }
        match hooks.last() {
            None => Isolation::Shared,
            Some((_, HookName::Crash)) => Isolation::Alone(AloneReason::CrashWithoutRestart),
            Some((i, _)) => Isolation::AloneThrough(*i),
        }
    }

    /// Whether the check waits out the in-flight TTL (a `slow` request, or a retry until the key
    /// is released): such checks start first, so their wait overlaps the other checks.
    pub fn waits_out_ttl(&self) -> bool {
        self.steps.iter().any(|s| {
            matches!(
                s.value.body,
                super::BodyVariant::Slow | super::BodyVariant::SlowIfAny
            ) || s
                .value
                .retry
                .as_ref()
                .is_some_and(|r| r.until.contains(&super::StatusPattern::Released))
        })
    }
}
