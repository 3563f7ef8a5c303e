//! `failed-create-leaves-worker`: a create whose boot fails still writes its worker, so a failed
//! request leaves a resource behind. A switch of the fleet, not of the idempotency layer:
//! [`Fleet::new`](crate::fleet::Fleet::new) takes [`writes_nothing`].

use super::{Flaw, Flaws};

/// Whether a create whose boot fails writes no worker (true unless the flaw is on).
pub fn writes_nothing(flaws: &Flaws) -> bool {
    !flaws.has(Flaw::FailedCreateLeavesWorker)
}
