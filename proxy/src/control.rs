//! The control API: JSON over HTTP on its own address.
//!
//! | request | effect |
//! |---|---|
//! | `GET /rules` | the rules in force (HTTP or TCP, by mode), as a JSON array |
//! | `PUT /rules` | replace them with the JSON array in the body (fresh counters) → the new list |
//! | `POST /rules` | append the one rule in the body → the new list |
//! | `DELETE /rules` | remove every rule → 204 |
//! | `GET /events?since=SEQ` | the events with `seq > SEQ` (all without `since`), oldest first |
//! | `POST /reset` | reset rule counters and forget events (seqs keep counting) → 204 |
//!
//! A body that is not valid JSON, or not a valid rule, gets `400` with an RFC 9457
//! `application/problem+json` body whose `detail` says what was wrong and where (line, column).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use idemspec_scenarios::rules::{Mode, Rule, TcpRule};
use serde::Deserialize;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::handle::ProxyHandle;
use crate::http::{problem_body, PROBLEM_JSON};
use crate::server::Shared;

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
        .with_state(handle)
}

/// Serves the control API for `handle` on `listener` until the proxy `shared` shuts down.
pub(crate) fn spawn(
    listener: TcpListener,
    handle: ProxyHandle,
    shared: Arc<Shared>,
) -> JoinHandle<()> {
    let app = router(handle);
    tokio::spawn(async move {
        let serve = axum::serve(listener, app)
            .with_graceful_shutdown(async move { shared.shutting_down().await });
        if let Err(err) = serve.await {
            tracing::warn!(error = %err, "control API stopped");
        }
    })
}

/// An RFC 9457 problem response.
fn problem(status: StatusCode, title: &str, detail: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, PROBLEM_JSON)],
        problem_body(status, title, &detail),
    )
        .into_response()
}

fn invalid(detail: impl std::fmt::Display) -> String {
    detail.to_string()
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

async fn replace_rules(State(handle): State<ProxyHandle>, body: Bytes) -> Response {
    let applied = match handle.mode() {
        Mode::Http => serde_json::from_slice::<Vec<Rule>>(&body)
            .map_err(invalid)
            .and_then(|rules| handle.set_rules(rules).map_err(invalid)),
        Mode::Tcp => serde_json::from_slice::<Vec<TcpRule>>(&body)
            .map_err(invalid)
            .and_then(|rules| handle.set_tcp_rules(rules).map_err(invalid)),
    };
    match applied {
        Ok(()) => current(&handle),
        Err(detail) => problem(StatusCode::BAD_REQUEST, "invalid rules", detail),
    }
}

async fn add_rule(State(handle): State<ProxyHandle>, body: Bytes) -> Response {
    let applied = match handle.mode() {
        Mode::Http => serde_json::from_slice::<Rule>(&body)
            .map_err(invalid)
            .and_then(|rule| handle.add_rule(rule).map_err(invalid)),
        Mode::Tcp => serde_json::from_slice::<TcpRule>(&body)
            .map_err(invalid)
            .and_then(|rule| {
                let mut rules = handle.tcp_rules();
                rules.push(rule);
                handle.set_tcp_rules(rules).map_err(invalid)
            }),
    };
    match applied {
        Ok(()) => current(&handle),
        Err(detail) => problem(StatusCode::BAD_REQUEST, "invalid rules", detail),
    }
}

async fn clear_rules(State(handle): State<ProxyHandle>) -> StatusCode {
    handle.clear_rules();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
struct EventsQuery {
    since: Option<u64>,
}

async fn events(
    State(handle): State<ProxyHandle>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    match query {
        Ok(Query(q)) => Json(handle.events_since(q.since.unwrap_or(0))).into_response(),
        Err(err) => problem(
            StatusCode::BAD_REQUEST,
            "invalid query",
            format!("{err} (expected ?since=SEQ, a non-negative integer)"),
        ),
    }
}

async fn reset(State(handle): State<ProxyHandle>) -> StatusCode {
    handle.reset();
    StatusCode::NO_CONTENT
}
