//! The workers handlers.

use std::collections::BTreeMap;

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::{Deserialize, Serialize};

use super::operations;
use super::path_id::WorkerId;
use crate::auth::Principal;
use crate::edge::{ApiError, JsonBody};
use crate::fleet::{CreateMode, FleetError, WorkerSpec};
use crate::idempotency::{AfterAnswer, AnswerFor, KeyRelease, OpSeed, UnitOfWork};
use crate::metrics::CreateResult;
use crate::state::AppState;
use crate::store::{CreateStore, StoreError, Worker};

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
            FleetError::NotOwned => ApiError::InProgress(0),
            FleetError::Store(StoreError::Deleted(_)) => {
                ApiError::NotFound("the worker this create made was deleted".into())
            }
            other => ApiError::internal(other),
        }
    }
}

/// The request's sub-key seed: the idempotency record's, or a fresh one for requests without a key.
fn seed_of(seed: Option<Extension<OpSeed>>) -> OpSeed {
    seed.map(|Extension(s)| s).unwrap_or_else(OpSeed::random)
}

/// A create's `201`: the worker as JSON, with its `Location`. As parts, so the idempotency layer can
/// store exactly what is sent.
fn created(worker: Worker) -> (HeaderMap, Bytes) {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("/v1/workers/{}", worker.id)) {
        headers.insert(header::LOCATION, value);
    }
    let body =
        serde_json::to_vec(&WorkerView::from(worker)).expect("a worker view always serialises");
    (headers, Bytes::from(body))
}

/// The create route's answer for a new worker, as the idempotency layer's unit of work stores it
/// (the handler sends the same, from [`created`]).
pub(super) fn answer_for() -> AnswerFor {
    Arc::new(|worker: &Worker| {
        let (headers, body) = created(worker.clone());
        (StatusCode::CREATED, headers, body)
    })
}

pub(super) async fn create(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    seed: Option<Extension<OpSeed>>,
    unit: Option<Extension<Arc<UnitOfWork>>>,
    release: Option<Extension<KeyRelease>>,
    JsonBody(body): JsonBody<CreateWorker>,
) -> Result<Response, ApiError> {
    let spec = body.validate()?;
    if state.creates == CreateMode::Async {
        let release = release.map(|Extension(r)| r);
        let started = state
            .operations
            .start(&principal.0, spec, &seed_of(seed), release.as_ref())
            .await;
        state.metrics.create(match started {
            Ok(_) => CreateResult::Created,
            Err(_) => CreateResult::Error,
        });
        let op = started?;
        let mut response = operations::accepted(&op);
        AfterAnswer::attach(&mut response, Box::pin(state.operations.clone().finish(op)));
        return Ok(response);
    }
    let through = unit
        .as_ref()
        .map(|Extension(unit)| unit.as_ref() as &dyn CreateStore);
    let created_worker = state
        .fleet
        .create(&principal.0, spec, &seed_of(seed), through)
        .await;
    let result = match &created_worker {
        Ok(_) => CreateResult::Created,
        // Not a run of the handler: the idempotency layer answers from the record it found.
        Err(FleetError::NotOwned) => return Err(ApiError::InProgress(0)),
        Err(_) => CreateResult::Error,
    };
    state.metrics.create(result);
    let (headers, body) = created(created_worker?);
    let mut response = (StatusCode::CREATED, body).into_response();
    *response.headers_mut() = headers;
    Ok(response)
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
