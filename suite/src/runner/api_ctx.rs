//! The context every check of a run shares ([`ApiCtx`], the engine's `Check::Ctx` for an API):
//! the profile, its resolved contract, the HTTP client and the hooks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idemspec_scenarios::profile::{
    Contract, CookieScope, Login, Principal, ReplayBy, TargetProfile,
};
use idemspec_scenarios::scenario::{HookName, Operation};
use idemspec_scenarios::template::TemplateVars;

use super::tokens::Tokens;
use crate::hooks::HookRunner;
use crate::http_client::{sign_request, Client, Exchange, RequestSpec, Session, TlsSettings};

/// Shared by every check of a run.
pub(crate) struct ApiCtx {
    /// The target profile.
    pub profile: TargetProfile,
    /// The contract it declares, resolved.
    pub contract: Contract,
    /// The HTTP client.
    pub client: Client,
    /// The profile's TLS: the trust in the target and each principal's client certificate, which
    /// the client and every embedded proxy present.
    pub tls: TlsSettings,
    /// Crash, restart, fail_next.
    pub hooks: Arc<dyn HookRunner>,
    /// How long a lockout is measured where the contract declares no in-flight TTL.
    pub lockout_bound: std::time::Duration,
    /// Spreads direct requests over the base URLs.
    next_base: AtomicUsize,
    /// Whose cookie jar a request uses (the profile's `cookies`, resolved once).
    cookies: CookieScope,
    /// The cookie sessions, by principal and, with `cookies: per_check`, by check marker.
    sessions: std::sync::Mutex<std::collections::HashMap<(String, String), Arc<Session>>>,
    /// The principals' bearer tokens (`token`), as last fetched.
    tokens: Tokens,
}

/// A request rendered from the profile, not yet sent: its method, path, body and every header
/// (a principal's list of its resources, or its login).
#[derive(Clone)]
pub(crate) struct RenderedRequest {
    /// The method, as the profile writes it.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// The body, where the request has one.
    pub body: Option<String>,
    /// Every header to send.
    pub headers: Vec<(String, String)>,
}

impl RenderedRequest {
    /// The request as `principal` sends it direct to `base_url` (never through a fault proxy,
    /// without an idempotency key), tagged `step` in the evidence, given `timeout`.
    pub(crate) fn direct(
        self,
        step: &str,
        base_url: &str,
        principal: &str,
        timeout: std::time::Duration,
    ) -> RequestSpec {
        RequestSpec {
            step: step.into(),
            base_url: base_url.to_owned(),
            origin: base_url.to_owned(),
            method: self.method,
            path: self.path,
            principal: principal.to_owned(),
            headers: self.headers,
            key: None,
            body: self.body,
            timeout,
            via_proxy: false,
            sent: None,
        }
    }
}

/// How long the request that opens a principal's session (its login) may take.
const LOGIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl ApiCtx {
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
        let own_type = self.profile.operations.own_content_type(op).is_some();
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

    /// The context of a run of `profile` with its TLS settings `tls`.
    ///
    /// # Errors
    /// A [`idemspec_tls::TlsError`] when a CA file, certificate or key cannot be used.
    pub(crate) fn new(
        profile: TargetProfile,
        tls: TlsSettings,
        hooks: Arc<dyn HookRunner>,
        lockout_bound: std::time::Duration,
    ) -> Result<Self, idemspec_tls::TlsError> {
        let contract = profile.contract();
        let client = Client::with_tls(&tls)?.showing_header(&contract.replayed_header);
        let profile_cookies = profile.cookie_scope();
        Ok(Self {
            profile,
            contract,
            client,
            tls,
            hooks,
            lockout_bound,
            next_base: AtomicUsize::new(0),
            cookies: profile_cookies,
            sessions: std::sync::Mutex::default(),
            tokens: Tokens::default(),
        })
    }

    /// Sends `spec` for the check marked `marker`, in its principal's cookie session where the
    /// profile keeps one (`cookies`): the session is opened first (the principal's `login`, or
    /// its first answer, once per jar), its cookies go in a `Cookie` header and the answer's `Set-Cookie` is kept. Last,
    /// the request is signed where the principal's `sign` says so (each send anew: a retry gets
    /// a new date). A session that could not be opened, or a request that could not be signed,
    /// fails the request with the reason.
    pub(crate) async fn send(&self, mut spec: RequestSpec, marker: &str) -> Exchange {
        let session = match self.opened_session(&spec.principal, marker).await {
            Ok(session) => session,
            Err(problem) => return Exchange::unsent(&spec, problem),
        };
        // Cookies are the target's, wherever the request goes (the proxy's port is no other
        // site: RFC 6265 §8.5 cookies do not isolate by port), so the jar reads the first base URL.
        let jar = session.and_then(|s| Some((s, self.cookie_url(&spec.path)?)));
        if let Some(cookies) = jar.as_ref().and_then(|(s, u)| s.cookie_header(u)) {
            spec.headers.push(("Cookie".into(), cookies));
        }
        if let Err(problem) = self.authorize(&mut spec).await {
            return Exchange::unsent(&spec, problem);
        }
        let exchange = self.client.send(spec).await;
        if let Some((session, u)) = &jar {
            session.store(&exchange.headers, u);
        }
        exchange
    }

    /// Gives `spec` its principal's credentials that change: its bearer token (`token`, as
    /// `Authorization`, replacing any), then, last, its signature (`sign`).
    ///
    /// # Errors
    /// Why the token could not be fetched or the request signed.
    async fn authorize(&self, spec: &mut RequestSpec) -> Result<(), String> {
        if let Some(bearer) = self.bearer(&spec.principal).await? {
            spec.headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
            spec.headers
                .push(("Authorization".into(), format!("Bearer {bearer}")));
        }
        self.sign(spec)
    }

    /// Principal `name`'s bearer token now, where it has a `token` (fetched again once its
    /// `every` passed).
    ///
    /// # Errors
    /// Why its command gave no token.
    async fn bearer(&self, name: &str) -> Result<Option<String>, String> {
        let token = self.profile.principal(name).and_then(|p| p.token.as_ref());
        match token {
            Some(token) => {
                let client = self.client.reqwest();
                self.tokens.current(name, token, client).await.map(Some)
            }
            None => Ok(None),
        }
    }

    /// Signs `spec` as its principal's `sign` says, now; nothing where it has none.
    ///
    /// # Errors
    /// Why the request could not be signed.
    fn sign(&self, spec: &mut RequestSpec) -> Result<(), String> {
        let how = self
            .profile
            .principal(&spec.principal)
            .and_then(|p| p.sign.as_ref());
        let Some(how) = how else {
            return Ok(());
        };
        sign_request(spec, how, std::time::SystemTime::now()).map_err(|e| {
            format!(
                "principal `{}`'s request could not be signed: {e}",
                spec.principal
            )
        })
    }

    /// Opens principal `name`'s session for the check marked `marker`: fetches its bearer token
    /// where it has a `token`, and opens its session where the profile keeps one (its `login`,
    /// or its first answer, once per jar).
    ///
    /// # Errors
    /// Why the token could not be fetched or the session opened (see [`ApiCtx::send`]).
    pub(crate) async fn open_session(&self, name: &str, marker: &str) -> Result<(), String> {
        self.bearer(name).await?;
        self.opened_session(name, marker).await.map(drop)
    }

    /// Principal `name`'s session for the check marked `marker`, opened (its `login`, or its
    /// first answer, once per jar); `None` where the profile keeps no cookies.
    ///
    /// # Errors
    /// Why the session could not be opened.
    async fn opened_session(
        &self,
        name: &str,
        marker: &str,
    ) -> Result<Option<Arc<Session>>, String> {
        let Some((session, principal)) = self.session(name, marker) else {
            return Ok(None);
        };
        session.open(|| self.open_jar(&session, principal)).await?;
        Ok(Some(session))
    }

    /// The session of principal `name` for the check marked `marker`, and the principal; `None`
    /// where the profile keeps no cookies.
    fn session(&self, name: &str, marker: &str) -> Option<(Arc<Session>, &Principal)> {
        let scope = match self.cookies {
            CookieScope::Off => return None,
            CookieScope::PerPrincipal => String::new(),
            CookieScope::PerCheck => marker.to_owned(),
        };
        let principal = self.profile.principal(name)?;
        let mut sessions = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let session = sessions
            .entry((principal.name.clone(), scope))
            .or_insert_with(|| Arc::new(Session::new()))
            .clone();
        Some((session, principal))
    }

    /// The first base URL, without a trailing `/`: where a login goes, and whose cookies the jar
    /// keeps.
    fn first_base(&self) -> &str {
        self.profile
            .base_urls
            .value
            .first()
            .map_or("", |b| b.trim_end_matches('/'))
    }

    /// `path` under the first base URL, as the cookie jar reads it.
    fn cookie_url(&self, path: &str) -> Option<reqwest::Url> {
        format!("{}{path}", self.first_base()).parse().ok()
    }

    /// Opens `principal`'s session: sends the request that opens it ([`ApiCtx::session_opener`];
    /// none: nothing to do) and keeps the cookies its answer set.
    ///
    /// # Errors
    /// The request got no 2xx (its status and the start of its body), no answer, or a 2xx
    /// without a `Set-Cookie`.
    async fn open_jar(&self, session: &Session, principal: &Principal) -> Result<(), String> {
        let Some((mut spec, what, field)) = self.session_opener(principal) else {
            return Ok(());
        };
        let path = spec.path.clone();
        self.authorize(&mut spec).await?;
        let exchange = self.client.send(spec).await;
        if let Some(u) = self.cookie_url(&path) {
            session.store(&exchange.headers, &u);
        }
        let got = match exchange.status {
            Some(_) if exchange.is_success() => {
                if exchange.headers.contains_key(http::header::SET_COOKIE) {
                    return Ok(());
                }
                format!(
                    "answered {} without a `Set-Cookie`, so there is no session to send",
                    exchange.describe()
                )
            }
            Some(_) => format!("answered {}", exchange.describe()),
            None => format!("got no answer ({})", exchange.describe()),
        };
        Err(format!(
            "principal `{}`'s {what} {got}, so its session is not open; check `{field}`",
            principal.name
        ))
    }

    /// The request that opens `principal`'s session, what to call it in a sentence and the
    /// field that declares it: its `login` (`login (POST /login)`), or with `session:
    /// first_answer` its list request as the preflight renders it (`first answer (GET
    /// /machines?tag=preflight)`); `None` where it declares neither.
    fn session_opener(&self, principal: &Principal) -> Option<(RequestSpec, String, &'static str)> {
        let (request, step, what, field) = match &principal.login {
            Some(login) => (
                login_request(principal, login),
                "login",
                "login",
                "principals[].login",
            ),
            None => {
                principal.session?;
                let list = self.list_request(principal, "preflight");
                (list, "session", "first answer", "principals[].session")
            }
        };
        let what = format!("{what} ({} {})", request.method, request.path);
        let spec = request.direct(step, self.first_base(), &principal.name, LOGIN_TIMEOUT);
        Some((spec, what, field))
    }

    /// The profile's `list` of `principal`'s resources marked `marker`, rendered (see
    /// [`RenderedRequest`]).
    pub(crate) fn list_request(&self, principal: &Principal, marker: &str) -> RenderedRequest {
        let list = &self.profile.operations.list;
        let vars = TemplateVars::new(marker, 1).as_principal(&principal.vars);
        let uuid = || uuid::Uuid::new_v4().to_string();
        let body = list.body.as_ref().map(|b| b.render(&vars, uuid));
        let content_type = body.as_ref().map(|_| "application/json".to_owned());
        let headers = self.headers_for(principal, Operation::List, content_type);
        RenderedRequest {
            method: list.method.clone(),
            path: list.path.render(&vars, uuid),
            body,
            headers,
        }
    }

    /// Whether the profile's request variant does what `hook` is there for, because the profile
    /// lacks the hooks that would: a `fails_once` create fails by itself (no `fail_next`); a
    /// `hangs` create is abandoned mid-flight without a crash (no `crash` and `restart` pair), so
    /// neither hook runs. Hooks come first where the profile has them (`check/send.rs`,
    /// `create_templates`); the scenario steps and the check's weight both read it here.
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
        urls[self.next_index() % urls.len()].trim_end_matches('/')
    }

    /// The next index of the round robin over the base URLs (and the proxies in front of them,
    /// in the same order).
    pub(crate) fn next_index(&self) -> usize {
        self.next_base.fetch_add(1, Ordering::Relaxed)
    }

    /// The principal named `name` (`A`/`B` for first/second).
    pub(crate) fn principal(&self, name: Option<&str>) -> Result<&Principal, String> {
        let name = name.unwrap_or("A");
        self.profile
            .principal(name)
            .ok_or_else(|| format!("the target profile has no principal `{name}`"))
    }

    /// Why `exchange` names no created id, for a sentence: `no id at `$.id``, with its parse
    /// note where its body was read in part or not at all (`Exchange::parse_note`), so a reader
    /// knows the id may be there, past what idemspec reads.
    pub(crate) fn missing_id(&self, exchange: &Exchange) -> String {
        let at = self.profile.operations.create.id.source();
        match &exchange.parse_note {
            Some(note) => format!("no id at `{at}`: {note}"),
            None => format!("no id at `{at}`"),
        }
    }

    /// The id of a created resource in a response body, via the profile's `create.id` JSONPath: a
    /// non-empty string, or a number as serde_json writes it (`1.50` is `1.5`), cut after the last
    /// `create.id_after` where the profile gives one (a string without it holds no id). An empty
    /// string is no id: in a path it would name the collection (`DELETE /machines/`), not a
    /// resource.
    ///
    /// A replay read as one by the original's id (`contract.replay_id_at`) names it there, not at
    /// `create.id`: an "already exists" answer names the resource it found.
    pub(crate) fn created_id(&self, exchange: &Exchange) -> Option<String> {
        let json = exchange.json.as_deref()?;
        let create = &self.profile.operations.create;
        if exchange.declared_replay == Some(ReplayBy::OriginalId) {
            let at = self.contract.replay_id_at.as_ref()?;
            return id_text(at.first(json)?).filter(|id| !id.is_empty());
        }
        let id = id_text(create.id.first(json)?)?;
        let id = match &create.id_after {
            Some(after) => id.rsplit_once(after.as_str())?.1.to_owned(),
            None => id,
        };
        (!id.is_empty()).then_some(id)
    }
}

/// `principal`'s `login`, rendered: its headers after the principal's, with its `content_type`
/// where it has a body.
fn login_request(principal: &Principal, login: &Login) -> RenderedRequest {
    let mut headers: Vec<(String, String)> = principal
        .headers
        .iter()
        .chain(&login.headers)
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    if login.body.is_some() {
        headers.push(("Content-Type".into(), login.content_type.clone()));
    }
    RenderedRequest {
        method: login.method.clone(),
        path: login.path.clone(),
        body: login.body.clone(),
        headers,
    }
}

/// An id as a body holds it: a string as it is, a number as serde_json writes it; `None` for any
/// other value.
pub(crate) fn id_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
