//! The long-running operations of asynchronous creates (`--creates async`): the `202` a create
//! answers, and `GET /v1/operations/{id}`, which shows the operation as it stands.
//!
//! An operation, as JSON: `name` (`op-…`), `status` (`RUNNING`, `DONE` or `FAILED`), `targetId`
//! (the worker's id), `targetLink` (`/v1/workers/{targetId}`, which exists once `DONE`),
//! `selfLink` (`/v1/operations/{name}`, where to poll it) and, once `FAILED`, `error.message`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::{header, HeaderValue, StatusCode};
use serde::Serialize;

use super::path_id::OperationId;
use crate::auth::Principal;
use crate::edge::ApiError;
use crate::fleet::FleetError;
use crate::state::AppState;
use crate::store::{OperationRow, OperationState};

/// An operation as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct OperationView {
    name: String,
    status: &'static str,
    target_id: String,
    target_link: String,
    self_link: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<OperationError>,
}

/// Why an operation failed.
#[derive(Debug, Serialize)]
struct OperationError {
    message: String,
}

impl From<&OperationRow> for OperationView {
    fn from(op: &OperationRow) -> Self {
        let status = match op.state {
            OperationState::Running => "RUNNING",
            OperationState::Done => "DONE",
            OperationState::Failed => "FAILED",
        };
        Self {
            name: op.id.clone(),
            status,
            target_id: op.worker_id.clone(),
            target_link: format!("/v1/workers/{}", op.worker_id),
            self_link: self_link(op),
            error: op.error.clone().map(|message| OperationError { message }),
        }
    }
}

/// Where `op` is polled.
fn self_link(op: &OperationRow) -> String {
    format!("/v1/operations/{}", op.id)
}

/// A create's `202`: the operation as it started, with its `Location`.
pub(super) fn accepted(op: &OperationRow) -> Response {
    let mut response = (StatusCode::ACCEPTED, Json(OperationView::from(op))).into_response();
    if let Ok(value) = HeaderValue::from_str(&self_link(op)) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// `GET /v1/operations/{id}`: the principal's operation as it stands.
pub(super) async fn get_one(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    OperationId(id): OperationId,
) -> Result<Json<OperationView>, ApiError> {
    match state.operations.get(&principal.0, &id).await {
        Ok(op) => Ok(Json(OperationView::from(&op))),
        Err(FleetError::NotFound) => Err(ApiError::NotFound("no such operation".into())),
        Err(e) => Err(e.into()),
    }
}
