//! Hooks: the profile's `crash`, `restart` and `fail_next`, each a shell command or an HTTP request,
//! behind one trait so `--reference` can supply its own (a real SIGKILL and respawn).

mod profile;

pub use profile::ProfileHooks;

use futures::future::BoxFuture;
use idemspec_scenarios::scenario::HookName;

/// Why a hook did not do its job; a check that needed it is UNKNOWN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// The profile declares no such hook.
    #[error("the target profile declares no `{0}` hook")]
    Missing(&'static str),
    /// The command failed or the request did not answer 2xx.
    #[error("hook `{hook}` failed: {reason}")]
    Failed {
        /// The hook's name.
        hook: &'static str,
        /// What went wrong.
        reason: String,
    },
}

/// Runs hooks by name.
pub trait HookRunner: Send + Sync {
    /// Runs the hook; `Ok` means it did its job as far as can be told.
    fn run(&self, hook: HookName) -> BoxFuture<'_, Result<(), HookError>>;
    /// Whether the hook exists.
    fn has(&self, hook: HookName) -> bool;
    /// Whether `crash` arms a crash of the next mutating request (rather than killing at once).
    fn crash_arms(&self) -> bool;
}

/// The hook's name as written in profiles.
pub fn hook_name(hook: HookName) -> &'static str {
    match hook {
        HookName::Crash => "crash",
        HookName::Restart => "restart",
        HookName::FailNext => "fail_next",
    }
}
