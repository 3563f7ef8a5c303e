//! The one way a check sends a request: a [`Sender`] (cheap to clone into the tasks that send
//! concurrently) builds a [`Request`] from an operation of the target profile, renders it, sends it
//! and records the exchange, so every request a check makes is evidence in the order it was sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemspec_scenarios::profile::{id_in_body, Contract, KeyAt, KeyUse};
use idemspec_scenarios::scenario::{BodyVariant, HookName, KeySpec, Operation, Via};
use idemspec_scenarios::template::Template;
use idemspec_scenarios::template::TemplateVars;

use crate::http_client::{host_of, Exchange, RequestSpec};
use crate::runner::api_ctx::ApiCtx;
use crate::runner::context::reading;

/// Client timeout of a request whose step gives none.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The header that tags a request with its step. The proxy records it in its event (so evidence
/// can be paired with what the proxy did), fault rules may match it, and it is stripped before the
/// target sees the request.
pub(crate) const STEP_HEADER: &str = "X-Idemspec-Step";

/// Every exchange a check sent, appended as each completes. Shared by the tasks that send at once;
/// [`Recorder::take`] hands them over in the order the requests started.
#[derive(Debug, Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Exchange>>>);

impl Recorder {
    fn record(&self, exchange: Exchange) {
        self.lock().push(exchange);
    }

    /// Reads `exchange` under the contract against the answers recorded so far
    /// ([`reading::read_replay`]) and records it; where it may be an original answer, the answers
    /// with its key recorded before it are read against it again ([`reading::read_again`]): in a
    /// burst, a replay recognised by its content can reach its client before its original does.
    fn record_read(&self, mut exchange: Exchange, ctx: &ApiCtx) -> Exchange {
        let mut log = self.lock();
        reading::read_replay(&mut exchange, ctx, &log);
        for earlier in log.iter_mut() {
            reading::read_again(earlier, &exchange, ctx);
        }
        log.push(exchange.clone());
        exchange
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Exchange>> {
        // A panic in a sending task cannot leave the vector half-written: push is the only write.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Sends a check's requests: knows the environment, the check's marker (which makes its keys and
/// labels unique) and the fault proxy's addresses, and records every exchange.
#[derive(Clone)]
pub(crate) struct Sender {
    ctx: Arc<ApiCtx>,
    marker: Arc<str>,
    proxy_urls: Option<Arc<[String]>>,
    recorder: Recorder,
    /// The operation each step's requests drive, by step name.
    operations: Arc<Mutex<std::collections::HashMap<String, Operation>>>,
}

impl Sender {
    /// A sender for one check; `proxy_urls` are the fault proxy's base URLs, if the check has one.
    pub(crate) fn new(ctx: Arc<ApiCtx>, proxy_urls: Option<Vec<String>>) -> Self {
        let marker = format!("m{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
        Self {
            ctx,
            marker: marker.into(),
            proxy_urls: proxy_urls.map(Into::into),
            recorder: Recorder::default(),
            operations: Arc::default(),
        }
    }

    /// The run's shared environment.
    pub(crate) fn ctx(&self) -> &ApiCtx {
        &self.ctx
    }

    /// Unique per check run (`m` + 10 hex digits): labels resources and prefixes keys.
    pub(crate) fn marker(&self) -> &str {
        &self.marker
    }

    /// A request of `op` tagged as step `step`, sent as principal A, without a key, with the
    /// default body, straight to the target, with the default timeout until said otherwise.
    pub(crate) fn request(&self, step: &str, op: Operation) -> Request<'_> {
        Request {
            sender: self,
            step: step.to_owned(),
            op,
            principal: None,
            key: None,
            variant: BodyVariant::Default,
            on: None,
            via: Via::Direct,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Sends a prepared request and records the exchange, read under the contract against the
    /// check's answers so far (see [`Recorder::record_read`]).
    pub(crate) async fn send(&self, spec: RequestSpec) -> Exchange {
        let exchange = self.ctx.send(spec, &self.marker).await;
        self.recorder.record_read(exchange, &self.ctx)
    }

    /// Every exchange so far, in the order the requests started.
    pub(crate) fn exchanges(&self) -> Vec<Exchange> {
        let mut all = self.recorder.lock().clone();
        all.sort_by_key(|e| e.started);
        all
    }

    /// The id of the resource step `step` created (its first 2xx), if any.
    pub(crate) fn created_by(&self, step: &str) -> Option<String> {
        let log = self.recorder.lock();
        let mut mine: Vec<&Exchange> = log
            .iter()
            .filter(|e| e.evidence.request.step == step && e.is_success())
            .collect();
        mine.sort_by_key(|e| e.started);
        mine.first().and_then(|e| self.ctx.created_id(e))
    }

    /// The operation the requests of step `step` drive, once one was prepared.
    pub(crate) fn operation_of(&self, step: &str) -> Option<Operation> {
        self.operations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(step)
            .copied()
    }

    /// Where a request sent `via` goes and the target base URL it is meant for, the next of the
    /// base URLs (round robin): through the fault proxy (when the check has one) the proxy in
    /// front of that base URL, else the base URL itself.
    fn destination(&self, via: Via) -> (&str, &str) {
        let targets = &self.ctx.profile.base_urls.value;
        let i = self.ctx.next_index();
        let origin = targets[i % targets.len()].trim_end_matches('/');
        match self.proxy_urls.as_deref() {
            Some(proxies) if via == Via::Proxy => {
                (proxies[i % proxies.len()].trim_end_matches('/'), origin)
            }
            _ => (origin, origin),
        }
    }

    /// The key header value for a key spec under the contract; `None` when no key is sent.
    pub(crate) fn key_value(&self, key: &KeySpec) -> Option<String> {
        key_value(&self.marker, key, &self.ctx.contract)
    }
}

/// The key header value for `key` in the check marked `marker`; `None` when no key is sent.
///
/// A named key is unique to the check run (the marker is in it) and takes the contract's key form
/// (opaque, a UUID derived from it, or the contract's template). Where the contract replays a 5xx,
/// a client retries it with a fresh key (`after_5xx:`). The deliberately invalid keys (`""`,
/// `long:N`) and `raw:` keys are sent as written.
fn key_value(marker: &str, key: &KeySpec, contract: &Contract) -> Option<String> {
    match key {
        KeySpec::None => None,
        KeySpec::Empty => Some(String::new()),
        KeySpec::Long(n) => {
            let mut k = format!("{marker}-");
            while k.len() < *n {
                k.push('x');
            }
            k.truncate(*n);
            Some(k)
        }
        KeySpec::Raw(raw) => Some(raw.clone()),
        KeySpec::Named(name) => Some(contract.key_of(&format!("{marker}-{name}"))),
        KeySpec::SfNamed(name) => Some(format!(
            "\"{}\"",
            contract.key_of(&format!("{marker}-{name}"))
        )),
        KeySpec::AfterFailure(name) if contract.replays_5xx => {
            Some(contract.key_of(&format!("{marker}-{name}-after-5xx")))
        }
        KeySpec::AfterFailure(name) => Some(contract.key_of(&format!("{marker}-{name}"))),
    }
}

/// One request to build: which operation, as whom, with which key and body, where to.
pub(crate) struct Request<'a> {
    sender: &'a Sender,
    step: String,
    op: Operation,
    principal: Option<String>,
    key: Option<KeySpec>,
    variant: BodyVariant,
    on: Option<String>,
    via: Via,
    timeout: Duration,
}

impl Request<'_> {
    /// Sent as this principal (a profile name, or `A`/`B`; `None`: A).
    pub(crate) fn principal(mut self, name: Option<&str>) -> Self {
        self.principal = name.map(str::to_owned);
        self
    }

    /// With this key, on operations that take one (create, action, and delete where the profile
    /// says so).
    pub(crate) fn key(mut self, key: Option<&KeySpec>) -> Self {
        self.key = key.cloned();
        self
    }

    /// With this body variant (`{{variant}}` 1 or 2).
    pub(crate) fn variant(mut self, variant: BodyVariant) -> Self {
        self.variant = variant;
        self
    }

    /// Acting on the resource that step `step` created (get, delete, action).
    pub(crate) fn on(mut self, step: Option<&str>) -> Self {
        self.on = step.map(str::to_owned);
        self
    }

    /// Through the fault proxy or straight to the target. Through the proxy only when the check
    /// has one: a check without faults sends every request direct.
    pub(crate) fn via(mut self, via: Via) -> Self {
        self.via = via;
        self
    }

    /// With this client timeout (`None`: the default, 10 s).
    pub(crate) fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout.unwrap_or(DEFAULT_TIMEOUT);
        self
    }

    /// Renders the request, picking the next base URL (round robin over replicas or proxies).
    ///
    /// # Errors
    /// Why it cannot be built: an unknown principal, an operation the profile lacks, no resource
    /// to act on.
    pub(crate) fn prepare(&self) -> Result<RequestSpec, String> {
        self.sender
            .operations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(self.step.clone(), self.op);
        let ctx = self.sender.ctx();
        let principal = ctx.principal(self.principal.as_deref())?;
        let ops = &ctx.profile.operations;
        // The key first: a template may name the resource after it (`{{key_name}}`).
        let takes_key = match self.op {
            Operation::Create | Operation::Action => true,
            Operation::Delete => ops.delete.as_ref().is_some_and(|d| d.key == KeyUse::Send),
            Operation::List | Operation::Get => false,
        };
        let key = match (&self.key, takes_key) {
            (Some(k), true) => self.sender.key_value(k),
            _ => None,
        };
        let variant = match self.variant {
            BodyVariant::Alt => 2,
            _ => 1,
        };
        let vars = TemplateVars::new(self.sender.marker(), variant)
            .as_principal(&principal.vars)
            // An sf-string key names the resource its bare form names: the API unquotes it.
            .with_key(key.as_deref().map(|k| {
                k.strip_prefix('"')
                    .and_then(|k| k.strip_suffix('"'))
                    .unwrap_or(k)
            }));
        let uuid = || uuid::Uuid::new_v4().to_string();
        let target_id = || -> Result<String, String> {
            let on = self.on.as_deref().unwrap_or_default();
            self.sender
                .created_by(on)
                .ok_or_else(|| format!("step `{on}` created no resource with an id to act on"))
        };
        let missing = |what: &str| format!("the target profile has no `operations.{what}`");
        let (method, path, body, content_type) = match self.op {
            Operation::Create => {
                let (body, path) = self.create_templates()?;
                (
                    ops.create.method.clone(),
                    path.render(&vars, uuid),
                    Some(body.render(&vars, uuid)),
                    Some(ops.create.content_type.clone()),
                )
            }
            Operation::List => {
                let body = ops.list.body.as_ref().map(|b| b.render(&vars, uuid));
                let ct = body.as_ref().map(|_| "application/json".to_owned());
                let path = ops.list.path.render(&vars, uuid);
                (ops.list.method.clone(), path, body, ct)
            }
            Operation::Get | Operation::Delete | Operation::Action => {
                let (method, path, body) = match self.op {
                    Operation::Get => {
                        let get = ops.get.as_ref().ok_or_else(|| missing("get"))?;
                        (&get.method, &get.path.value, get.body.as_ref())
                    }
                    Operation::Delete => {
                        let del = ops.delete.as_ref().ok_or_else(|| missing("delete"))?;
                        (&del.method, &del.path.value, del.body.as_ref())
                    }
                    _ => {
                        let act = ops.action.as_ref().ok_or_else(|| missing("action"))?;
                        (&act.method, &act.path.value, act.body.as_ref())
                    }
                };
                let id = target_id()?;
                let path = path.render(&vars, uuid, &id);
                // The body's type: the operation's own `Content-Type`, else JSON.
                let own_type = ops.own_content_type(self.op).unwrap_or("application/json");
                let body = body.map(|b| id_in_body(&b.render(&vars, uuid), &id, own_type));
                let ct = body.as_ref().map(|_| "application/json".to_owned());
                (method.clone(), path, body, ct)
            }
        };
        let (mut path, mut body, mut content_type) = (path, body, content_type);
        let mut key_header = None;
        if let Some(k) = &key {
            match &ctx.contract.key_at {
                KeyAt::Header(name) => key_header = Some((name.clone(), k.clone())),
                at => at.place(k, &mut path, &mut body, &mut content_type)?,
            }
        }
        let (base, origin) = self.sender.destination(self.via);
        // A proxy listens on a port of its own: never the target's URL.
        let via_proxy = base != origin;
        let mut headers = ctx.headers_for(principal, self.op, content_type);
        headers.extend(key_header);
        if via_proxy {
            headers.push((STEP_HEADER.into(), self.step.clone()));
            // The proxy forwards `Host` as sent: the target sees its own name, not the proxy's.
            headers.extend(host_of(origin).map(|host| ("Host".to_owned(), host)));
        }
        Ok(RequestSpec {
            step: self.step.clone(),
            base_url: base.to_owned(),
            origin: origin.to_owned(),
            method,
            path,
            principal: principal.name.clone(),
            headers,
            key,
            body,
            timeout: self.timeout,
            via_proxy,
            sent: None,
        })
    }

    /// The body and path templates of a create in this request's variant. A `fails_once` request
    /// is the default where the profile has a `fail_next` hook (which makes it fail); a `hangs`
    /// request is the variant where there is one, else the default (a crash abandons it).
    fn create_templates(&self) -> Result<(&Template, &Template), String> {
        let ctx = self.sender.ctx();
        let create = &ctx.profile.operations.create;
        // Hooks come first for a failure (`fail_next` makes the default body fail). A request to
        // be abandoned is the default where the crash hook arms (the target dies during that
        // request, by definition, and its connection closes at once); otherwise it is the hanging
        // variant wherever the profile has one, so a kill from outside surely lands mid-handler.
        let use_default = match self.variant {
            BodyVariant::Default | BodyVariant::Alt => true,
            BodyVariant::FailsOnce => ctx.hooks.has(HookName::FailNext),
            BodyVariant::Hangs => {
                ctx.crash_and_restart()
                    && (ctx.hooks.crash_arms() || create.variants.hangs.is_none())
            }
            BodyVariant::SlowIfAny => create.variants.slow.is_none(),
            BodyVariant::AlwaysFails | BodyVariant::Slow => false,
        };
        if use_default {
            return Ok((&create.body, &create.path));
        }
        match create.variants.get(self.variant) {
            Some((body, path)) => Ok((body, path.unwrap_or(&create.path))),
            None if matches!(self.variant, BodyVariant::FailsOnce | BodyVariant::Hangs) => {
                Err(format!(
                    "the profile has neither the hook nor the `{}` request variant this step needs",
                    variant_name(self.variant)
                ))
            }
            None => Err(format!(
                "the profile has no `operations.create.variants.{}`",
                variant_name(self.variant)
            )),
        }
    }

    /// Renders and sends the request; one that cannot be built is recorded as an exchange that
    /// carries the reason.
    pub(crate) async fn send(self) -> Exchange {
        match self.prepare() {
            Ok(spec) => self.sender.send(spec).await,
            Err(problem) => {
                let exchange = Exchange::failed(&self.step, problem);
                self.sender.recorder.record(exchange.clone());
                exchange
            }
        }
    }
}

/// A variant's name as profiles write it.
fn variant_name(v: BodyVariant) -> &'static str {
    match v {
        BodyVariant::Default => "default",
        BodyVariant::Alt => "alt",
        BodyVariant::AlwaysFails => "always_fails",
        BodyVariant::FailsOnce => "fails_once",
        BodyVariant::Slow | BodyVariant::SlowIfAny => "slow",
        BodyVariant::Hangs => "hangs",
    }
}

/// The bytes of the member at `at` (`data`, `result.data`) of the JSON object `body`, as they
/// stand in it; `None` where the body is no JSON object or has no such member.
pub(crate) fn member_bytes(body: &[u8], at: &str) -> Option<bytes::Bytes> {
    use serde_json::value::RawValue;
    let mut raw: &RawValue = serde_json::from_slice(body).ok()?;
    for name in at.split('.') {
        let members: std::collections::HashMap<String, &RawValue> =
            serde_json::from_str(raw.get()).ok()?;
        raw = members.get(name)?;
    }
    Some(bytes::Bytes::copy_from_slice(raw.get().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_per_check_and_follow_the_contract() {
        use idemspec_scenarios::profile::{ContractSpec, KeyForm, Preset};
        let article = ContractSpec::default().resolve();
        let stripe = ContractSpec {
            preset: Preset::StripeV1,
            ..ContractSpec::default()
        }
        .resolve();
        let key = |spec: &str, c: &Contract| {
            key_value("m1", &KeySpec::parse(spec).expect("valid spec"), c)
        };
        assert_eq!(key("K1", &article).as_deref(), Some("m1-K1"));
        assert_eq!(key("sf:K1", &article).as_deref(), Some("\"m1-K1\""));
        assert_eq!(key("none", &article), None);
        assert_eq!(key("long:300", &article).map(|k| k.len()), Some(300));
        assert_eq!(key("after_5xx:K1", &article).as_deref(), Some("m1-K1"));
        assert_eq!(
            key("after_5xx:K1", &stripe).as_deref(),
            Some("m1-K1-after-5xx")
        );
        let uuid = ContractSpec {
            key_form: Some(KeyForm::Uuid),
            ..ContractSpec::default()
        }
        .resolve();
        let k1 = key("K1", &uuid).expect("a key");
        assert!(uuid::Uuid::parse_str(&k1).is_ok(), "{k1}");
        assert_eq!(key("K1", &uuid), Some(k1.clone()), "a retry keeps its key");
        assert_ne!(key("K2", &uuid), Some(k1.clone()));
        assert_ne!(
            key_value("m2", &KeySpec::Named("K1".into()), &uuid),
            Some(k1)
        );
    }
}
