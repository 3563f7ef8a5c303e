//! The workers handlers.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::{header, StatusCode};
use serde::{Deserialize, Serialize};

use super::worker_id::WorkerId;
use super::{ApiError, JsonBody};
use crate::auth::Principal;
use crate::fleet::{FleetError, WorkerSpec};
use crate::idempotency::OpSeed;
use crate::metrics::CreateResult;
use crate::state::AppState;
use crate::store::Worker;

/// `POST /v1/workers` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CreateWorker {
    image: String,
    cpu: i64,
    memory_gb: i64,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

impl CreateWorker {
    fn validate(self) -> Result<WorkerSpec, ApiError> {
        let bad = |msg: String| Err(ApiError::InvalidBody(msg));
        if self.image.is_empty()
            || self.image.len() > 256
            || self.image.chars().any(char::is_control)
        {
            return bad("`image` must be 1–256 printable characters".into());
        }
        if !(1..=64).contains(&self.cpu) {
            return bad(format!("`cpu` must be between 1 and 64, got {}", self.cpu));
        }
        if !(1..=1024).contains(&self.memory_gb) {
            return bad(format!(
                "`memory_gb` must be between 1 and 1024, got {}",
                self.memory_gb
            ));
        }
        if self.labels.len() > 64 {
            return bad("at most 64 `labels`".into());
        }
        for (k, v) in &self.labels {
            if k.is_empty() || k.len() > 63 || v.len() > 255 || k.contains(':') {
                return bad(format!(
                    "label `{k}`: keys are 1–63 characters without `:`, values up to 255"
                ));
            }
        }
        Ok(WorkerSpec {
            image: self.image,
            cpu: self.cpu,
            memory_gb: self.memory_gb,
            labels: self.labels,
        })
    }
}

/// A worker as the API shows it.
#[derive(Debug, Serialize)]
pub(super) struct WorkerView {
    id: String,
    state: String,
    image: String,
    cpu: i64,
    memory_gb: i64,
    labels: BTreeMap<String, String>,
    node_id: String,
    lease_id: String,
    reboot_count: i64,
    created_at: String,
}

impl From<Worker> for WorkerView {
    fn from(w: Worker) -> Self {
        let created_at =
            time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(w.created_at) * 1_000_000)
                .ok()
                .and_then(|t| {
                    t.format(&time::format_description::well_known::Rfc3339)
                        .ok()
                })
                .unwrap_or_default();
        Self {
            id: w.id,
            state: w.state,
            image: w.image,
            cpu: w.cpu,
            memory_gb: w.memory_gb,
            labels: w.labels,
            node_id: format!("node-{:04}", w.node_id),
            lease_id: w.lease_id,
            reboot_count: w.reboot_count,
            created_at,
        }
    }
}

impl From<FleetError> for ApiError {
    fn from(err: FleetError) -> Self {
        match err {
            FleetError::PoolExhausted => ApiError::PoolExhausted,
            FleetError::NotFound => ApiError::NotFound("no such worker".into()),
            FleetError::Hypervisor(crate::fleet::HypervisorError::Injected) => ApiError::Hypervisor,
            other => ApiError::internal(other),
        }
    }
}

/// The request's sub-key seed: the idempotency record's, or a fresh one for requests without a key.
fn seed_of(seed: Option<Extension<OpSeed>>) -> OpSeed {
    seed.map(|Extension(s)| s).unwrap_or_else(OpSeed::random)
}

pub(super) async fn create(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    seed: Option<Extension<OpSeed>>,
    JsonBody(body): JsonBody<CreateWorker>,
) -> Result<Response, ApiError> {
    let created = create_worker(&state, &principal, seed, body).await;
    state.metrics.create(if created.is_ok() {
        CreateResult::Created
    } else {
        CreateResult::Error
    });
    let worker = created?;
    let location = format!("/v1/workers/{}", worker.id);
    let mut response = (StatusCode::CREATED, Json(WorkerView::from(worker))).into_response();
    if state.behaviour.create_location {
        if let Ok(value) = header::HeaderValue::from_str(&location) {
            response.headers_mut().insert(header::LOCATION, value);
        }
    }
    Ok(response)
}

async fn create_worker(
    state: &AppState,
    principal: &Principal,
    seed: Option<Extension<OpSeed>>,
    body: CreateWorker,
) -> Result<Worker, ApiError> {
    let spec = body.validate()?;
    Ok(state
        .fleet
        .create(&principal.0, spec, &seed_of(seed))
        .await?)
}

pub(super) async fn list(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Query(params) = query.map_err(|e| ApiError::InvalidBody(format!("query string: {e}")))?;
    let mut wanted = Vec::new();
    for (name, value) in params {
        if name == "label" {
            let (k, v) = value.split_once(':').ok_or_else(|| {
                ApiError::InvalidBody(format!("`label` must be `key:value`, got `{value}`"))
            })?;
            wanted.push((k.to_owned(), v.to_owned()));
        }
    }
    let items: Vec<WorkerView> = state
        .fleet
        .list(&principal.0)
        .await?
        .into_iter()
        .filter(|w| wanted.iter().all(|(k, v)| w.labels.get(k) == Some(v)))
        .map(WorkerView::from)
        .collect();
    Ok(Json(serde_json::json!({ "items": items })))
}

pub(super) async fn get_one(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    WorkerId(id): WorkerId,
) -> Result<Json<WorkerView>, ApiError> {
    Ok(Json(state.fleet.get(&principal.0, &id).await?.into()))
}

pub(super) async fn delete_one(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    WorkerId(id): WorkerId,
) -> Result<StatusCode, ApiError> {
    state.fleet.delete(&principal.0, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn reboot(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    seed: Option<Extension<OpSeed>>,
    WorkerId(id): WorkerId,
) -> Result<(StatusCode, Json<WorkerView>), ApiError> {
    let worker = state
        .fleet
        .reboot(&principal.0, &id, &seed_of(seed))
        .await?;
    Ok((StatusCode::ACCEPTED, Json(worker.into())))
}
