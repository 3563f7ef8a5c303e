//! The control API: JSON over HTTP on its own address.
//!
//! | request | effect |
//! |---|---|
//! | `GET /rules` | the rules in force (HTTP or TCP, by mode), as a JSON array |
//! | `PUT /rules` | replace them with the JSON array in the body (fresh counters) → the new list |
//! | `POST /rules` | append the one rule in the body → the new list |
//! | `DELETE /rules` | remove every rule → 204 |
//! | `GET /events?since=SEQ&limit=N` | the first N events with `seq > SEQ` (from the oldest kept without `since`), oldest first: N is [`EVENTS_PAGE`] without `limit`, at most [`EVENTS_PAGE_MAX`]; the next page is `since=` the last one's `seq` |
//! | `POST /reset` | reset rule counters and forget events (seqs keep counting) → 204 |
//! | `GET /metrics` | Prometheus metrics, OpenMetrics text ([`crate::metrics`]) |
//!
//! Any other path gets `404`, and a method a path does not take `405`, each with a problem body.
//!
//! A body that is not valid JSON, or not valid rules, gets `400` with an RFC 9457
//! `application/problem+json` body whose `detail` says what was wrong, with the extension
//! members `pointer` (a JSON pointer to the value at fault, `/0/fault/respond/status`), `line`
//! and `column` (where the parser stopped). A body over [`BODY_LIMIT`] gets `413` with a problem
//! body, and so does every other error, those of requests too malformed to parse among them.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use idemspec_scenarios::rules::{Mode, Rule, TcpRule};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::error::ProxyError;
use crate::handle::ProxyHandle;
use crate::http::Shared;
use crate::http::{problem_document, PROBLEM_JSON};

/// The largest request body the control API reads, in bytes (2 MiB; a rule list is a few KiB).
/// A larger one gets `413` with a problem body.
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// The control API's routes for `handle`.
pub fn router(handle: ProxyHandle) -> Router {
    Router::new()
        .route(
            "/rules",
            get(list_rules)
                .put(replace_rules)
                .post(add_rule)
                .delete(clear_rules),
        )
        .route("/events", get(events))
        .route("/reset", post(reset))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(handle)
}

/// A path the control API does not have.
async fn not_found(uri: axum::http::Uri) -> Response {
    Refusal {
        status: StatusCode::NOT_FOUND,
        title: "no such resource",
        detail: format!(
            "the control API has no `{}`; it serves /rules, /events, /reset and /metrics",
            uri.path()
        ),
        at: None,
    }
    .into_response()
}

/// A method a path of the control API does not take.
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    Refusal {
        status: StatusCode::METHOD_NOT_ALLOWED,
        title: "method not allowed",
        detail: format!(
            "`{}` does not take {method} (/rules: GET, PUT, POST, DELETE; /events: GET; /reset: POST; /metrics: GET)",
            uri.path()
        ),
        at: None,
    }
    .into_response()
}

/// Serves the control API for `handle` on `listener` until the proxy `shared` shuts down; then
/// waits for the connections in progress (the handle's shutdown cuts them after the grace
/// period). Each connection is served as the proxy's are (`http::serve_control`): a problem body
/// for every error, the header-read timeout, the lingering close.
pub(crate) fn spawn(
    listener: TcpListener,
    handle: ProxyHandle,
    shared: Arc<Shared>,
) -> JoinHandle<()> {
    let app = router(handle);
    tokio::spawn(async move {
        let serve = |conns: &mut JoinSet<()>, stream| {
            conns.spawn(crate::http::serve_control(
                stream,
                shared.clone(),
                app.clone(),
            ));
        };
        let mut conns =
            crate::server::accept_until_shutdown(listener, &shared, "control API", serve).await;
        while conns.join_next().await.is_some() {}
    })
}

/// Where in a request body a value is wrong.
#[derive(Debug)]
struct Location {
    /// A JSON pointer (RFC 6901) to the value, `""` for the whole body.
    pointer: String,
    /// The 1-based line and column where the parser stopped; 0 when it did not parse.
    line: usize,
    column: usize,
}

/// Why a control request was refused, rendered as an RFC 9457 problem response.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    title: &'static str,
    detail: String,
    at: Option<Location>,
}

impl Refusal {
    fn invalid_rules(detail: String, at: Location) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            title: "invalid rules",
            detail,
            at: Some(at),
        }
    }

    /// A rule set the proxy refused after it parsed; `one` when the body was a single rule.
    fn rejected(err: ProxyError, one: bool) -> Self {
        let pointer = match &err {
            ProxyError::DuplicateRuleName { index, .. } if one => "/name".to_owned(),
            ProxyError::DuplicateRuleName { index, .. } => format!("/{index}/name"),
            _ => String::new(),
        };
        let at = Location {
            pointer,
            line: 0,
            column: 0,
        };
        Self::invalid_rules(format!("failed to {err}"), at)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut doc = problem_document(self.status, self.title, &self.detail);
        if let Some(at) = self.at {
            doc.insert("pointer".into(), at.pointer.into());
            if at.line > 0 {
                doc.insert("line".into(), at.line.into());
                doc.insert("column".into(), at.column.into());
            }
        }
        (
            self.status,
            [(header::CONTENT_TYPE, PROBLEM_JSON)],
            serde_json::Value::Object(doc).to_string(),
        )
            .into_response()
    }
}

/// Reads a request body of at most [`BODY_LIMIT`] bytes.
async fn read_body(body: Body) -> Result<Bytes, Refusal> {
    axum::body::to_bytes(body, BODY_LIMIT).await.map_err(|err| {
        let too_large =
            std::iter::successors(Some(&err as &(dyn std::error::Error + 'static)), |e| {
                e.source()
            })
            .any(|e| e.is::<http_body_util::LengthLimitError>());
        if too_large {
            Refusal {
                status: StatusCode::PAYLOAD_TOO_LARGE,
                title: "request body too large",
                detail: format!("the control API reads bodies of at most {BODY_LIMIT} bytes"),
                at: None,
            }
        } else {
            Refusal {
                status: StatusCode::BAD_REQUEST,
                title: "unreadable request body",
                detail: format!("the request body could not be read: {err}"),
                at: None,
            }
        }
    })
}

/// A JSON pointer (RFC 6901) for a path serde took through the document.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                Some(key.replace('~', "~0").replace('/', "~1"))
            }
            Segment::Unknown => None,
        })
        .fold(String::new(), |mut out, token| {
            out.push('/');
            out.push_str(&token);
            out
        })
}

/// Parses `body` as JSON into `T`, with the checks of the rule schema; an error says where.
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, Refusal> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let mut track = serde_path_to_error::Track::new();
    let value = T::deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track))
        .and_then(|value| de.end().map(|()| value));
    value.map_err(|err| {
        let at = Location {
            pointer: pointer(&track.path()),
            line: err.line(),
            column: err.column(),
        };
        Refusal::invalid_rules(err.to_string(), at)
    })
}

fn current(handle: &ProxyHandle) -> Response {
    match handle.mode() {
        Mode::Http => Json(handle.rules()).into_response(),
        Mode::Tcp => Json(handle.tcp_rules()).into_response(),
    }
}

async fn list_rules(State(handle): State<ProxyHandle>) -> Response {
    current(&handle)
}

async fn replace_rules(State(handle): State<ProxyHandle>, body: Body) -> Response {
    let applied = async {
        let body = read_body(body).await?;
        match handle.mode() {
            Mode::Http => handle.set_rules(parse::<Vec<Rule>>(&body)?),
            Mode::Tcp => handle.set_tcp_rules(parse::<Vec<TcpRule>>(&body)?),
        }
        .map_err(|e| Refusal::rejected(e, false))
    };
    match applied.await {
        Ok(()) => current(&handle),
        Err(refusal) => refusal.into_response(),
    }
}

async fn add_rule(State(handle): State<ProxyHandle>, body: Body) -> Response {
    let applied = async {
        let body = read_body(body).await?;
        match handle.mode() {
            Mode::Http => handle.add_rule(parse::<Rule>(&body)?),
            Mode::Tcp => handle.add_tcp_rule(parse::<TcpRule>(&body)?),
        }
        .map_err(|e| Refusal::rejected(e, true))
    };
    match applied.await {
        Ok(()) => current(&handle),
        Err(refusal) => refusal.into_response(),
    }
}

async fn clear_rules(State(handle): State<ProxyHandle>) -> StatusCode {
    handle.clear_rules();
    StatusCode::NO_CONTENT
}

/// The events one `GET /events` answers without `limit`.
pub const EVENTS_PAGE: usize = 1000;
/// The most events one `GET /events` answers (`limit` above it is refused).
pub const EVENTS_PAGE_MAX: usize = 10_000;

/// The query of `GET /events`.
#[derive(Deserialize)]
pub(crate) struct EventsQuery {
    since: Option<u64>,
    limit: Option<usize>,
}

/// `GET /events?since=SEQ&limit=N`: the page `page(SEQ, N)` returns (SEQ 0 and N
/// [`EVENTS_PAGE`] when not given), as a JSON array; `400` with a problem body for a query that
/// is not `since=` a non-negative integer and `limit=` one from 1 to [`EVENTS_PAGE_MAX`]. Served
/// by the control API and the Toxiproxy API.
pub(crate) fn events_reply(
    page: impl FnOnce(u64, usize) -> Vec<crate::ProxyEvent>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let expected = format!(
        "expected ?since=SEQ&limit=N, SEQ a non-negative integer, N from 1 to {EVENTS_PAGE_MAX}"
    );
    let invalid = |detail: String| {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            title: "invalid query",
            detail,
            at: None,
        }
        .into_response()
    };
    match query {
        Ok(Query(q)) => match q.limit.unwrap_or(EVENTS_PAGE) {
            limit @ 1..=EVENTS_PAGE_MAX => Json(page(q.since.unwrap_or(0), limit)).into_response(),
            limit => invalid(format!("limit {limit} is out of range ({expected})")),
        },
        Err(err) => invalid(format!("{err} ({expected})")),
    }
}

async fn events(
    State(handle): State<ProxyHandle>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    events_reply(|since, limit| handle.events_page(since, limit), query)
}

async fn reset(State(handle): State<ProxyHandle>) -> StatusCode {
    handle.reset();
    StatusCode::NO_CONTENT
}

async fn metrics(State(handle): State<ProxyHandle>) -> Response {
    metrics_reply(handle.metrics_text())
}

/// A `GET /metrics` answer: `text` (from [`crate::metrics::Metrics::encode`]) as OpenMetrics
/// text; the control API's and the Toxiproxy API's.
pub(crate) fn metrics_reply(text: String) -> Response {
    ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_log::EventLog;

    /// Without `limit`, a page is [`EVENTS_PAGE`] events, whatever the log holds.
    #[tokio::test]
    async fn a_page_without_limit_is_the_default_size() {
        let log = EventLog::new(5000);
        for _ in 0..EVENTS_PAGE + 5 {
            log.push(crate::ProxyEvent::starting_now());
        }
        let query: EventsQuery = serde_json::from_str("{}").unwrap();
        let resp = events_reply(|since, limit| log.page(since, limit), Ok(Query(query)));
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let events: Vec<serde_json::Value> = serde_json::from_slice(&body).unwrap();
        assert_eq!(events.len(), EVENTS_PAGE);
        assert_eq!(events[0]["seq"], 1);
    }
}
