//! The `{id}` path segment of `/v1/workers/{id}…` and `/v1/operations/{id}`: only an id a worker or
//! an operation could have reaches the store.
//!
//! Ids are a prefix (`wkr-`, `op-`) plus hex digits. A segment that cannot be one — invalid UTF-8
//! after percent-decoding (axum's `Path` would answer in plain text), a control character such as
//! NUL (PostgreSQL refuses it in a text parameter: a 500), a space, non-ASCII, more than
//! [`MAX_ID_LEN`] bytes — names nothing: `404 not-found`, without a database query.

use axum::extract::{FromRequestParts, Path};
use http::request::Parts;

use crate::edge::ApiError;

/// The longest id looked up, in bytes; real ids are far shorter.
const MAX_ID_LEN: usize = 128;

/// A worker id from the path: 1–[`MAX_ID_LEN`] visible ASCII characters (0x21–0x7E).
#[derive(Debug, Clone)]
pub(super) struct WorkerId(pub String);

/// An operation id from the path, as a [`WorkerId`] is read.
#[derive(Debug, Clone)]
pub(super) struct OperationId(pub String);

/// The `{id}` segment, or `404 not-found` saying there is no such `what`.
async fn plausible_id<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
    what: &str,
) -> Result<String, ApiError> {
    let no_such = || ApiError::NotFound(format!("no such {what}"));
    let Path(id) = Path::<String>::from_request_parts(parts, state)
        .await
        .map_err(|_| no_such())?;
    let plausible =
        !id.is_empty() && id.len() <= MAX_ID_LEN && id.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if plausible {
        Ok(id)
    } else {
        Err(no_such())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for WorkerId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        plausible_id(parts, state, "worker").await.map(Self)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for OperationId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        plausible_id(parts, state, "operation").await.map(Self)
    }
}
