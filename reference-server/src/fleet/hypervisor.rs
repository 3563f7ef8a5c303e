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

use std::sync::Arc;
use std::time::Duration;

use crate::clock::now_ms;
use crate::injection::{CrashPoint, Injections};
use crate::store::{FleetStore, StoreError};

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
    injections: Arc<Injections>,
    boot_latency: Duration,
}

impl Hypervisor {
    /// A hypervisor keeping its state in `store`, taking `boot_latency` per boot.
    pub fn new(
        store: Arc<dyn FleetStore>,
        injections: Arc<Injections>,
        boot_latency: Duration,
    ) -> Self {
        Self {
            store,
            injections,
            boot_latency,
        }
    }

    /// Boots an instance on `node_id` carrying `tag`; returns its instance id. Idempotent by `tag`:
    /// while an instance with the tag runs, booting again returns it. It is [`Hypervisor::admit`]
    /// then [`Hypervisor::launch`].
    pub async fn boot(
        &self,
        tag: &str,
        node_id: i64,
        image: &str,
    ) -> Result<String, HypervisorError> {
        self.admit(image).await;
        self.launch(tag, node_id, image).await
    }

    /// The first half of a boot, which an asynchronous create waits for before it answers: the
    /// image is admitted, taking the extra time of a `slow-<N>ms…` image, forever for `hang…`.
    pub async fn admit(&self, image: &str) {
        if image.starts_with("hang") {
            std::future::pending::<()>().await;
        }
        if let Some(extra) = slow_by_image(image) {
            tokio::time::sleep(extra).await;
        }
    }

    /// The second half of a boot, which an asynchronous create runs after its answer: it fails for
    /// a `fail-…` image or an injected failure, takes the boot latency, and records the instance.
    pub async fn launch(
        &self,
        tag: &str,
        node_id: i64,
        image: &str,
    ) -> Result<String, HypervisorError> {
        if self.injections.take_failed_boot() || self.fails_by_image(image) {
            return Err(HypervisorError::Injected);
        }
        if self.injections.take_panicked_boot() {
            panic!("injected fault: panic_next_boots");
        }
        while self.injections.boots_hang() {
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
        self.injections.crash_if(CrashPoint::AfterBootCall);
        Ok(instance_id)
    }

    /// Whether a boot of `image` fails by its name (`fail-always…`, or the first `fail-once…`).
    fn fails_by_image(&self, image: &str) -> bool {
        if image.starts_with("fail-always") {
            return true;
        }
        image.starts_with("fail-once") && self.injections.first_failure_of(image)
    }

    /// The instances carrying `tag`, oldest first.
    pub async fn list_by_tag(&self, tag: &str) -> Result<Vec<String>, HypervisorError> {
        Ok(self.store.hypervisor_list_by_tag(tag).await?)
    }
}
