//! The REST surface: Toxiproxy's routes (`api.go`), their status codes and bodies.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, Method, Request, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use super::error::ApiError;
use super::registry::{check_upstream, field, Registry, Spec};
use crate::control::EventsQuery;

/// The Toxiproxy API version served, as `GET /version` reports it: the Toxiproxy release whose
/// API (routes, fields, status codes) this module follows.
pub const VERSION: &str = "2.12.0";

/// The largest request body read, bytes (1 MiB).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// The routes, over `registry`.
pub(crate) fn router(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/reset", post(reset))
        .route("/proxies", get(list).post(create))
        .route("/populate", post(populate))
        .route(
            "/proxies/{proxy}",
            get(show).post(update).patch(update).delete(remove),
        )
        .route("/proxies/{proxy}/toxics", get(toxics).post(add_toxic))
        .route(
            "/proxies/{proxy}/toxics/{toxic}",
            get(show_toxic)
                .post(update_toxic)
                .patch(update_toxic)
                .delete(remove_toxic),
        )
        .route("/version", get(version))
        .route("/events", get(events))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(no_browsers))
        .with_state(registry)
}

/// Toxiproxy refuses browsers (a page must not drive it): a `User-Agent` starting `Mozilla/`
/// gets 403.
async fn no_browsers(request: Request<Body>, next: Next) -> Response {
    let browser = request
        .headers()
        .get(header::USER_AGENT)
        .is_some_and(|ua| ua.as_bytes().starts_with(b"Mozilla/"));
    if browser {
        return ApiError::new(StatusCode::FORBIDDEN, "User agent not allowed").into_response();
    }
    next.run(request).await
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "404 page not found: `{}` (the Toxiproxy API serves /proxies, /populate, /reset, /version, /events, /metrics)",
        uri.path()
    ))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("`{}` does not take {method}", uri.path()),
    )
}

/// The body as JSON: `bad request body: …` with line and column when it does not parse.
async fn json_body(body: Body) -> Result<Value, ApiError> {
    let bytes = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|err| {
            let too_large =
                std::iter::successors(Some(&err as &(dyn std::error::Error + 'static)), |e| {
                    e.source()
                })
                .any(|e| e.is::<http_body_util::LengthLimitError>());
            if too_large {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("bad request body: over {BODY_LIMIT} bytes"),
                )
            } else {
                ApiError::bad_request(format!("bad request body: {err}"))
            }
        })?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("bad request body: {e}")))
}

async fn object_body(body: Body) -> Result<Map<String, Value>, ApiError> {
    match json_body(body).await? {
        Value::Object(map) => Ok(map),
        other => Err(ApiError::bad_request(format!(
            "bad request body: expected a JSON object, got {other}"
        ))),
    }
}

/// A proxy of a create or populate body; `which` names it in errors (`name at proxy 2`).
fn spec(body: &Map<String, Value>, which: &str) -> Result<Spec, ApiError> {
    let missing = |f: &str| ApiError::bad_request(format!("missing required field: {f}{which}"));
    let name = field(body, "name")?.filter(|n| !n.is_empty());
    let upstream = field(body, "upstream")?.filter(|u| !u.is_empty());
    let enabled = match body.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "bad request body: enabled must be a boolean, got {other}"
            )))
        }
    };
    let name = name.ok_or_else(|| missing("name"))?;
    check_name(&name)?;
    let upstream = upstream.ok_or_else(|| missing("upstream"))?;
    check_upstream(&upstream)?;
    Ok(Spec {
        name,
        upstream,
        listen: field(body, "listen")?.unwrap_or_default(),
        enabled,
    })
}

/// A proxy's name is a path segment of the API (`/proxies/{name}`): a name with `/`, a control
/// character (NUL included) or nothing but dots could never be addressed, so it is refused.
fn check_name(name: &str) -> Result<(), ApiError> {
    if name.contains('/') || name.chars().any(char::is_control) || name.chars().all(|c| c == '.') {
        return Err(ApiError::bad_request(format!(
            "bad request body: name {name:?} cannot name a proxy: it is a path segment of this \
             API, so no `/`, no control characters, and not only dots"
        )));
    }
    Ok(())
}

fn reply(result: Result<Value, ApiError>) -> Response {
    match result {
        Ok(value) => Json(value).into_response(),
        Err(err) => err.into_response(),
    }
}

fn no_content(result: Result<(), ApiError>) -> Response {
    match result {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(err) => err.into_response(),
    }
}

async fn reset(State(r): State<Arc<Registry>>) -> Response {
    no_content(r.reset().await)
}

async fn list(State(r): State<Arc<Registry>>) -> Response {
    Json(r.list().await).into_response()
}

async fn create(State(r): State<Arc<Registry>>, body: Body) -> Response {
    let created = async { r.create(spec(&object_body(body).await?, "")?).await };
    match created.await {
        Ok(value) => (StatusCode::CREATED, Json(value)).into_response(),
        Err(err) => err.into_response(),
    }
}

async fn populate(State(r): State<Arc<Registry>>, body: Body) -> Response {
    let specs = async {
        let Value::Array(items) = json_body(body).await? else {
            return Err(ApiError::bad_request(
                "bad request body: expected a JSON array of proxies",
            ));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(map) => spec(map, &format!(" at proxy {}", i + 1)),
                _ => Err(ApiError::bad_request(format!(
                    "bad request body: proxy {} is not an object",
                    i + 1
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let (done, err) = match specs.await {
        Ok(specs) => r.populate(specs).await,
        Err(err) => (Vec::new(), Some(err)),
    };
    match err {
        None => (StatusCode::CREATED, Json(json!({ "proxies": done }))).into_response(),
        Some(err) => {
            let mut doc = err.document();
            doc.insert("proxies".into(), Value::Array(done));
            (
                err.status,
                [(header::CONTENT_TYPE, crate::http::PROBLEM_JSON)],
                Value::Object(doc).to_string(),
            )
                .into_response()
        }
    }
}

async fn show(State(r): State<Arc<Registry>>, Path(proxy): Path<String>) -> Response {
    reply(r.get(&proxy).await)
}

async fn update(State(r): State<Arc<Registry>>, Path(proxy): Path<String>, body: Body) -> Response {
    // A missing proxy is a 404 before the body is looked at, as in Toxiproxy.
    if let Err(err) = r.get(&proxy).await {
        return err.into_response();
    }
    let updated = async { r.update(&proxy, &object_body(body).await?).await };
    reply(updated.await)
}

async fn remove(State(r): State<Arc<Registry>>, Path(proxy): Path<String>) -> Response {
    no_content(r.delete(&proxy).await)
}

async fn toxics(State(r): State<Arc<Registry>>, Path(proxy): Path<String>) -> Response {
    reply(r.toxics(&proxy).await)
}

async fn add_toxic(
    State(r): State<Arc<Registry>>,
    Path(proxy): Path<String>,
    body: Body,
) -> Response {
    if let Err(err) = r.get(&proxy).await {
        return err.into_response();
    }
    let added = async { r.add_toxic(&proxy, &object_body(body).await?).await };
    reply(added.await)
}

async fn show_toxic(
    State(r): State<Arc<Registry>>,
    Path((proxy, toxic)): Path<(String, String)>,
) -> Response {
    reply(r.toxic(&proxy, &toxic).await)
}

async fn update_toxic(
    State(r): State<Arc<Registry>>,
    Path((proxy, toxic)): Path<(String, String)>,
    body: Body,
) -> Response {
    if let Err(err) = r.toxic(&proxy, &toxic).await {
        return err.into_response();
    }
    let updated = async {
        r.update_toxic(&proxy, &toxic, &object_body(body).await?)
            .await
    };
    reply(updated.await)
}

async fn remove_toxic(
    State(r): State<Arc<Registry>>,
    Path((proxy, toxic)): Path<(String, String)>,
) -> Response {
    no_content(r.delete_toxic(&proxy, &toxic).await)
}

/// `GET /events?since=SEQ&limit=N` (idemspec's, not Toxiproxy's): one event per connection of the
/// proxies, `proxy` naming the proxy, as the control API's `GET /events`.
async fn events(
    State(r): State<Arc<Registry>>,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Response {
    crate::control::events_reply(|since, limit| r.events_page(since, limit), query)
}

/// `GET /metrics`: the proxies' metrics, the names and labels of the control API's
/// ([`crate::metrics`]): each connection is one exchange, and the toxic that acted is the rule.
async fn metrics(State(r): State<Arc<Registry>>) -> Response {
    crate::control::metrics_reply(r.metrics_text())
}

async fn version(_headers: HeaderMap) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json;charset=utf-8")],
        format!(
            "{}\n",
            json!({ "version": VERSION, "server": concat!("idemspec-proxy ", env!("CARGO_PKG_VERSION")) })
        ),
    )
        .into_response()
}
