//! The environment every check of a run shares: the profile, its resolved contract, the HTTP
//! client and the hooks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idemspec_scenarios::profile::{Contract, Principal, TargetProfile};
use idemspec_scenarios::scenario::{HookName, Operation};

use crate::client::{Client, Exchange};
use crate::hooks::HookRunner;

/// Shared by every check of a run.
pub(crate) struct Env {
    /// The target profile.
    pub profile: TargetProfile,
    /// The contract it declares, resolved.
    pub contract: Contract,
    /// The HTTP client.
    pub client: Client,
    /// Crash, restart, fail_next.
    pub hooks: Arc<dyn HookRunner>,
    /// How long a lockout is measured where the contract declares no in-flight TTL.
    pub lockout_bound: std::time::Duration,
    /// Spreads direct requests over the base URLs.
    next_base: AtomicUsize,
}

impl Env {
    /// The headers a request of `op` sends as `principal`: the principal's, then `content_type`
    /// as `Content-Type` unless the operation gives its own (an API's vendor type), then the
    /// operation's own.
    pub(crate) fn headers_for(
        &self,
        principal: &Principal,
        op: Operation,
        content_type: Option<String>,
    ) -> Vec<(String, String)> {
        let own = self.profile.operations.headers_of(op).map(|h| &h.value);
        let own_type =
            own.is_some_and(|h| h.keys().any(|n| n.eq_ignore_ascii_case("content-type")));
        let mut headers: Vec<(String, String)> = principal
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        if let Some(ct) = content_type.filter(|_| !own_type) {
            headers.push(("Content-Type".into(), ct));
        }
        headers.extend(
            own.into_iter()
                .flatten()
                .map(|(n, v)| (n.clone(), v.clone())),
        );
        headers
    }

    pub(crate) fn new(
        profile: TargetProfile,
        hooks: Arc<dyn HookRunner>,
        lockout_bound: std::time::Duration,
    ) -> Self {
        let contract = profile.contract();
        let client = Client::new().showing_header(&contract.replayed_header);
        Self {
            profile,
            contract,
            client,
            hooks,
            lockout_bound,
            next_base: AtomicUsize::new(0),
        }
    }

    /// Whether the profile's request variant does what `hook` is there for, because the profile
    /// lacks the hooks that would: a `fails_once` create fails by itself (no `fail_next`); a
    /// `hangs` create is abandoned mid-flight without a crash (no `crash` and `restart` pair), so
    /// neither hook runs. Hooks come first where the profile has them (`check/send.rs`,
    /// `create_templates`); the scenario steps and the quiet lock both read it here.
    pub(crate) fn variant_does(&self, hook: HookName) -> bool {
        let variants = &self.profile.operations.create.variants;
        match hook {
            HookName::FailNext => !self.hooks.has(hook) && variants.fails_once.is_some(),
            HookName::Crash | HookName::Restart => {
                !self.crash_and_restart() && variants.hangs.is_some()
            }
        }
    }

    /// Whether the target can be crashed and brought back (both hooks).
    pub(crate) fn crash_and_restart(&self) -> bool {
        self.hooks.has(HookName::Crash) && self.hooks.has(HookName::Restart)
    }

    /// The next base URL of `urls`, round robin (several replicas share the load).
    pub(crate) fn pick<'a>(&self, urls: &'a [String]) -> &'a str {
        let i = self.next_base.fetch_add(1, Ordering::Relaxed);
        urls[i % urls.len()].trim_end_matches('/')
    }

    /// The principal named `name` (`A`/`B` for first/second).
    pub(crate) fn principal(&self, name: Option<&str>) -> Result<&Principal, String> {
        let name = name.unwrap_or("A");
        self.profile
            .principal(name)
            .ok_or_else(|| format!("the target profile has no principal `{name}`"))
    }

    /// The id of a created resource in a response body, via the profile's `create.id` JSONPath: a
    /// non-empty string, or a number as serde_json writes it (`1.50` is `1.5`), cut after the last
    /// `create.id_after` where the profile gives one (a string without it holds no id). An empty
    /// string is no id: in a path it would name the collection (`DELETE /machines/`), not a
    /// resource.
    pub(crate) fn created_id(&self, exchange: &Exchange) -> Option<String> {
        let json = exchange.json.as_ref()?;
        let create = &self.profile.operations.create;
        let id = match create.id.first(json)? {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => return None,
        };
        let id = match &create.id_after {
            Some(after) => id.rsplit_once(after.as_str())?.1.to_owned(),
            None => id,
        };
        (!id.is_empty()).then_some(id)
    }
}
