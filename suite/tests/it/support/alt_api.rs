//! A second, differently shaped provisioning API with a correct Idempotency-Key implementation,
//! so the suite is proven against more than leasebroker's shape.
//!
//! Shape: `POST /api/machines`, `GET /api/machines?tag=T`, `GET|DELETE /api/machines/{uuid}`,
//! `POST /api/machines/{uuid}/restart`; auth by `X-Api-Key`; the new id under `data.uuid`.
//! Contract: Stripe-like (`stripe-v1` with `422` for a mismatch): keys optional, scoped per
//! principal and endpoint, a fingerprint over method, path and body, `409` + `Retry-After` while
//! in flight, every outcome but `409`/`429` stored — a `500` included — and replayed with
//! `Idempotent-Replayed: true`. A failure part-way rolls its side effects back, so a stored `500`
//! never leaves half-done work; side effects are keyed by the record's sub-key, so a reclaimed
//! in-flight record resumes instead of allocating twice.
//!
//! The admin listener (always up) holds the test hooks: `POST /_admin/fail-next`, `POST
//! /_admin/crash` (arms a crash of the next create, after its IP is allocated), `POST
//! /_admin/restart` and `GET /_admin/stats` (`{"machines": n, "ips": n}`). A crash drops the API's
//! listener and every open connection, as a killed process would; state survives, as a database
//! would, and a restart binds the same address again.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use super::tls_edge::TlsEdge;

/// The target profile, with `${ALT_API_URL}` and `${ALT_ADMIN_URL}` to fill in.
pub const PROFILE: &str = include_str!("../fixtures/alt-api.yaml");

/// How long an abandoned in-flight record locks its key (declared in the profile).
const IN_FLIGHT_TTL: Duration = Duration::from_secs(2);
/// How long a create works, so concurrent same-key requests really overlap.
const CREATE_LATENCY: Duration = Duration::from_millis(120);

/// API keys and the principals they authenticate.
const API_KEYS: &[(&str, &str)] = &[("alpha-key", "alpha"), ("beta-key", "beta")];

/// A running alt API. Dropping it stops both listeners.
pub struct AltApi {
    app: App,
    admin: SocketAddr,
    admin_task: JoinHandle<()>,
}

impl AltApi {
    /// `http://127.0.0.1:PORT` of the API (`https://` when it serves TLS).
    pub fn base_url(&self) -> String {
        let scheme = if self.app.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.app.addr)
    }

    /// `http://127.0.0.1:PORT` of the admin listener.
    pub fn admin_url(&self) -> String {
        format!("http://{}", self.admin)
    }

    /// The environment the profiles read: `ALT_API_URL` and `ALT_ADMIN_URL` (the alt profile),
    /// `API_URL` and `ADMIN_URL` (the worked profiles of docs/profiles/).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ALT_API_URL", self.base_url()),
            ("ALT_ADMIN_URL", self.admin_url()),
            ("API_URL", self.base_url()),
            ("ADMIN_URL", self.admin_url()),
        ]
    }

    /// Machines that exist now, over all principals.
    pub fn machines(&self) -> usize {
        self.app.lock().machines.len()
    }

    /// With `sessions`: how many logins opened a session.
    pub fn logins(&self) -> u64 {
        self.app.lock().logins
    }

    /// With `actions_by_body`: the body of each restart the API took, in order, as text.
    pub fn action_bodies(&self) -> Vec<String> {
        let inner = self.app.lock();
        inner
            .action_bodies
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }

    /// With `first_answer_sessions`: how many sessions its answers opened.
    pub fn sessions_opened(&self) -> usize {
        self.app.lock().first_answer_sessions.len()
    }

    /// With `operations`: how many answered polls each operation got, most first.
    pub fn polls(&self) -> Vec<u64> {
        let mut polls: Vec<u64> = self.app.lock().polls.values().copied().collect();
        polls.sort_unstable_by(|a, b| b.cmp(a));
        polls
    }
}

impl Drop for AltApi {
    fn drop(&mut self) {
        self.admin_task.abort();
        if let Some(server) = self.app.server.lock().expect("server lock").take() {
            server.abort();
        }
    }
}

/// What a keyed request does after looking at its key's record.
enum Claimed {
    /// It holds the record: do the work.
    Work,
    /// It waits on the record in flight, for good (`retry_waits_on_in_flight`).
    Pend,
    /// It is refused as in flight after this wait (`in_flight_wait`).
    RefuseAfter(Duration),
    /// It waits for the request in flight and is answered with its result (`waits_for_result`).
    AwaitResult,
    /// It runs as a request of its own, recording nothing (`Flaw::MismatchRunsAgain`).
    RunsAnew,
}

/// How the alt API is configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Accept only UUID keys (as an API that stores the key in a UUID column must); any other key
    /// is a 400 problem.
    pub uuid_keys: bool,
    /// Never reclaim an in-flight record (a lock that outlives any TTL: the defect under test).
    pub never_reclaim: bool,
    /// How long a restart takes before the API listens again (a target that boots slowly).
    pub restart_delay: Duration,
    /// The `hang` flavor's handler works this long and then finishes, its IP and machine made,
    /// instead of never: a handler that outlives the check whose client gave up on it.
    pub hang_for: Option<Duration>,
    /// Keys are scoped per principal only, not per endpoint: the create's key on an action is a
    /// reused key with another request, refused as a mismatch (Stripe's way).
    pub keys_across_endpoints: bool,
    /// The status of "still in flight" (`409` when `None`), for an API that answers another one,
    /// such as `423 Locked`.
    pub in_flight_status: Option<StatusCode>,
    /// How long a create works (120 ms when `None`).
    pub create_latency: Option<Duration>,
    /// A same-key request while the key is in flight waits for it instead of being refused, and
    /// the record is never reclaimed: after a crash every retry hangs (the defect under test).
    pub retry_waits_on_in_flight: bool,
    /// The status a replay of a success is answered with instead of the stored one (a `201`
    /// replayed as a `200`: the defect under test, owned by `replay-fidelity` alone).
    pub replay_status: Option<StatusCode>,
    /// The header that marks a replay (`Idempotent-Replayed` when `None`), for an API that names
    /// it otherwise.
    pub replayed_header: Option<&'static str>,
    /// A same-key request while the key is in flight waits this long before it is refused
    /// (fastapi-idempotency's `wait_seconds`), instead of being refused at once.
    pub in_flight_wait: Option<Duration>,
    /// A replay of a success renders its body again, with a `"replayed_at"` member added (the
    /// same resource; the defect under test, owned by `replay-fidelity` alone).
    pub rerender_replays: bool,
    /// The replay header's value on a keyed first response and on a replay, for an API that
    /// sends it on both (drf-idempotency 1.0.0: `false`, then `true`); `None`: absent on a first
    /// response, `true` on a replay.
    pub replayed_values: Option<(&'static str, &'static str)>,
    /// A mismatch and an in-flight conflict are both a `409` with a plain JSON body, no problem
    /// type: `{"error": {"code": …}}` tells them apart, and the in-flight one carries
    /// `Retry-After` (as some middlewares answer).
    pub plain_conflicts: bool,
    /// One record per principal, as a layer that keeps the key in the caller's session: a new
    /// key from a principal forgets that principal's earlier record, so two checks run side by
    /// side as one principal disturb each other (a retry finds its record gone and runs again),
    /// while one at a time each passes.
    pub one_record_per_principal: bool,
    /// Keys are cut to this many characters before they are looked up (a column too narrow for
    /// them): different keys that share a prefix are merged into one record.
    pub key_prefix: Option<usize>,
    /// Where requests carry the key (the `Idempotency-Key` header by default).
    pub key_in: KeyIn,
    /// Every route lives under its principal's project, `/projects/{principal}/…` (Google
    /// Cloud's `/projects/P/zones/Z/…`): another project's path is a 404.
    pub tenant_in_path: bool,
    /// A create names its machine (`"name"` in the body, as Google Compute's instance names):
    /// a second machine of one principal with a name taken is a `409 already-exists`.
    pub names_in_body: bool,
    /// The API tells its operations apart by a header, not only by method and path (as AWS's
    /// `X-Amz-Target`): every request names its operation in `X-Operation` (`CreateMachine`,
    /// `ListMachines`, `GetMachine`, `DeleteMachine`, `RestartMachine`), else `400
    /// unknown-operation`; and the list is a `POST /api/machines/search` with `{"tag": T}`.
    pub operations_by_header: bool,
    /// A same-key request while the key is in flight waits for the first one's result and is
    /// answered with it (as AWS documents for a repeated client token), instead of a conflict;
    /// after a crash it waits until the abandoned record's TTL and then runs.
    pub waits_for_result: bool,
    /// As `waits_for_result`, but a wait lasts this long at most: a same-key request still
    /// waiting then is answered `408` with `Retry-After: 1` (a layer that documents "waits up to
    /// N s for the request in flight, then 408").
    pub waits_up_to: Option<Duration>,
    /// A create answers `200` with a long-running operation (as Google Cloud's Operation:
    /// `name`, `status` `RUNNING` or `DONE`, `targetLink`, `selfLink` at `GET
    /// /api/operations/{name}`), and its machine is listed only once the operation is done,
    /// [`OPERATION_TAKES`] later. A replay answers the same operation in its current state.
    pub operations: bool,
    /// A reused key with another request gets the original request's answer, the other request
    /// ignored (as Google Cloud documents for a repeated `requestId`), instead of a `422`.
    pub mismatch_answers_original: bool,
    /// A reused key with another request is a `400` whose JSON names the error in `__type`
    /// (`IdempotentParameterMismatch`, as AWS's JSON protocol answers), and every other bad
    /// request a `400` too (an invalid key `ValidationException`), so only the body tells them
    /// apart; a key in flight is a `409` `ConflictException`, with no `Retry-After`.
    pub aws_errors: bool,
    /// Google's error object, `{"error": {"code", "message", "status"}}`: an invalid key a `400`
    /// `INVALID_ARGUMENT`, a key in flight a `409` `ABORTED`, with no `Retry-After`.
    pub gcp_errors: bool,
    /// The longest key accepted (255 when `None`; AWS documents 64 for a client token).
    pub key_max_len: Option<usize>,
    /// Stripe's shapes: a create takes a form body (`flavor=…&tag=…`, typed
    /// `application/x-www-form-urlencoded`; anything else is a `400`), and errors are Stripe's
    /// error object: a reused key with another request a `400` `idempotency_error`, a key in
    /// flight a `409` `idempotency_error` with code `idempotency_key_in_use`, any other bad request
    /// a `400` `invalid_request_error`, so only the body tells the two 400s apart.
    pub stripe_shape: bool,
    /// A key reused on another endpoint whose first request is done is answered with that
    /// request's stored response (the create's, replayed to an action), not refused: the defect
    /// endpoint-scope owns.
    pub action_replays_create: bool,
    /// A replay of a success is wrapped in an envelope, `200 {"cached":true,"data":ORIGINAL}`,
    /// the original body as it was sent.
    pub envelope_replays: bool,
    /// A principal authenticates by a session: `POST /login` with `{"api_key": …}` sets a `sid`
    /// cookie, and every API request must carry it (an `X-Api-Key` on it is ignored).
    pub sessions: bool,
    /// A create of this flavor is refused `400` whatever its key, before the idempotency layer
    /// (a request the API validates away): the differing request of a profile whose variant
    /// renders it does not work with this API.
    pub refuses_flavor: Option<&'static str>,
    /// A planted defect of the idempotency layer, whatever shape the API has.
    pub flaw: Option<Flaw>,
    /// Every JSON answer of the API is sent as XML instead (`text/xml`): the JSON under a
    /// `<Response>` root, an object's members as elements, an array's values as `<item>`s.
    pub xml_answers: bool,
    /// Get, delete and restart also take the machine's id in a form body, `Id=…`, on `POST
    /// /api/machines/by-id/{get,delete,restart}` (as EC2's Query actions name an instance by
    /// `InstanceId.1`), beside the paths that name it.
    pub ids_in_body: bool,
    /// EC2's Query protocol: every request is a `POST /` whose form body names its operation in
    /// `Action`: `RunInstances` (a create, with `flavor` and `tag`), `DescribeInstances` (with
    /// `InstanceId.1`, that machine; else the machines of `tag`), `TerminateInstances` and
    /// `RebootInstances` (of `InstanceId.1`); any other `Action` is a `400 InvalidAction`.
    pub query_actions: bool,
    /// The layer stores only answers with these statuses (as a middleware that documents storing
    /// only `200` and `201`): any other is not kept, and its key's retry runs again.
    pub stores_only: Option<&'static [u16]>,
    /// With `operations`: an operation still running answers its poll with `Retry-After: N`
    /// (seconds), as Google Cloud's and Azure's long-running operations may.
    pub operation_retry_after: Option<u64>,
    /// Every answer to a write (any method but `GET`) that is a JSON object or an XML document
    /// carries this many more values after its own members: a `"pad": [1, 1, …]` member, or a
    /// `<pad>` element of as many `<item>1</item>` (a hostile API's 7 MB answers).
    pub wide_answers: Option<usize>,
    /// With `wide_answers`, a JSON answer's `"pad"` member comes first, before its own members
    /// (its id past the values idemspec reads).
    pub wide_first: bool,
    /// A replay of a success is a `409` with no replay marker, its body as this says (a layer
    /// that documents "a retry gets 409 with the original body", or an "already exists" error
    /// naming the resource, for a create's replay; any other replays as usual).
    pub conflict_replays: Option<ConflictReplay>,
    /// The status of a reused key with another request (`422` when `None`), for an API that
    /// answers another one, such as `409`.
    pub mismatch_status: Option<StatusCode>,
    /// Deleting a machine forgets the key that created it (a client token that dedups only while
    /// its resource exists): a create with the key afterwards runs anew.
    pub keys_die_with_resource: bool,
    /// How many creates one `POST /_admin/fail-next` makes fail (1 when `None`): a failure that
    /// happens again when the request is re-run.
    pub fail_next_times: Option<u32>,
    /// A create made to fail by `fail-next` fails at once, before the create's latency (an error
    /// page answered before any work), instead of after it.
    pub fails_before_work: bool,
    /// A restart names its machine in its JSON body too, `{"machine": UUID}` (one without it, or
    /// naming another machine than its path, is a `400`), and the idempotency layer's
    /// fingerprint is the body alone, not the method and path: a layer that hashes only the
    /// body, to which every body-less action would look the same.
    pub actions_by_body: bool,
    /// A request without a session cookie this API issued opens a session: its answer sets
    /// `sid` (`Set-Cookie`), and the idempotency layer keeps records per session, so a retry
    /// sent without that cookie is another session's request and runs anew (a layer that opens
    /// the caller's session on its first answer).
    pub first_answer_sessions: bool,
}

/// How a `conflict_replays` API answers a completed key's retry (`Options::conflict_replays`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictReplay {
    /// `409` with the original body, byte for byte.
    OriginalBody,
    /// `409 {"error": {"code": "MachineAlreadyExists", "resource_id": UUID}}`, naming the machine
    /// the original request created (as a cloud API's "already exists" for a reused client
    /// token).
    AlreadyExists,
}

/// A planted defect of the alt API's idempotency layer (`Options::flaw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaw {
    /// The key is read and validated, then ignored: every request runs, a retry a new operation.
    IgnoresKey,
    /// Keys are not scoped per principal: one principal's key finds another's record.
    KeysNotPerPrincipal,
    /// A reused key with another request gets the original's answer instead of a refusal.
    MismatchNotRejected,
    /// A reused key with another request runs as a request of its own (a second resource).
    MismatchRunsAgain,
    /// A create made to fail (`fail-next`, a `fail-once` flavor) does its work and stores its
    /// success, but its client is told `500`: the retry gets the stored success replayed.
    SucceedsBehindFailure,
    /// With `waits_up_to`: a same-key request that waited for the one in flight runs as a
    /// request of its own once the first is done (a second resource), instead of its replay.
    WaiterRunsAgain,
    /// With `waits_up_to`: a same-key request waits for the one in flight however long it runs,
    /// past the bound and past the in-flight TTL (a waiting request never takes an abandoned
    /// record over, and never gets the `408`).
    WaitsUnbounded,
    /// An invalid key is refused with a bare `400`, no body at all: not the error body the API's
    /// shape promises.
    BareRefusals,
}

/// How long a create's long-running operation runs before its machine exists (`operations`).
pub const OPERATION_TAKES: Duration = Duration::from_millis(300);

/// Where the alt API reads a request's key from.
#[derive(Debug, Clone, Copy, Default)]
pub enum KeyIn {
    /// The `Idempotency-Key` header.
    #[default]
    Header,
    /// A query parameter of this name (as Google Cloud's `requestId`).
    Query(&'static str),
    /// A top-level member of the JSON body (as AWS's `clientToken`); the create's body may
    /// carry it beside the machine's fields.
    Json(&'static str),
    /// A field of a form body (as EC2's Query protocol's `ClientToken`).
    Form(&'static str),
}

/// How long the `slow` flavor's handler takes: longer than [`IN_FLIGHT_TTL`].
pub const SLOW: Duration = Duration::from_secs(3);

/// Starts the API and its admin listener on 127.0.0.1:0.
pub async fn start() -> AltApi {
    start_with(Options::default()).await
}

/// Starts the API, configured by `options`, and its admin listener on 127.0.0.1:0.
pub async fn start_with(options: Options) -> AltApi {
    start_serving(options, None).await
}

/// Starts the API over HTTPS (`tls`: its certificate, and for mutual TLS the client certificates
/// that name its principals); the admin listener stays plain HTTP.
pub async fn start_tls(options: Options, tls: Arc<TlsEdge>) -> AltApi {
    start_serving(options, Some(tls)).await
}

async fn start_serving(options: Options, tls: Option<Arc<TlsEdge>>) -> AltApi {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the alt API");
    let addr = listener.local_addr().expect("bound address");
    let app = App {
        addr,
        tls,
        options,
        inner: Arc::new(Mutex::new(Inner::default())),
        server: Arc::new(Mutex::new(None)),
    };
    app.serve(listener);
    let admin_listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the admin listener");
    let admin = admin_listener.local_addr().expect("bound address");
    let admin_router = Router::new()
        .route("/_admin/fail-next", post(arm_fail_next))
        .route("/_admin/crash", post(arm_crash))
        .route("/_admin/restart", post(restart))
        .route("/_admin/stats", get(stats))
        .with_state(app.clone());
    let admin_task = tokio::spawn(async move {
        let _ = axum::serve(admin_listener, admin_router).await;
    });
    AltApi {
        app,
        admin,
        admin_task,
    }
}

/// The server's shared handle: its address, its state ("the database") and the running listener.
#[derive(Clone)]
struct App {
    addr: SocketAddr,
    /// Its TLS edge, when it serves HTTPS.
    tls: Option<Arc<TlsEdge>>,
    options: Options,
    inner: Arc<Mutex<Inner>>,
    /// The accept loop; aborting it drops the listener and, through its `JoinSet`, every open
    /// connection — what a killed process looks like from outside.
    server: Arc<Mutex<Option<JoinHandle<()>>>>,
}

#[derive(Default)]
struct Inner {
    machines: HashMap<String, Machine>,
    /// Side effect behind the API: one IP per machine, keyed by the creating record's sub-key.
    ips: HashMap<String, String>,
    next_ip: u32,
    records: HashMap<Scope, Record>,
    fail_next: u32,
    /// The `fail-once…` flavors that have failed their one time.
    failed_once: std::collections::HashSet<String>,
    /// With `Flaw::SucceedsBehindFailure`: the sub-keys of work done whose client is told `500`.
    failed_behind: std::collections::HashSet<String>,
    crash_armed: bool,
    /// With `sessions`: each open session's API key, by `sid`.
    sessions: HashMap<String, String>,
    /// With `sessions`: how many logins opened one.
    logins: u64,
    /// With `operations`: how many polls of an operation were answered, by its name.
    polls: HashMap<String, u64>,
    /// With `actions_by_body`: the body of each restart that reached the handler, in order.
    action_bodies: Vec<Bytes>,
    /// With `first_answer_sessions`: the sessions opened, each its `sid`.
    first_answer_sessions: std::collections::HashSet<String>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Scope {
    principal: String,
    endpoint: &'static str,
    key: String,
}

enum Record {
    InFlight {
        fingerprint: [u8; 32],
        started: Instant,
    },
    Done {
        fingerprint: [u8; 32],
        response: Stored,
    },
}

#[derive(Clone)]
struct Stored {
    status: StatusCode,
    headers: Vec<(String, String)>,
    body: Bytes,
}

#[derive(Clone)]
struct Machine {
    /// When it exists for lists and reads (its operation is done).
    ready_at: Instant,
    name: Option<String>,
    owner: String,
    uuid: String,
    flavor: String,
    tag: String,
    ip: String,
    restarts: u64,
}

/// The long-running operation that creates `machine` (`operations`), in its current state.
fn operation_of(machine: &Machine, tenant_in_path: bool) -> Value {
    let status = if Instant::now() >= machine.ready_at {
        "DONE"
    } else {
        "RUNNING"
    };
    let base = if tenant_in_path {
        format!("https://alt-api.test/projects/{}", machine.owner)
    } else {
        "https://alt-api.test".to_owned()
    };
    json!({"kind": "operation", "name": format!("op-{}", machine.uuid), "status": status,
           "targetLink": format!("{base}/api/machines/{}", machine.uuid),
           "selfLink": format!("{base}/api/operations/op-{}", machine.uuid)})
}

/// `GET /api/operations/{name}`: a create's operation, as its principal.
async fn get_operation(
    State(app): State<App>,
    headers: HeaderMap,
    Path(params): Path<HashMap<String, String>>,
) -> Response {
    let Some(owner) = principal(&headers) else {
        return unauthorized();
    };
    let uuid = params
        .get("name")
        .and_then(|n| n.strip_prefix("op-"))
        .unwrap_or_default();
    let mut inner = app.lock();
    let Some(machine) = inner.machines.get(uuid).filter(|m| m.owner == owner) else {
        return problem(StatusCode::NOT_FOUND, "not-found", "no such operation");
    };
    let running = !machine.ready();
    let mut resp = Json(operation_of(machine, app.options.tenant_in_path)).into_response();
    *inner.polls.entry(uuid.to_owned()).or_default() += 1;
    if let Some(seconds) = app.options.operation_retry_after.filter(|_| running) {
        resp.headers_mut()
            .insert("retry-after", HeaderValue::from(seconds));
    }
    resp
}

impl Machine {
    /// Whether it exists for lists and reads (its create's operation is done).
    fn ready(&self) -> bool {
        Instant::now() >= self.ready_at
    }

    fn view(&self) -> Value {
        json!({"uuid": self.uuid, "flavor": self.flavor, "tag": self.tag, "ip": self.ip,
               "restarts": self.restarts, "state": "running",
               "selfLink": format!("https://alt-api.test/api/machines/{}", self.uuid)})
    }
}

impl App {
    /// The header that marks a replay, lowercase.
    fn replayed_header(&self) -> &'static str {
        self.options
            .replayed_header
            .unwrap_or("idempotent-replayed")
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .expect("the alt API's state lock is never poisoned")
    }

    /// Serves the API on `listener` until a crash or drop.
    fn serve(&self, listener: TcpListener) {
        let api = Router::new()
            .route("/api/machines", post(create).get(list))
            .route("/api/machines/search", post(search))
            .route("/api/operations/{name}", get(get_operation))
            .route("/api/machines/{uuid}", get(get_one).delete(delete_one))
            .route("/api/machines/{uuid}/restart", post(restart_machine));
        let api = if self.options.operations_by_header {
            api.route_layer(axum::middleware::from_fn(named_operation))
        } else {
            api
        };
        let api = if self.options.xml_answers {
            api.layer(axum::middleware::map_response(as_xml))
        } else {
            api
        };
        let api = if self.options.wide_answers.is_some() {
            // Outside `as_xml`, so an XML answer is widened as XML.
            api.layer(axum::middleware::from_fn_with_state(self.clone(), widen))
        } else {
            api
        };
        let api = if self.options.first_answer_sessions {
            api.route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                session_on_first_answer,
            ))
        } else {
            api
        };
        let api = if self.options.sessions {
            api.route_layer(axum::middleware::from_fn_with_state(
                self.clone(),
                session_only,
            ))
            .route("/login", post(login))
        } else {
            api
        };
        let router = if self.options.tenant_in_path {
            // Each principal's resources under its own project: `/projects/alpha/api/machines`.
            Router::new()
                .nest("/projects/{project}", api)
                .route_layer(axum::middleware::from_fn(own_project_only))
                .with_state(self.clone())
        } else {
            api.with_state(self.clone())
        };
        let router = if self.options.query_actions {
            // Outside the routes, so the request is routed by the path it is rewritten to.
            Router::new()
                .fallback_service(router)
                .layer(axum::middleware::from_fn(query_action))
        } else {
            router
        };
        let router = if self.options.ids_in_body {
            // Outside the routes, so the request is routed by the path it is rewritten to.
            Router::new()
                .fallback_service(router)
                .layer(axum::middleware::from_fn(id_from_body))
        } else {
            router
        };
        let tls = self.tls.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                if let Some(edge) = &tls {
                    connections.spawn(edge.clone().serve(stream, router.clone()));
                    while connections.try_join_next().is_some() {}
                    continue;
                }
                let service = hyper_util::service::TowerToHyperService::new(router.clone());
                connections.spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        *self.server.lock().expect("server lock") = Some(task);
    }

    fn crash(&self) {
        if let Some(server) = self.server.lock().expect("server lock").take() {
            server.abort();
        }
    }
}

// ---- the idempotency layer -------------------------------------------------------------------

/// What a handler's work produced, or `None` when the process "died" before answering.
type Work = Option<Stored>;

/// Runs `work` at most once per (principal, endpoint, key), replaying its stored outcome.
async fn idempotent<F, Fut>(
    app: &App,
    principal: &str,
    endpoint: &'static str,
    request: (&Method, &Uri, &HeaderMap, &Bytes),
    work: F,
) -> Response
where
    F: FnOnce(App, String) -> Fut,
    Fut: std::future::Future<Output = Work> + Send + 'static,
{
    let (method, uri, headers, body) = request;
    let raw = match app.options.key_in {
        KeyIn::Header => headers.get("idempotency-key").cloned(),
        KeyIn::Query(name) => form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .find(|(n, _)| n == name)
            .map(|(_, v)| HeaderValue::from_str(&v).unwrap_or(HeaderValue::from_static(""))),
        KeyIn::Json(name) => serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get(name).cloned())
            .map(|v| match v {
                Value::String(s) => {
                    HeaderValue::from_str(&s).unwrap_or(HeaderValue::from_static(""))
                }
                _ => HeaderValue::from_static(""),
            }),
        KeyIn::Form(name) => form_urlencoded::parse(body)
            .find(|(n, _)| n == name)
            .map(|(_, v)| HeaderValue::from_str(&v).unwrap_or(HeaderValue::from_static(""))),
    };
    let key = match raw.as_ref() {
        None => {
            // Keys are optional (stripe-v1): without one the request simply runs.
            return finish(tokio::spawn(work(app.clone(), fresh_sub_key())).await).await;
        }
        Some(value) => match valid_key(value, app.options.uuid_keys, app.options.key_max_len) {
            Some(key) => key,
            None => return invalid_key(&app.options),
        },
    };
    let fingerprint = fingerprint(method, uri, body, app.options.actions_by_body);
    if app.options.flaw == Some(Flaw::IgnoresKey) {
        return finish(tokio::spawn(work(app.clone(), fresh_sub_key())).await).await;
    }
    let key = match app.options.key_prefix {
        Some(n) => key.chars().take(n).collect(),
        None => key,
    };
    let scope = Scope {
        principal: match (app.options.flaw, session_of(headers)) {
            (Some(Flaw::KeysNotPerPrincipal), _) => "everyone".to_owned(),
            (_, Some(sid)) => format!("{principal} in session {sid}"),
            (_, None) => principal.to_owned(),
        },
        endpoint: if app.options.keys_across_endpoints {
            "any endpoint"
        } else {
            endpoint
        },
        key,
    };
    // With `waits_up_to`: when this request began to wait for the one in flight, if it did.
    let mut waiting_since: Option<Instant> = None;
    let claimed = loop {
        let claimed = 'claim: {
            let mut inner = app.lock();
            match inner.records.get(&scope) {
                Some(
                    Record::Done {
                        fingerprint: stored,
                        ..
                    }
                    | Record::InFlight {
                        fingerprint: stored,
                        ..
                    },
                ) if *stored != fingerprint
                    && !(((app.options.mismatch_answers_original
                        && app.options.flaw != Some(Flaw::MismatchRunsAgain))
                        || app.options.flaw == Some(Flaw::MismatchNotRejected)
                        || (app.options.action_replays_create
                            && endpoint != "POST /api/machines"))
                        && matches!(inner.records.get(&scope), Some(Record::Done { .. }))) =>
                {
                    if app.options.flaw == Some(Flaw::MismatchRunsAgain) {
                        break 'claim Claimed::RunsAnew;
                    }
                    if app.options.plain_conflicts {
                        return plain_conflict("idempotency_key_reused", false);
                    }
                    if app.options.stripe_shape {
                        return stripe_error(StatusCode::BAD_REQUEST, "idempotency_error", None);
                    }
                    if app.options.aws_errors {
                        return aws_error(StatusCode::BAD_REQUEST, "IdempotentParameterMismatch");
                    }
                    return problem(
                        app.options
                            .mismatch_status
                            .unwrap_or(StatusCode::UNPROCESSABLE_ENTITY),
                        "key-reused-with-different-request",
                        "this Idempotency-Key was used with a different request",
                    );
                }
                Some(Record::Done { .. })
                    if waiting_since.is_some()
                        && app.options.flaw == Some(Flaw::WaiterRunsAgain) =>
                {
                    Claimed::RunsAnew
                }
                Some(Record::Done { response, .. }) => {
                    let mut replay = response.clone();
                    if app.options.operations {
                        // The same operation, in its current state.
                        if let Some(machine) = serde_json::from_slice::<Value>(&replay.body)
                            .ok()
                            .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_owned))
                            .and_then(|name| name.strip_prefix("op-").map(str::to_owned))
                            .and_then(|uuid| inner.machines.get(&uuid).cloned())
                        {
                            replay.body = Bytes::from(
                                operation_of(&machine, app.options.tenant_in_path).to_string(),
                            );
                        }
                    }
                    let success = replay.status.is_success();
                    // An "already exists" names a created machine: a create's replay alone.
                    let conflict = app.options.conflict_replays.filter(|style| {
                        success
                            && (*style == ConflictReplay::OriginalBody
                                || endpoint == "POST /api/machines")
                    });
                    if let Some(style) = conflict {
                        return respond(Some(conflict_replay(style, replay)));
                    }
                    let value = app
                        .options
                        .replayed_values
                        .map_or("true", |(_, replay)| replay);
                    replay
                        .headers
                        .push((app.replayed_header().into(), value.into()));
                    if let Some(status) = app.options.replay_status.filter(|_| success) {
                        replay.status = status;
                    }
                    if app.options.rerender_replays && success {
                        if let Ok(Value::Object(mut body)) = serde_json::from_slice(&replay.body) {
                            body.insert("replayed_at".into(), Value::from(1_764_633_600));
                            replay.body = Bytes::from(Value::Object(body).to_string());
                        }
                    }
                    if app.options.envelope_replays && success {
                        replay.status = StatusCode::OK;
                        let mut wrapped = b"{\"cached\":true,\"data\":".to_vec();
                        wrapped.extend_from_slice(&replay.body);
                        wrapped.push(b'}');
                        replay.body = Bytes::from(wrapped);
                    }
                    return respond(Some(replay));
                }
                Some(Record::InFlight { .. }) if app.options.retry_waits_on_in_flight => {
                    Claimed::Pend
                }
                Some(Record::InFlight { started, .. })
                    if (app.options.waits_for_result || app.options.waits_up_to.is_some())
                        && (started.elapsed() < IN_FLIGHT_TTL
                            || (waiting_since.is_some()
                                && app.options.flaw == Some(Flaw::WaitsUnbounded))) =>
                {
                    Claimed::AwaitResult
                }
                Some(Record::InFlight { started, .. })
                    if started.elapsed() < IN_FLIGHT_TTL || app.options.never_reclaim =>
                {
                    if let Some(wait) = app.options.in_flight_wait {
                        break 'claim Claimed::RefuseAfter(wait);
                    }
                    if app.options.plain_conflicts {
                        return plain_conflict("request_in_progress", true);
                    }
                    if let Some(vendor) = vendor_in_flight(&app.options) {
                        return vendor;
                    }
                    let mut response = problem(
                        app.options.in_flight_status.unwrap_or(StatusCode::CONFLICT),
                        "request-in-progress",
                        "a request with this Idempotency-Key is still in progress",
                    );
                    response
                        .headers_mut()
                        .insert("retry-after", HeaderValue::from_static("1"));
                    return response;
                }
                // No record, or an in-flight one abandoned past its TTL: claim (or reclaim) it.
                _ => {
                    if app.options.one_record_per_principal {
                        inner.records.retain(|s, _| s.principal != scope.principal);
                    }
                    inner.records.insert(
                        scope.clone(),
                        Record::InFlight {
                            fingerprint,
                            started: Instant::now(),
                        },
                    );
                    Claimed::Work
                }
            }
        };
        if matches!(claimed, Claimed::AwaitResult) {
            let since = *waiting_since.get_or_insert_with(Instant::now);
            let bounded = app.options.flaw != Some(Flaw::WaitsUnbounded);
            if let Some(bound) = app.options.waits_up_to.filter(|_| bounded) {
                if since.elapsed() >= bound {
                    return wait_ran_out();
                }
            }
            // Look again shortly: the first request's result replays, or its record's TTL ends.
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        break claimed;
    };
    match claimed {
        Claimed::Work => {}
        Claimed::Pend => return std::future::pending().await,
        Claimed::AwaitResult => unreachable!("awaited in the claim loop"),
        Claimed::RunsAnew => {
            return finish(tokio::spawn(work(app.clone(), fresh_sub_key())).await).await
        }
        Claimed::RefuseAfter(wait) => {
            tokio::time::sleep(wait).await;
            return problem(
                app.options.in_flight_status.unwrap_or(StatusCode::CONFLICT),
                "request-in-progress",
                "a request with this Idempotency-Key is still in progress",
            );
        }
    }
    let sub_key = sub_key_of(&scope);
    let future = work(app.clone(), sub_key.clone());
    let store_app = app.clone();
    // The work and its bookkeeping run in their own task: a client that gives up does not cancel them.
    let outcome = tokio::spawn(async move {
        let outcome = future.await;
        let mut inner = store_app.lock();
        let kept = |status: StatusCode| {
            status != StatusCode::CONFLICT
                && status != StatusCode::TOO_MANY_REQUESTS
                && store_app
                    .options
                    .stores_only
                    .is_none_or(|only| only.contains(&status.as_u16()))
        };
        match &outcome {
            Some(stored) if kept(stored.status) => {
                inner.records.insert(
                    scope,
                    Record::Done {
                        fingerprint,
                        response: stored.clone(),
                    },
                );
            }
            Some(_) => {
                inner.records.remove(&scope);
            }
            None => {} // crashed: the record stays in flight until its TTL
        }
        outcome
    })
    .await;
    let mut response = finish(outcome).await;
    if app.lock().failed_behind.remove(&sub_key) {
        return problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "provisioning-failed",
            "the hypervisor failed",
        );
    }
    if let Some((first, _)) = app.options.replayed_values {
        response.headers_mut().insert(
            axum::http::HeaderName::from_static(app.replayed_header()),
            HeaderValue::from_static(first),
        );
    }
    response
}

/// The answer to a same-key request whose wait for the one in flight ran out (`waits_up_to`).
fn wait_ran_out() -> Response {
    let mut response = problem(
        StatusCode::REQUEST_TIMEOUT,
        "request-in-progress",
        "the request with this Idempotency-Key did not finish in time",
    );
    response
        .headers_mut()
        .insert("retry-after", HeaderValue::from_static("1"));
    response
}

/// A stored success answered again as a `conflict_replays` API does: a `409`, no marker.
fn conflict_replay(style: ConflictReplay, mut replay: Stored) -> Stored {
    replay.status = StatusCode::CONFLICT;
    if style == ConflictReplay::AlreadyExists {
        replay.headers.retain(|(name, _)| name != "location");
        let uuid = serde_json::from_slice::<Value>(&replay.body)
            .ok()
            .and_then(|v| v.pointer("/data/uuid").cloned())
            .unwrap_or(Value::Null);
        replay.body = Bytes::from(
            json!({"error": {
                "code": "MachineAlreadyExists",
                "message": "a machine with this idempotency key exists",
                "resource_id": uuid,
            }})
            .to_string(),
        );
    }
    replay
}

/// The response for a finished piece of work. Work that "died" (a crash) never answers: the crash
/// aborts this connection, and nothing may reach the client before that happens.
async fn finish(outcome: Result<Work, tokio::task::JoinError>) -> Response {
    match outcome {
        Ok(Some(stored)) => respond(Some(stored)),
        Ok(None) => std::future::pending().await,
        // The work panicked: a 500 the client may retry (nothing was stored).
        Err(_) => respond(None),
    }
}

fn valid_key(value: &HeaderValue, uuid_only: bool, max_len: Option<usize>) -> Option<String> {
    let key = value.to_str().ok()?;
    if uuid_only {
        return uuid::Uuid::parse_str(key).ok().map(|_| key.to_owned());
    }
    let visible = key.bytes().all(|b| (0x21..=0x7e).contains(&b));
    (!key.is_empty() && key.len() <= max_len.unwrap_or(255) && visible).then(|| key.to_owned())
}

/// A sub-key no other request has: the work of a request that runs as its own.
fn fresh_sub_key() -> String {
    hex::encode(Sha256::digest(uuid::Uuid::new_v4().as_bytes()))
}

/// A request's fingerprint: its method, path and body, or (`body_only`, `actions_by_body`) its
/// body alone.
fn fingerprint(method: &Method, uri: &Uri, body: &Bytes, body_only: bool) -> [u8; 32] {
    let mut hash = Sha256::new();
    if !body_only {
        hash.update(method.as_str());
        hash.update([0]);
        hash.update(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
        hash.update([0]);
    }
    hash.update(body);
    hash.finalize().into()
}

fn respond(outcome: Work) -> Response {
    let Some(stored) = outcome else {
        return problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the request failed",
        );
    };
    let mut response = (stored.status, stored.body).into_response();
    for (name, value) in stored.headers {
        if let (Ok(name), Ok(value)) = (
            name.parse::<axum::http::HeaderName>(),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

fn stored(status: StatusCode, location: Option<String>, body: Option<Value>) -> Stored {
    let mut headers = Vec::new();
    if let Some(location) = location {
        headers.push(("location".to_owned(), location));
    }
    let body = match body {
        Some(value) => {
            headers.push(("content-type".to_owned(), "application/json".to_owned()));
            Bytes::from(value.to_string())
        }
        None => Bytes::new(),
    };
    Stored {
        status,
        headers,
        body,
    }
}

fn problem_stored(status: StatusCode, kind: &str, detail: &str) -> Stored {
    Stored {
        status,
        headers: vec![("content-type".into(), "application/problem+json".into())],
        body: Bytes::from(
            json!({"type": format!("https://alt-api.test/problems/{kind}"), "title": detail, "status": status.as_u16()})
                .to_string(),
        ),
    }
}

/// Stripe's error object, `{"error": {"type": TYPE, "code": CODE}}` (`stripe_shape`).
fn stripe_error(status: StatusCode, kind: &str, code: Option<&str>) -> Response {
    let mut error = json!({"type": kind, "message": kind});
    if let Some(code) = code {
        error["code"] = code.into();
    }
    (
        status,
        [("content-type", "application/json")],
        json!({ "error": error }).to_string(),
    )
        .into_response()
}

/// `{"__type": TYPE}`, as AWS's JSON protocol names an error (`aws_errors`).
fn aws_error(status: StatusCode, kind: &str) -> Response {
    let body = json!({"__type": kind, "message": kind}).to_string();
    (
        status,
        [("content-type", "application/x-amz-json-1.1")],
        body,
    )
        .into_response()
}

/// Google's error object, `{"error": {"code", "message", "status"}}` (`gcp_errors`).
fn gcp_error(status: StatusCode, name: &str) -> Response {
    let error = json!({"code": status.as_u16(), "message": name, "status": name});
    (
        status,
        [("content-type", "application/json; charset=UTF-8")],
        json!({ "error": error }).to_string(),
    )
        .into_response()
}

/// The refusal of an invalid key, in the API's error shape (bare with `Flaw::BareRefusals`).
fn invalid_key(options: &Options) -> Response {
    let status = StatusCode::BAD_REQUEST;
    if options.flaw == Some(Flaw::BareRefusals) {
        return status.into_response();
    }
    if options.stripe_shape {
        return stripe_error(status, "invalid_request_error", None);
    }
    if options.aws_errors {
        return aws_error(status, "ValidationException");
    }
    if options.gcp_errors {
        return gcp_error(status, "INVALID_ARGUMENT");
    }
    let detail = if options.uuid_keys {
        "the Idempotency-Key must be a UUID"
    } else {
        "the Idempotency-Key must be 1-255 visible ASCII characters"
    };
    problem(status, "invalid-idempotency-key", detail)
}

/// The refusal of a key in flight in a vendor's error shape, none of which sends `Retry-After`;
/// `None` for the API's own problem body.
fn vendor_in_flight(options: &Options) -> Option<Response> {
    let status = StatusCode::CONFLICT;
    if options.stripe_shape {
        let code = Some("idempotency_key_in_use");
        return Some(stripe_error(status, "idempotency_error", code));
    }
    if options.aws_errors {
        return Some(aws_error(status, "ConflictException"));
    }
    options.gcp_errors.then(|| gcp_error(status, "ABORTED"))
}

/// A `409` with `{"error": {"code": CODE}}` (no problem type), with `Retry-After: 1` if asked.
fn plain_conflict(code: &str, retry_after: bool) -> Response {
    let body = serde_json::json!({"error": {"code": code}}).to_string();
    let mut response = (
        StatusCode::CONFLICT,
        [("content-type", "application/json")],
        body,
    )
        .into_response();
    if retry_after {
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from_static("1"));
    }
    response
}

fn problem(status: StatusCode, kind: &str, detail: &str) -> Response {
    respond(Some(problem_stored(status, kind, detail)))
}

// ---- the API -------------------------------------------------------------------------------

/// With `ids_in_body`: `POST /api/machines/by-id/{get,delete,restart}` with `Id=…` is the
/// request on the path that names the machine, its body kept.
async fn id_from_body(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let Some(what) = request
        .uri()
        .path()
        .strip_prefix("/api/machines/by-id/")
        .map(str::to_owned)
    else {
        return next.run(request).await;
    };
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let id = form_urlencoded::parse(&bytes)
        .find(|(n, _)| n == "Id")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let id: String = form_urlencoded::byte_serialize(id.as_bytes()).collect();
    let (method, path) = match what.as_str() {
        "get" => (Method::GET, format!("/api/machines/{id}")),
        "delete" => (Method::DELETE, format!("/api/machines/{id}")),
        _ => (Method::POST, format!("/api/machines/{id}/restart")),
    };
    parts.method = method;
    parts.uri = path.parse().expect("a path");
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

/// With `query_actions`: a `POST /` is the request its form body's `Action` names (see
/// `Options::query_actions`), its body kept (the key is one of its fields).
async fn query_action(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if request.uri().path() != "/" {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let field = |name: &str| {
        form_urlencoded::parse(&bytes)
            .find(|(n, _)| n == name)
            .map(|(_, v)| form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>())
    };
    let instance = field("InstanceId.1");
    let (method, path) = match (field("Action").as_deref(), instance) {
        (Some("RunInstances"), _) => (Method::POST, "/api/machines".to_owned()),
        (Some("DescribeInstances"), Some(id)) => (Method::GET, format!("/api/machines/{id}")),
        (Some("DescribeInstances"), None) => (
            Method::GET,
            format!("/api/machines?tag={}", field("tag").unwrap_or_default()),
        ),
        (Some("TerminateInstances"), Some(id)) => (Method::DELETE, format!("/api/machines/{id}")),
        (Some("RebootInstances"), Some(id)) => {
            (Method::POST, format!("/api/machines/{id}/restart"))
        }
        _ => {
            return problem(
                StatusCode::BAD_REQUEST,
                "InvalidAction",
                "no such action, or its InstanceId.1 is missing",
            )
        }
    };
    parts.method = method;
    parts.uri = path.parse().expect("a path");
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

/// With `wide_answers`: a write's answer widened (see `Options::wide_answers`).
async fn widen(
    State(app): State<App>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let write = request.method() != Method::GET;
    let response = next.run(request).await;
    let Some(n) = app.options.wide_answers.filter(|n| write && *n > 0) else {
        return response;
    };
    let (mut parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let wide = if app.options.wide_first && body.starts_with(b"{") {
        let mut out = b"{\"pad\":[".to_vec();
        out.extend_from_slice(&b"1,".repeat(n - 1));
        out.extend_from_slice(b"1],");
        out.extend_from_slice(&body[1..]);
        out
    } else if body.starts_with(b"{") && body.ends_with(b"}") {
        let mut out = body[..body.len() - 1].to_vec();
        out.extend_from_slice(b",\"pad\":[");
        out.extend_from_slice(&b"1,".repeat(n - 1));
        out.extend_from_slice(b"1]}");
        out
    } else if let Some(end) = body
        .iter()
        .rposition(|b| *b == b'<')
        .filter(|_| body.starts_with(b"<"))
    {
        let mut out = body[..end].to_vec();
        out.extend_from_slice(b"<pad>");
        out.extend_from_slice(&b"<item>1</item>".repeat(n));
        out.extend_from_slice(b"</pad>");
        out.extend_from_slice(&body[end..]);
        out
    } else {
        body.to_vec()
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(wide))
}

/// With `xml_answers`: a JSON answer as XML (see `Options::xml_answers`).
async fn as_xml(response: Response) -> Response {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(members) => {
                for (name, v) in members {
                    out.push_str(&format!("<{name}>"));
                    write(v, out);
                    out.push_str(&format!("</{name}>"));
                }
            }
            Value::Array(values) => {
                for v in values {
                    out.push_str("<item>");
                    write(v, out);
                    out.push_str("</item>");
                }
            }
            Value::String(text) => out.push_str(
                &text
                    .replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;"),
            ),
            Value::Null => {}
            other => out.push_str(&other.to_string()),
        }
    }
    let (mut parts, body) = response.into_parts();
    let json = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.contains("json"));
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let value = json
        .then(|| serde_json::from_slice::<Value>(&bytes).ok())
        .flatten();
    let Some(value) = value else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response>");
    write(&value, &mut xml);
    xml.push_str("</Response>");
    parts.headers.insert(
        "content-type",
        HeaderValue::from_static("text/xml;charset=UTF-8"),
    );
    parts.headers.remove("content-length");
    Response::from_parts(parts, axum::body::Body::from(xml))
}

/// With `sessions`: opens a session for the API key in the body, as a `sid` cookie.
async fn login(State(app): State<App>, body: Bytes) -> Response {
    let key = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("api_key").and_then(Value::as_str).map(str::to_owned))
        .filter(|k| API_KEYS.iter().any(|(known, _)| known == k));
    let Some(key) = key else {
        return unauthorized();
    };
    let sid = uuid::Uuid::new_v4().simple().to_string();
    let mut inner = app.lock();
    inner.sessions.insert(sid.clone(), key);
    inner.logins += 1;
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        axum::http::header::SET_COOKIE,
        HeaderValue::from_str(&format!("sid={sid}; Path=/; HttpOnly")).expect("a cookie"),
    );
    response
}

/// With `sessions`: a request is its session's principal (its `sid` cookie's API key, put in
/// `X-Api-Key` for the handlers); without an open session, `401`.
async fn session_only(
    State(app): State<App>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let key = sid_cookie(request.headers()).and_then(|sid| app.lock().sessions.get(&sid).cloned());
    let Some(key) = key else {
        return unauthorized();
    };
    request.headers_mut().insert(
        "x-api-key",
        HeaderValue::from_str(&key).expect("a known key"),
    );
    next.run(request).await
}

/// The header through which `session_on_first_answer` tells the idempotency layer a request's
/// session.
const SESSION_HEADER: &str = "x-alt-session";

/// The `sid` a request's cookies carry, if any.
fn sid_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix("sid=").map(str::to_owned))
}

/// The session `session_on_first_answer` put a request in, if any.
fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
}

/// With `first_answer_sessions`: a request in a session this API issued stays in it; any other
/// opens one, whose `sid` its answer sets.
async fn session_on_first_answer(
    State(app): State<App>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let known =
        sid_cookie(request.headers()).filter(|sid| app.lock().first_answer_sessions.contains(sid));
    let (sid, new) = match known {
        Some(sid) => (sid, false),
        None => (uuid::Uuid::new_v4().simple().to_string(), true),
    };
    request.headers_mut().insert(
        SESSION_HEADER,
        HeaderValue::from_str(&sid).expect("a hex sid"),
    );
    if new {
        app.lock().first_answer_sessions.insert(sid.clone());
    }
    let mut response = next.run(request).await;
    if new {
        response.headers_mut().insert(
            axum::http::header::SET_COOKIE,
            HeaderValue::from_str(&format!("sid={sid}; Path=/; HttpOnly")).expect("a cookie"),
        );
    }
    response
}

/// The principal an `X-Api-Key` authenticates, if any.
fn principal(headers: &HeaderMap) -> Option<String> {
    let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    API_KEYS
        .iter()
        .find(|(k, _)| Some(*k) == key)
        .map(|(_, p)| (*p).to_owned())
}

/// With `operations_by_header`: the operation a request names in `X-Operation` must be the one its
/// method and path serve.
async fn named_operation(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    let expected = match (request.method().as_str(), path) {
        ("POST", p) if p.ends_with("/api/machines") => "CreateMachine",
        ("POST", p) if p.ends_with("/api/machines/search") => "ListMachines",
        ("POST", p) if p.ends_with("/restart") => "RestartMachine",
        ("GET", p) if p.ends_with("/api/machines") => "ListMachines-by-GET-is-gone",
        ("GET", _) => "GetMachine",
        ("DELETE", _) => "DeleteMachine",
        _ => "",
    };
    let named = request
        .headers()
        .get("x-operation")
        .and_then(|v| v.to_str().ok());
    if named == Some(expected) {
        next.run(request).await
    } else {
        problem(
            StatusCode::BAD_REQUEST,
            "unknown-operation",
            "X-Operation does not name what this request does",
        )
    }
}

/// `POST /api/machines/search` with `{"tag": T}`: the list as a request with a body.
async fn search(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    let tag = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("tag").and_then(Value::as_str).map(str::to_owned));
    list(State(app), headers, Query(ListQuery { tag })).await
}

/// With the tenant in the path: a principal reaches only its own project (named as it is).
async fn own_project_only(
    Path(params): Path<HashMap<String, String>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match principal(request.headers()) {
        Some(p) if params.get("project") == Some(&p) => next.run(request).await,
        Some(_) => problem(StatusCode::NOT_FOUND, "not-found", "no such project"),
        None => unauthorized(),
    }
}

fn unauthorized() -> Response {
    problem(
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        "a valid X-Api-Key is required",
    )
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMachine {
    flavor: String,
    tag: String,
    /// The machine's name, where the API takes one (`names_in_body`).
    #[serde(default)]
    name: Option<String>,
    /// The key, where the API reads it from the body (`KeyIn::Json("clientToken")`).
    #[serde(default, rename = "clientToken")]
    #[allow(dead_code, reason = "read by the idempotency layer, not the handler")]
    client_token: Option<String>,
}

async fn create(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(owner) = principal(&headers) else {
        return unauthorized();
    };
    let parsed = if app.options.stripe_shape || app.options.query_actions {
        let form = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
        let fields: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
        match (form, fields.get("flavor"), fields.get("tag")) {
            (true, Some(flavor), Some(tag)) => Ok(NewMachine {
                flavor: flavor.clone(),
                tag: tag.clone(),
                name: fields.get("name").cloned(),
                client_token: None,
            }),
            _ => Err("a form body with `flavor` and `tag`".to_owned()),
        }
    } else {
        serde_json::from_slice::<NewMachine>(&body).map_err(|e| e.to_string())
    };
    let new = match parsed {
        Ok(new) => new,
        Err(_) if app.options.stripe_shape => {
            return stripe_error(StatusCode::BAD_REQUEST, "invalid_request_error", None)
        }
        Err(e) => return problem(StatusCode::BAD_REQUEST, "invalid-body", &e),
    };
    if app.options.refuses_flavor == Some(new.flavor.as_str()) {
        return problem(StatusCode::BAD_REQUEST, "invalid-flavor", "no such flavor");
    }
    idempotent(
        &app,
        &owner.clone(),
        "POST /api/machines",
        (&method, &uri, &headers, &body),
        move |app, sub_key| async move {
            if app.options.fails_before_work && app.lock().fail_next > 0 {
                app.lock().fail_next -= 1;
                return Some(problem_stored(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "provisioning-failed",
                    "the hypervisor failed",
                ));
            }
            tokio::time::sleep(app.options.create_latency.unwrap_or(CREATE_LATENCY)).await;
            // Failure by what is sent (the profile's request variants): `hang` never finishes,
            // `slow` outlives the in-flight TTL.
            match new.flavor.as_str() {
                "hang" => match app.options.hang_for {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending::<()>().await,
                },
                "slow" => tokio::time::sleep(SLOW).await,
                _ => {}
            }
            let mut inner = app.lock();
            // Do or return the existing one: a reclaimed record resumes with the same IP.
            let ip = match inner.ips.get(&sub_key) {
                Some(ip) => ip.clone(),
                None => {
                    inner.next_ip += 1;
                    let ip = format!("10.0.{}.{}", inner.next_ip / 250, inner.next_ip % 250 + 1);
                    inner.ips.insert(sub_key.clone(), ip.clone());
                    ip
                }
            };
            if inner.crash_armed {
                inner.crash_armed = false;
                drop(inner);
                app.crash();
                return None;
            }
            let fails_by_request = new.flavor == "fail-always"
                || (new.flavor.starts_with("fail-once")
                    && inner.failed_once.insert(new.flavor.clone()));
            let fails = inner.fail_next > 0 || fails_by_request;
            if fails && app.options.flaw == Some(Flaw::SucceedsBehindFailure) {
                inner.fail_next = inner.fail_next.saturating_sub(u32::from(!fails_by_request));
                inner.failed_behind.insert(sub_key.clone());
            } else if fails {
                inner.fail_next = inner.fail_next.saturating_sub(u32::from(!fails_by_request));
                // Roll back what this attempt did: a stored 500 must not leave half-done work.
                inner.ips.remove(&sub_key);
                return Some(problem_stored(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "provisioning-failed",
                    "the hypervisor failed",
                ));
            }
            let uuid = sub_key_uuid(&sub_key);
            if app.options.names_in_body {
                let taken = inner.machines.values().any(|m| {
                    m.owner == owner && m.uuid != uuid && m.name.is_some() && m.name == new.name
                });
                if new.name.is_none() || taken {
                    inner.ips.remove(&sub_key);
                    return Some(problem_stored(
                        StatusCode::CONFLICT,
                        "already-exists",
                        "a machine of this name exists",
                    ));
                }
            }
            let ready_at = if app.options.operations {
                Instant::now() + OPERATION_TAKES
            } else {
                Instant::now()
            };
            let machine = inner.machines.entry(uuid.clone()).or_insert(Machine {
                ready_at,
                name: new.name,
                owner,
                uuid: uuid.clone(),
                flavor: new.flavor,
                tag: new.tag,
                ip,
                restarts: 0,
            });
            if app.options.operations {
                return Some(stored(
                    StatusCode::OK,
                    None,
                    Some(operation_of(machine, app.options.tenant_in_path)),
                ));
            }
            Some(stored(
                StatusCode::CREATED,
                Some(format!("/api/machines/{uuid}")),
                Some(json!({"data": machine.view()})),
            ))
        },
    )
    .await
}

/// The sub-key of the work a record's scope runs: what its side effects and machine are keyed by.
fn sub_key_of(scope: &Scope) -> String {
    hex::encode(Sha256::digest(format!(
        "{}\n{}\n{}",
        scope.principal, scope.endpoint, scope.key
    )))
}

/// The machine's id, derived from the record's sub-key so a resumed create names the same machine.
fn sub_key_uuid(sub_key: &str) -> String {
    let bytes: [u8; 16] = hex::decode(&sub_key[..32])
        .ok()
        .and_then(|b| b.try_into().ok())
        .unwrap_or_default();
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

#[derive(serde::Deserialize)]
struct ListQuery {
    tag: Option<String>,
}

async fn list(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Response {
    let Some(owner) = principal(&headers) else {
        return unauthorized();
    };
    let inner = app.lock();
    let items: Vec<Value> = inner
        .machines
        .values()
        .filter(|m| m.owner == owner && m.ready() && query.tag.as_ref().is_none_or(|t| *t == m.tag))
        .map(Machine::view)
        .collect();
    Json(json!({"meta": {"total": items.len()}, "data": items})).into_response()
}

async fn get_one(
    State(app): State<App>,
    headers: HeaderMap,
    Path(params): Path<HashMap<String, String>>,
) -> Response {
    let uuid = params.get("uuid").cloned().unwrap_or_default();
    let Some(owner) = principal(&headers) else {
        return unauthorized();
    };
    match app
        .lock()
        .machines
        .get(&uuid)
        .filter(|m| m.owner == owner && m.ready())
    {
        Some(machine) => Json(json!({"data": machine.view()})).into_response(),
        None => problem(StatusCode::NOT_FOUND, "not-found", "no such machine"),
    }
}

async fn delete_one(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(params): Path<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let uuid = params.get("uuid").cloned().unwrap_or_default();
    let Some(owner) = principal(&headers) else {
        return unauthorized();
    };
    idempotent(
        &app,
        &owner.clone(),
        "DELETE /api/machines/{uuid}",
        // A DELETE has no body of its own; one carries only its key (`KeyIn::Json`).
        (&method, &uri, &headers, &body),
        move |app, _| async move {
            let mut inner = app.lock();
            match inner.machines.get(&uuid) {
                Some(m) if m.owner == owner => {
                    inner.machines.remove(&uuid);
                    if app.options.keys_die_with_resource {
                        inner
                            .records
                            .retain(|scope, _| sub_key_uuid(&sub_key_of(scope)) != uuid);
                    }
                    let ip_key = inner
                        .ips
                        .iter()
                        .find(|(k, _)| sub_key_uuid(k) == uuid)
                        .map(|(k, _)| k.clone());
                    if let Some(ip_key) = ip_key {
                        inner.ips.remove(&ip_key);
                    }
                    Some(stored(StatusCode::NO_CONTENT, None, None))
                }
                _ => Some(problem_stored(
                    StatusCode::NOT_FOUND,
                    "not-found",
                    "no such machine",
                )),
            }
        },
    )
    .await
}

async fn restart_machine(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Path(params): Path<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let uuid = params.get("uuid").cloned().unwrap_or_default();
    let Some(owner) = principal(&headers) else {
        return unauthorized();
    };
    // Stripe reads only form bodies: any other body is a bad request, before any key is looked at.
    let form = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    if app.options.stripe_shape && !body.is_empty() && !form {
        return stripe_error(StatusCode::BAD_REQUEST, "invalid_request_error", None);
    }
    if app.options.actions_by_body {
        app.lock().action_bodies.push(body.clone());
        let named = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("machine").and_then(Value::as_str).map(str::to_owned));
        if named.as_deref() != Some(uuid.as_str()) {
            return problem(
                StatusCode::BAD_REQUEST,
                "invalid-body",
                "a restart names its machine in its body: {\"machine\": UUID}",
            );
        }
    }
    idempotent(
        &app,
        &owner.clone(),
        "POST /api/machines/{uuid}/restart",
        (&method, &uri, &headers, &body),
        move |app, _| async move {
            let mut inner = app.lock();
            match inner.machines.get_mut(&uuid).filter(|m| m.owner == owner) {
                Some(machine) => {
                    machine.restarts += 1;
                    Some(stored(
                        StatusCode::ACCEPTED,
                        None,
                        Some(json!({"data": machine.view()})),
                    ))
                }
                None => Some(problem_stored(
                    StatusCode::NOT_FOUND,
                    "not-found",
                    "no such machine",
                )),
            }
        },
    )
    .await
}

// ---- the admin listener --------------------------------------------------------------------

async fn arm_fail_next(State(app): State<App>) -> StatusCode {
    app.lock().fail_next += app.options.fail_next_times.unwrap_or(1);
    StatusCode::NO_CONTENT
}

async fn arm_crash(State(app): State<App>) -> StatusCode {
    app.lock().crash_armed = true;
    StatusCode::NO_CONTENT
}

async fn restart(State(app): State<App>) -> Response {
    if app
        .server
        .lock()
        .expect("server lock")
        .as_ref()
        .is_some_and(|s| !s.is_finished())
    {
        return StatusCode::NO_CONTENT.into_response();
    }
    tokio::time::sleep(app.options.restart_delay).await;
    // The address was just released by the crash; binding may need a moment on a loaded machine.
    for _ in 0..50 {
        if let Ok(listener) = TcpListener::bind(app.addr).await {
            app.serve(listener);
            return StatusCode::NO_CONTENT.into_response();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "could not bind the API address again",
    )
        .into_response()
}

async fn stats(State(app): State<App>) -> Json<Value> {
    let inner = app.lock();
    Json(json!({"machines": inner.machines.len(), "ips": inner.ips.len()}))
}
