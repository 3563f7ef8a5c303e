//! The provisioning API behind axum-idempotent, wired as its README's example shows: the
//! `IdempotentLayer` in direct key mode (`use_idempotency_key_header(Some("Idempotency-Key"),
//! true)`), inside ruts's `SessionLayer` over a `MokaStore`, inside tower-cookies's
//! `CookieManagerLayer`. Each principal sends a session cookie of its own (the middleware caches
//! only for a request that carries a session, README "How it Works").
//!
//! Workers and counters live in `$STATE_DIR/state.json`, so a restart keeps them; the image name
//! chooses the behaviour (`fail-always`, `fail-once-<tag>`, `slow-<N>ms`, `hang`), as in
//! `../common/provisioning.py`, which the Python apps share.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, MethodRouter};
use axum::{Json, Router};
use axum_idempotent::{IdempotentLayer, IdempotentOptions};
use ruts::store::moka::MokaStore;
use ruts::{CookieOptions, SessionLayer};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Mutex;
use tower_cookies::CookieManagerLayer;

#[derive(Clone, Serialize, Deserialize)]
struct Worker {
    id: String,
    owner: String,
    image: String,
    label: String,
    reboots: u64,
}

#[derive(Default, Serialize, Deserialize)]
struct Stats {
    leases: i64,
    creates: u64,
    actions: u64,
    started: u64,
}

#[derive(Default, Serialize, Deserialize)]
struct Data {
    workers: Vec<Worker>,
    failed_once: Vec<String>,
    stats: Stats,
}

struct Db {
    file: PathBuf,
    data: Mutex<Data>,
}

impl Db {
    fn save(&self, data: &Data) {
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(data).expect("state serializes"))
            .expect("state dir is writable");
        std::fs::rename(&tmp, &self.file).expect("state dir is writable");
    }
}

type App = State<Arc<Db>>;

fn owner(headers: &HeaderMap) -> Result<String, Response> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            let body = json!({"detail": "send Authorization: Bearer <principal>"});
            (StatusCode::UNAUTHORIZED, Json(body)).into_response()
        })
}

fn problem(status: StatusCode, detail: &str) -> Response {
    (status, Json(json!({ "detail": detail }))).into_response()
}

#[derive(Deserialize)]
struct WorkerIn {
    image: String,
    #[serde(default)]
    label: String,
}

async fn create(State(db): App, headers: HeaderMap, Json(body): Json<WorkerIn>) -> Response {
    let who = match owner(&headers) {
        Ok(w) => w,
        Err(r) => return r,
    };
    {
        let mut d = db.data.lock().await;
        d.stats.started += 1;
        db.save(&d);
    }
    let slow = body
        .image
        .strip_prefix("slow-")
        .and_then(|s| s.strip_suffix("ms"))
        .and_then(|s| s.parse::<u64>().ok());
    if body.image == "hang" {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    } else if let Some(ms) = slow {
        tokio::time::sleep(Duration::from_millis(ms.min(60_000))).await;
    }
    let mut d = db.data.lock().await;
    let mut fails = body.image == "fail-always";
    if body.image.starts_with("fail-once-") && !d.failed_once.contains(&body.image) {
        d.failed_once.push(body.image.clone());
        fails = true;
    }
    if fails {
        db.save(&d);
        return problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the image failed to boot",
        );
    }
    let worker = Worker {
        id: format!("w_{:016x}", rand::random::<u64>()),
        owner: who,
        image: body.image,
        label: body.label,
        reboots: 0,
    };
    d.workers.push(worker.clone());
    d.stats.leases += 1;
    d.stats.creates += 1;
    db.save(&d);
    (StatusCode::CREATED, Json(worker)).into_response()
}

#[derive(Deserialize)]
struct ListQuery {
    label: Option<String>,
}

async fn list(State(db): App, headers: HeaderMap, Query(q): Query<ListQuery>) -> Response {
    let who = match owner(&headers) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let d = db.data.lock().await;
    let items: Vec<&Worker> = d
        .workers
        .iter()
        .filter(|w| w.owner == who && q.label.as_ref().is_none_or(|l| *l == w.label))
        .collect();
    Json(json!({ "items": items })).into_response()
}

async fn get_one(State(db): App, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let who = match owner(&headers) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let d = db.data.lock().await;
    match d.workers.iter().find(|w| w.owner == who && w.id == id) {
        Some(w) => Json(w.clone()).into_response(),
        None => problem(StatusCode::NOT_FOUND, "no such worker"),
    }
}

async fn delete(State(db): App, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let who = match owner(&headers) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let mut d = db.data.lock().await;
    let before = d.workers.len();
    d.workers.retain(|w| !(w.owner == who && w.id == id));
    if d.workers.len() == before {
        return problem(StatusCode::NOT_FOUND, "no such worker");
    }
    d.stats.leases -= 1;
    db.save(&d);
    Json(json!({ "deleted": id })).into_response()
}

async fn reboot(State(db): App, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let who = match owner(&headers) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let mut d = db.data.lock().await;
    let Some(w) = d.workers.iter_mut().find(|w| w.owner == who && w.id == id) else {
        return problem(StatusCode::NOT_FOUND, "no such worker");
    };
    w.reboots += 1;
    let w = w.clone();
    d.stats.actions += 1;
    db.save(&d);
    Json(w).into_response()
}

async fn stats(State(db): App) -> Response {
    Json(serde_json::to_value(&db.data.lock().await.stats).expect("stats serialize"))
        .into_response()
}

#[tokio::main]
async fn main() {
    let dir = PathBuf::from(std::env::var("STATE_DIR").unwrap_or_else(|_| "state".into()));
    std::fs::create_dir_all(&dir).expect("STATE_DIR can be created");
    let file = dir.join("state.json");
    let data = std::fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let db = Arc::new(Db {
        file,
        data: Mutex::new(data),
    });
    let port: u16 = std::env::var("PORT")
        .expect("set PORT")
        .parse()
        .expect("PORT is a port");

    // The README's example: the three layers, innermost first, on each mutating route (as the
    // example puts them on its `post` route; the reads carry no key).
    let store = Arc::new(MokaStore::builder().build());
    let idempotent_options = IdempotentOptions::default()
        .use_idempotency_key_header(Some("Idempotency-Key"), true)
        .expire_after(60 * 5); // Cache responses for 5 minutes
    let keyed = |route: MethodRouter<Arc<Db>>| -> MethodRouter<Arc<Db>> {
        route
            .layer::<_, Infallible>(IdempotentLayer::<MokaStore>::new(
                idempotent_options.clone(),
            ))
            .layer::<_, Infallible>(
                SessionLayer::new(store.clone())
                    .with_cookie_options(CookieOptions::build().name("session")),
            )
            .layer::<_, Infallible>(CookieManagerLayer::new())
    };
    let app = Router::new()
        .route("/v1/workers", keyed(post(create)).get(list))
        .route(
            "/v1/workers/{id}",
            keyed(axum::routing::delete(delete)).get(get_one),
        )
        .route("/v1/workers/{id}/reboot", keyed(post(reboot)))
        .route("/_stats", get(stats))
        .route("/healthz", get(stats))
        .with_state(db);

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("port is free");
    axum::serve(listener, app).await.expect("server runs");
}
