//! The public router.

use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;

use super::workers;
use crate::edge::ApiError;
use crate::state::AppState;
use crate::{auth, idempotency};

/// The public API: `/v1/workers…` behind bearer auth and the idempotency layer, plus `GET /healthz`.
/// Unknown routes get 404 and wrong methods 405, both with problem bodies.
pub fn app(state: AppState) -> Router {
    // route_layer: the later layer runs first, so auth sets the principal before the idempotency layer.
    // The create writes the layer's claim and completion in its own transactions (a unit of work),
    // so its route gets the deferring variant of the layer; the other routes the generic one.
    let creates = Router::new()
        .route("/v1/workers", post(workers::create))
        .route_layer(from_fn_with_state(
            state.idempotency_layer(),
            idempotency::enforce_deferring,
        ));
    let api = Router::new()
        .route("/v1/workers", get(workers::list))
        .route(
            "/v1/workers/{id}",
            get(workers::get_one).delete(workers::delete_one),
        )
        .route("/v1/workers/{id}/reboot", post(workers::reboot))
        .route_layer(from_fn_with_state(
            state.idempotency_layer(),
            idempotency::enforce,
        ))
        .merge(creates)
        .route_layer(from_fn_with_state(state.auth.clone(), auth::authenticate));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .merge(api)
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .with_state(state)
}

pub(super) async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

pub(super) async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
