//! The public router.

use std::future::Future;

use axum::extract::Request;
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;

use super::{operations, workers};
use crate::edge::ApiError;
use crate::flaw::{create_drops_location, replay_drops_headers, Flaw};
use crate::fleet::CreateMode;
use crate::idempotency::ClaimSite;
use crate::state::AppState;
use crate::{auth, idempotency};

/// The public API: `/v1/workers…` and `/v1/operations/{id}` behind bearer auth and the idempotency
/// layer, plus `GET /healthz`.
/// Unknown routes get 404 and wrong methods 405, both with problem bodies.
pub fn app(state: AppState) -> Router {
    // route_layer: the later layer runs first, so auth sets the principal before the idempotency layer.
    // Where each route's claim is written is the router's choice: a synchronous create's own
    // transactions carry the claim and the completion (the handler writes through the layer's
    // unit of work); every other route, and an asynchronous create (which writes only its
    // reservation and operation before it answers, and boots after), claims alone.
    let create_site = match state.creates {
        CreateMode::Sync => ClaimSite::InCreate {
            creates: state.stores.creates.clone(),
            answer: workers::answer_for(),
        },
        CreateMode::Async => ClaimSite::Alone,
    };
    let creates = Router::new()
        .route("/v1/workers", post(workers::create))
        .route_layer(from_fn_with_state(
            state.idempotency_layer(create_site),
            idempotency::enforce,
        ));
    let creates = wrap_if(
        creates,
        state.has(Flaw::CreateDropsLocation),
        create_drops_location::strip,
    );
    let api = Router::new()
        .route("/v1/workers", get(workers::list))
        .route(
            "/v1/workers/{id}",
            get(workers::get_one).delete(workers::delete_one),
        )
        .route("/v1/workers/{id}/reboot", post(workers::reboot))
        .route("/v1/operations/{id}", get(operations::get_one))
        .route_layer(from_fn_with_state(
            state.idempotency_layer(ClaimSite::Alone),
            idempotency::enforce,
        ))
        .merge(creates);
    let api = wrap_if(
        api,
        state.has(Flaw::ReplayDropsHeaders),
        replay_drops_headers::strip,
    )
    .route_layer(from_fn_with_state(state.auth.clone(), auth::authenticate));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .merge(api)
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .with_state(state)
}

/// `router` with the flaw wrapper `strip` around its routes when `on` (see [`crate::flaw`]).
fn wrap_if<F>(router: Router<AppState>, on: bool, strip: fn(Request, Next) -> F) -> Router<AppState>
where
    F: Future<Output = Response> + Send + 'static,
{
    if on {
        router.route_layer(from_fn(strip))
    } else {
        router
    }
}

pub(super) async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

pub(super) async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
