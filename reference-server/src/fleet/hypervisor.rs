//! The simulated hypervisor: an EXTERNAL system. Its instances live in their own table, tagged with the
//! caller's `boot_id`, so a crash of leasebroker does not erase what the hypervisor did, and a retry can
//! find a boot by listing instances by tag. It is not idempotent by itself: two calls boot two instances.
//!
//! Like a real hypervisor it fails by what it is asked to boot, which gives clients (and idemspec's
//! request variants) failures without an admin switch. Images named:
//! - `fail-always…`: every boot fails (502 `hypervisor-error`, after the node and lease are written);
//! - `fail-once…`: the first boot of that exact image name fails, every later one succeeds;
//! - `slow-<N>ms…` (e.g. `slow-5000ms`): the boot takes N ms more;
//! - `hang…`: the boot never finishes (until the process stops).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::idempotency::now_ms;
use crate::store::{FleetStore, StoreError};

/// Faults injected through `POST /v1/admin/faults` (per process).
#[derive(Debug, Default)]
pub struct Faults {
    fail_next_boots: AtomicU64,
    panic_next_boots: AtomicU64,
    hang_boots: AtomicBool,
    /// The armed [`CrashPoint`] as [`CrashPoint::code`], 0 when none.
    crash_at: AtomicU8,
    /// The `fail-once…` images that have failed their one time (per process).
    failed_once: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// A point in a create where an armed `crash_at` fault aborts the process, as a crash or a SIGKILL
/// would: no cleanup runs, and only what was committed before it survives. Each is a different
/// resume path for the retry that follows: on a first attempt (two transactions, see
/// [`CreateStore`](crate::store::CreateStore)) one leaves nothing, one a node, a lease and a pending
/// boot, and two a pending boot with a running instance (between the transactions); on a retry
/// (single statements) `after_lease` leaves a node and a lease, and `before_complete` a finished
/// worker under an in-flight record.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CrashPoint {
    /// In the idempotency layer, after the key and body were read, before the claim.
    BeforeClaim,
    /// After the node allocation and the lease were written: on a first attempt after its first
    /// transaction (claim, node, lease and pending boot row committed), on a retry before the boot's
    /// pending row.
    AfterLease,
    /// After the hypervisor recorded the instance, before the boot row is completed.
    AfterBootCall,
    /// Before the record is completed: on a first attempt just before its last transaction (the
    /// instance is booted, the worker and the completion not yet written), otherwise after the
    /// handler produced its response (the worker exists).
    BeforeComplete,
}

impl CrashPoint {
    /// Every point, in the order a create passes them.
    pub const ALL: [Self; 4] = [
        Self::BeforeClaim,
        Self::AfterLease,
        Self::AfterBootCall,
        Self::BeforeComplete,
    ];

    /// The point's code in [`Faults`] (never 0).
    fn code(self) -> u8 {
        match self {
            Self::BeforeClaim => 1,
            Self::AfterLease => 2,
            Self::AfterBootCall => 3,
            Self::BeforeComplete => 4,
        }
    }
}

/// A change to [`Faults`]; absent fields are left as they are.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSettings {
    /// The next N boots fail with a 5xx (after the node and lease were written).
    pub fail_next_boots: Option<u64>,
    /// The next N boots panic inside the handler (after the node and lease were written), to prove
    /// that a panic marks the record failed.
    pub panic_next_boots: Option<u64>,
    /// While true, boots hang (until set back to false).
    pub hang_boots: Option<bool>,
    /// The next boot call is issued (the hypervisor records the instance), then the process aborts:
    /// `true` is `crash_at: after_boot_call`; `false` disarms whatever crash is armed.
    pub crash_after_boot_call: Option<bool>,
    /// The next create to reach this point aborts the process (one shot; see [`CrashPoint`]).
    pub crash_at: Option<CrashPoint>,
}

impl Faults {
    /// Applies `settings`.
    pub fn apply(&self, settings: &FaultSettings) {
        if let Some(n) = settings.fail_next_boots {
            self.fail_next_boots.store(n, Ordering::SeqCst);
        }
        if let Some(n) = settings.panic_next_boots {
            self.panic_next_boots.store(n, Ordering::SeqCst);
        }
        if let Some(hang) = settings.hang_boots {
            self.hang_boots.store(hang, Ordering::SeqCst);
        }
        if let Some(crash) = settings.crash_after_boot_call {
            let code = if crash {
                CrashPoint::AfterBootCall.code()
            } else {
                0
            };
            self.crash_at.store(code, Ordering::SeqCst);
        }
        if let Some(point) = settings.crash_at {
            self.crash_at.store(point.code(), Ordering::SeqCst);
        }
    }

    /// Aborts the process if a crash is armed at `point` (and disarms it, for the restarted process
    /// has its own faults anyway).
    pub fn crash_if(&self, point: CrashPoint) {
        let armed = self
            .crash_at
            .compare_exchange(point.code(), 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if armed {
            eprintln!("leasebroker: fault crash_at {point:?}: aborting");
            std::process::abort();
        }
    }

    /// Consumes one unit of a "next N" counter; true when one was left.
    fn take(counter: &AtomicU64) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// Why a boot failed.
#[derive(Debug, thiserror::Error)]
pub enum HypervisorError {
    /// An injected failure (`fail_next_boots`).
    #[error("boot an instance (injected failure)")]
    Injected,
    /// The hypervisor's own storage failed.
    #[error("reach the hypervisor's state")]
    Store(#[from] StoreError),
}

/// The extra boot time of a `slow-<N>ms…` image (at most 10 minutes).
fn slow_by_image(image: &str) -> Option<Duration> {
    let digits = image.strip_prefix("slow-")?;
    let end = digits.find("ms")?;
    let ms: u64 = digits[..end].parse().ok()?;
    Some(Duration::from_millis(ms.min(600_000)))
}

/// The simulated hypervisor client.
pub struct Hypervisor {
    store: Arc<dyn FleetStore>,
    faults: Arc<Faults>,
    boot_latency: Duration,
}

impl Hypervisor {
    /// A hypervisor keeping its state in `store`, taking `boot_latency` per boot.
    pub fn new(store: Arc<dyn FleetStore>, faults: Arc<Faults>, boot_latency: Duration) -> Self {
        Self {
            store,
            faults,
            boot_latency,
        }
    }

    /// Boots an instance on `node_id` carrying `tag`; returns its instance id. Idempotent by `tag`:
    /// while an instance with the tag runs, booting again returns it.
    pub async fn boot(
        &self,
        tag: &str,
        node_id: i64,
        image: &str,
    ) -> Result<String, HypervisorError> {
        if Faults::take(&self.faults.fail_next_boots) || self.fails_by_image(image) {
            return Err(HypervisorError::Injected);
        }
        if image.starts_with("hang") {
            std::future::pending::<()>().await;
        }
        if let Some(extra) = slow_by_image(image) {
            tokio::time::sleep(extra).await;
        }
        if Faults::take(&self.faults.panic_next_boots) {
            panic!("injected fault: panic_next_boots");
        }
        while self.faults.hang_boots.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(self.boot_latency).await;
        // The tag is a client token: a second call with it returns the running instance.
        let instance_id = self
            .store
            .hypervisor_record_instance(
                &format!("inst-{}", uuid::Uuid::new_v4().simple()),
                tag,
                node_id,
                now_ms(),
            )
            .await?;
        self.faults.crash_if(CrashPoint::AfterBootCall);
        Ok(instance_id)
    }

    /// Whether a boot of `image` fails by its name (`fail-always…`, or the first `fail-once…`).
    fn fails_by_image(&self, image: &str) -> bool {
        if image.starts_with("fail-always") {
            return true;
        }
        if !image.starts_with("fail-once") {
            return false;
        }
        let mut failed = self
            .faults
            .failed_once
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        failed.insert(image.to_owned())
    }

    /// The instances carrying `tag`, oldest first.
    pub async fn list_by_tag(&self, tag: &str) -> Result<Vec<String>, HypervisorError> {
        Ok(self.store.hypervisor_list_by_tag(tag).await?)
    }
}
