//! The run's quiet lock: how checks share the target ([`Isolation`]).
//!
//! Every check holds the lock while it runs: shared where it runs beside others, exclusively
//! where it disturbs them (a crash, `fail_next`, the global side-effect counters). A check alone
//! only through its crash and restart hooks gives up its exclusive hold after the last of them
//! and keeps a shared one, so its wait for the in-flight TTL overlaps the other checks.

use std::sync::Arc;

use idemspec_scenarios::scenario::Isolation;
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// The run's lock; cloned into every check.
#[derive(Clone, Default)]
pub struct Quiet(Arc<RwLock<()>>);

/// A check's hold on the [`Quiet`] lock, released when dropped.
pub enum Hold {
    /// Beside other checks.
    Shared(
        #[allow(dead_code, reason = "held for what its drop releases")] OwnedRwLockReadGuard<()>,
    ),
    /// Alone.
    Alone(OwnedRwLockWriteGuard<()>),
}

impl Quiet {
    /// Waits for the hold `isolation` starts with: alone unless the check is [`Isolation::Shared`].
    pub async fn hold(&self, isolation: Isolation) -> Hold {
        match isolation {
            Isolation::Shared => Hold::Shared(self.0.clone().read_owned().await),
            Isolation::AloneThrough(_) | Isolation::Alone(_) => {
                Hold::Alone(self.0.clone().write_owned().await)
            }
        }
    }
}

impl Hold {
    /// Lets other checks run beside this one from now on (a no-op when they already may).
    pub fn share(self) -> Self {
        match self {
            Self::Alone(guard) => Self::Shared(guard.downgrade()),
            shared @ Self::Shared(_) => shared,
        }
    }
}
