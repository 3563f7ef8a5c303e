//! What a leasebroker process can be told to inject through its admin API (`POST
//! /v1/admin/faults`, a path kept for its users): boots that fail, panic or hang, and a crash at a
//! chosen point of a create. The hypervisor, the fleet and the idempotency layer each read the ones
//! at their own points. "Injection", not "fault": a fault is one of the proxy's verbs.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

/// What `POST /v1/admin/faults` injected (per process).
#[derive(Debug, Default)]
pub struct Injections {
    fail_next_boots: AtomicU64,
    panic_next_boots: AtomicU64,
    hang_boots: AtomicBool,
    /// The armed [`CrashPoint`] as [`CrashPoint::code`], 0 when none.
    crash_at: AtomicU8,
    /// The `fail-once…` images that have failed their one time (per process).
    failed_once: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// A point in a create where an armed `crash_at` injection aborts the process, as a crash or a SIGKILL
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

    /// The point's code in [`Injections`] (never 0).
    fn code(self) -> u8 {
        match self {
            Self::BeforeClaim => 1,
            Self::AfterLease => 2,
            Self::AfterBootCall => 3,
            Self::BeforeComplete => 4,
        }
    }
}

/// A change to [`Injections`]; absent fields are left as they are.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct InjectionSettings {
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

impl Injections {
    /// Applies `settings`.
    pub fn apply(&self, settings: &InjectionSettings) {
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
    /// has its own injections anyway).
    pub fn crash_if(&self, point: CrashPoint) {
        let armed = self
            .crash_at
            .compare_exchange(point.code(), 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if armed {
            eprintln!("leasebroker: injected crash_at {point:?}: aborting");
            std::process::abort();
        }
    }

    /// Whether this boot fails (`fail_next_boots`), consuming one.
    pub(crate) fn take_failed_boot(&self) -> bool {
        Self::take(&self.fail_next_boots)
    }

    /// Whether this boot panics (`panic_next_boots`), consuming one.
    pub(crate) fn take_panicked_boot(&self) -> bool {
        Self::take(&self.panic_next_boots)
    }

    /// Whether boots hang now (`hang_boots`).
    pub(crate) fn boots_hang(&self) -> bool {
        self.hang_boots.load(Ordering::SeqCst)
    }

    /// Whether this is the first failure of the `fail-once…` image `image` in this process (every
    /// later boot of it succeeds).
    pub(crate) fn first_failure_of(&self, image: &str) -> bool {
        let mut failed = self
            .failed_once
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        failed.insert(image.to_owned())
    }

    /// Consumes one unit of a "next N" counter; true when one was left.
    fn take(counter: &AtomicU64) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}
