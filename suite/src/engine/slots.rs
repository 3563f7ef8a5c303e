//! The run's one semaphore: how much runs at once, and which checks run alone.
//!
//! A run has a number of slots (`run`: `--jobs` within the profile's `checks_at_once`; `client`:
//! `--parallelism`, or one when the client keeps a key journal). A check states its [`Weight`],
//! as nextest's threads-required: a check beside others takes one slot, a check that disturbs
//! the others (a crash, `fail_next`, the global side-effect counters) takes them all, and a
//! check whose cost is in parts (a client check's runs of the command) holds none itself and
//! takes each part's weight as it runs it ([`Hold::take`]). A check alone only through its crash
//! and restart hooks gives back all but one slot after the last of them ([`Hold::share`]), so
//! its wait for the in-flight TTL overlaps the other checks. The semaphore is fair: a check that
//! waits for every slot is not overtaken by the ones that come after it.

use std::sync::Arc;

use idemspec_scenarios::scenario::Isolation;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many of the run's slots a check (or a part of one) holds while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// This many, at most all of them; `Slots(0)` runs at once and holds nothing.
    Slots(u32),
    /// Every slot: nothing else runs beside it.
    All,
}

impl Weight {
    /// The weight `isolation` asks for: one slot beside others, every slot alone.
    pub fn of(isolation: Isolation) -> Self {
        match isolation {
            Isolation::Shared => Self::Slots(1),
            Isolation::AloneThrough(_) | Isolation::Alone(_) => Self::All,
        }
    }
}

/// The run's slots: one semaphore, cloned into every check.
#[derive(Clone)]
pub struct Slots {
    semaphore: Arc<Semaphore>,
    capacity: u32,
}

/// Slots held from a run's [`Slots`], given back when dropped.
pub struct Hold {
    slots: Slots,
    #[allow(dead_code, reason = "held for what its drop gives back")]
    permit: Option<OwnedSemaphorePermit>,
}

/// The most slots a run has: far beyond any parallelism a machine runs, within what one
/// acquisition may ask for.
const MOST: usize = 1 << 20;

impl Slots {
    /// A run of `capacity` slots (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, MOST);
        Self {
            semaphore: Arc::new(Semaphore::new(capacity)),
            capacity: capacity as u32,
        }
    }

    /// Waits until `weight`'s slots are free and holds them.
    pub async fn hold(&self, weight: Weight) -> Hold {
        let n = match weight {
            Weight::Slots(n) => n.min(self.capacity),
            Weight::All => self.capacity,
        };
        let permit = if n == 0 {
            None
        } else {
            // The semaphore is never closed, so acquiring only waits.
            Some(
                self.semaphore
                    .clone()
                    .acquire_many_owned(n)
                    .await
                    .expect("the run's semaphore is never closed"),
            )
        };
        Hold {
            slots: self.clone(),
            permit,
        }
    }
}

impl Hold {
    /// Lets other checks run beside this one from now on: keeps one slot of those held (a no-op
    /// when it holds one or none).
    pub fn share(mut self) -> Self {
        if let Some(permit) = self.permit.as_mut() {
            let extra = permit.num_permits().saturating_sub(1);
            drop(permit.split(extra));
        }
        self
    }

    /// Waits for `weight`'s slots of the same run, for a part of the check: a client check's run
    /// of the command takes one, a restart every one.
    pub async fn take(&self, weight: Weight) -> Hold {
        self.slots.hold(weight).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn free(slots: &Slots) -> usize {
        slots.semaphore.available_permits()
    }

    #[tokio::test]
    async fn a_check_alone_holds_every_slot_and_shares_all_but_one() {
        let slots = Slots::new(3);
        let alone = slots.hold(Weight::All).await;
        assert_eq!(free(&slots), 0);
        let beside = tokio::time::timeout(Duration::from_millis(50), slots.hold(Weight::Slots(1)));
        assert!(beside.await.is_err(), "nothing runs beside a check alone");
        let shared = alone.share();
        assert_eq!(free(&slots), 2);
        let part = shared.take(Weight::Slots(2)).await;
        assert_eq!(free(&slots), 0);
        drop((shared, part));
        assert_eq!(free(&slots), 3);
    }

    #[tokio::test]
    async fn a_weight_of_none_waits_for_nothing_and_more_than_all_is_all() {
        let slots = Slots::new(2);
        let _all = slots.hold(Weight::Slots(5)).await;
        assert_eq!(free(&slots), 0);
        let nothing = tokio::time::timeout(Duration::from_millis(50), slots.hold(Weight::Slots(0)));
        assert!(nothing.await.is_ok());
    }
}
