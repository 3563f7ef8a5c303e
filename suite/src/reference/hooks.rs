//! Hooks for the reference server: the bundled profile's HTTP hooks (arm a crash, fail the next
//! boot) and a real restart of the child process.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use idemspec_scenarios::scenario::HookName;

use super::ReferenceServer;
use crate::hooks::{HookError, HookRunner, ProfileHooks};

/// How long `restart` lets an armed crash finish by itself before it kills the child.
const CRASH_GRACE: Duration = Duration::from_secs(2);

/// The reference server's hooks.
pub struct ReferenceHooks {
    server: Arc<ReferenceServer>,
    profile: ProfileHooks,
}

impl ReferenceHooks {
    pub(super) fn new(server: Arc<ReferenceServer>) -> Self {
        let hooks = server.profile().map(|p| p.hooks).unwrap_or_default();
        Self {
            server,
            profile: ProfileHooks::new(hooks),
        }
    }
}

impl HookRunner for ReferenceHooks {
    fn run(&self, hook: HookName) -> BoxFuture<'_, Result<(), HookError>> {
        match hook {
            HookName::Restart => Box::pin(async move {
                self.server
                    .restart(CRASH_GRACE)
                    .await
                    .map_err(|e| HookError::Failed {
                        hook: "restart",
                        reason: format!("{e}"),
                    })
            }),
            other => self.profile.run(other),
        }
    }

    fn has(&self, hook: HookName) -> bool {
        hook == HookName::Restart || self.profile.has(hook)
    }

    fn crash_arms(&self) -> bool {
        self.profile.crash_arms()
    }
}
