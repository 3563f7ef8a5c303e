//! The admin router (only on `--admin-listen`): statistics, Prometheus metrics and hypervisor injection
//! controls.

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{header, StatusCode};

use super::router::{method_not_allowed, not_found};
use crate::edge::{ApiError, JsonBody};
use crate::injection::InjectionSettings;
use crate::metrics::CONTENT_TYPE;
use crate::state::AppState;
use crate::store::Stats;

/// `GET /v1/admin/stats`, `GET /metrics` (the text exposition of [`crate::metrics`]) and
/// `POST /v1/admin/faults` (body [`InjectionSettings`], any subset → 204).
pub fn admin_app(state: AppState) -> Router {
    Router::new()
        .route("/v1/admin/stats", get(stats))
        .route("/metrics", get(metrics))
        .route("/v1/admin/faults", post(inject))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .with_state(state)
}

async fn stats(State(state): State<AppState>) -> Result<Json<Stats>, ApiError> {
    Ok(Json(
        state
            .stores
            .stats
            .stats()
            .await
            .map_err(ApiError::internal)?,
    ))
}

async fn metrics(
    State(state): State<AppState>,
) -> ([(header::HeaderName, &'static str); 1], String) {
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        state.metrics.render(),
    )
}

async fn inject(
    State(state): State<AppState>,
    JsonBody(settings): JsonBody<InjectionSettings>,
) -> StatusCode {
    tracing::warn!(?settings, "injections changed");
    state.injections.apply(&settings);
    StatusCode::NO_CONTENT
}
