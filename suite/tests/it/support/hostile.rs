//! Hostile fake APIs in the alt API's shape (`/api/machines`, `X-Api-Key`, the id under
//! `data.uuid`, `suite/tests/it/fixtures/alt-api.yaml`), each wrong in one way that once made a
//! verdict or its sentence lie. Served by axum on 127.0.0.1:0; no hooks, no side-effect counters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

/// How the fake API is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Every request, list included, answers one canned 201 body: nothing is ever created.
    Canned,
    /// Every create answers the same crash page, a 500 with one HTML body, at once: the handler
    /// never runs, nothing is stored, and no answer is a replay (a framework's own error page).
    CrashPage,
    /// Keys are ignored: every create makes a machine.
    NoIdempotency,
    /// Keys work per principal, but a completed key is replayed with 409 and the original body.
    ReplayAs409,
    /// As `ReplayAs409`, with keys shared by every principal: a second principal's create with
    /// the first one's key gets the first one's resource (a 409 with its body).
    GlobalReplayAs409,
    /// Keys work per principal, but every third distinct key is refused for good with a 422
    /// problem (and the refusal stored, as a permanent 4xx is).
    RefuseEveryThirdKey,
    /// Any key header value is accepted and stored (empty, non-ASCII, over-long); a reused key
    /// with another body is a 422 mismatch.
    AcceptsAnyKey,
    /// Keys work per principal and an invalid one (empty, over 255 characters, not visible ASCII)
    /// is a 400 problem, and so is a create without the key header: the key is required, whatever
    /// the profile says.
    RequiresKey,
}

#[derive(Default)]
struct Inner {
    machines: Vec<(String, String, String)>,
    /// By (principal, key): the stored status, body and the request body it answered.
    records: HashMap<(String, String), (StatusCode, Value, Bytes)>,
    keys_seen: usize,
}

#[derive(Clone)]
struct Api {
    behaviour: Behaviour,
    inner: Arc<Mutex<Inner>>,
}

/// A running fake API; the task stops when dropped.
pub struct Hostile {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Hostile {
    /// The environment the alt-api profile reads.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ALT_API_URL", self.url.clone()),
            ("ALT_ADMIN_URL", self.url.clone()),
        ]
    }

    /// The alt-api profile aimed at this API.
    pub fn profile(&self) -> idemspec_scenarios::profile::TargetProfile {
        let env = self.env();
        idemspec_scenarios::profile::TargetProfile::load(
            "alt-api.yaml",
            super::alt_api::PROFILE,
            &|var| env.iter().find(|(k, _)| *k == var).map(|(_, v)| v.clone()),
        )
        .expect("the alt-api profile loads")
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a fake API that behaves as `behaviour` says.
pub async fn start(behaviour: Behaviour) -> Hostile {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let api = Api {
        behaviour,
        inner: Arc::default(),
    };
    let app = Router::new()
        .route("/api/machines", get(list).post(create))
        .with_state(api);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Hostile { url, task }
}

const CANNED: &str = r#"{"data":{"uuid":"canned-0000","tag":"canned"}}"#;

fn principal(headers: &HeaderMap) -> String {
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

async fn list(
    State(api): State<Api>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if api.behaviour == Behaviour::Canned {
        return (StatusCode::CREATED, CANNED).into_response();
    }
    let who = principal(&headers);
    let tag = q.get("tag").cloned().unwrap_or_default();
    let inner = api.inner.lock().expect("lock");
    let data: Vec<Value> = inner
        .machines
        .iter()
        .filter(|(owner, t, _)| *owner == who && *t == tag)
        .map(|(_, t, uuid)| json!({"uuid": uuid, "tag": t}))
        .collect();
    axum::Json(json!({ "data": data })).into_response()
}

async fn create(State(api): State<Api>, headers: HeaderMap, body: Bytes) -> Response {
    if api.behaviour == Behaviour::Canned {
        return (StatusCode::CREATED, CANNED).into_response();
    }
    if api.behaviour == Behaviour::CrashPage {
        let page = "<html><body><h1>Internal Server Error</h1></body></html>";
        let html = [(axum::http::header::CONTENT_TYPE, "text/html")];
        return (StatusCode::INTERNAL_SERVER_ERROR, html, page).into_response();
    }
    let who = principal(&headers);
    let tag = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("tag").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    let key = headers
        .get("idempotency-key")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let valid = |k: &String| {
        (1..=255).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
    };
    if api.behaviour == Behaviour::RequiresKey && !key.as_ref().is_some_and(valid) {
        let problem = json!({"type": "https://example.invalid/key-required", "status": 400});
        return (StatusCode::BAD_REQUEST, axum::Json(problem)).into_response();
    }
    let mut inner = api.inner.lock().expect("lock");
    let scope = key
        .clone()
        .filter(|_| api.behaviour != Behaviour::NoIdempotency)
        .map(|k| match api.behaviour {
            Behaviour::GlobalReplayAs409 => (String::new(), k),
            _ => (who.clone(), k),
        });
    if let Some(scope) = &scope {
        if let Some((status, stored, request)) = inner.records.get(scope) {
            let any_key = matches!(
                api.behaviour,
                Behaviour::AcceptsAnyKey | Behaviour::RequiresKey
            );
            if any_key && *request != body {
                let mismatch = json!({"type": "https://example.invalid/mismatch"});
                return (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(mismatch)).into_response();
            }
            let status = match api.behaviour {
                Behaviour::ReplayAs409 | Behaviour::GlobalReplayAs409 => StatusCode::CONFLICT,
                _ => *status,
            };
            return (status, axum::Json(stored.clone())).into_response();
        }
    }
    if scope.is_some() {
        inner.keys_seen += 1;
    }
    let (status, response) =
        if api.behaviour == Behaviour::RefuseEveryThirdKey && inner.keys_seen % 3 == 0 {
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({"type": "https://example.invalid/quota", "title": "quota exceeded"}),
            )
        } else {
            let uuid = uuid::Uuid::new_v4().to_string();
            inner.machines.push((who, tag.clone(), uuid.clone()));
            (
                StatusCode::CREATED,
                json!({"data": {"uuid": uuid, "tag": tag}}),
            )
        };
    if let Some(scope) = scope {
        inner
            .records
            .insert(scope, (status, response.clone(), body));
    }
    (status, axum::Json(response)).into_response()
}
