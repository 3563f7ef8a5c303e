//! The `{id}` path segment of `/v1/workers/{id}…`: only an id a worker could have reaches the store.
//!
//! Worker ids are `wkr-` plus hex digits. A segment that cannot be one — invalid UTF-8 after
//! percent-decoding (axum's `Path` would answer in plain text), a control character such as NUL
//! (PostgreSQL refuses it in a text parameter: a 500), a space, non-ASCII, more than
//! [`MAX_WORKER_ID_LEN`] bytes — names no worker: `404 not-found`, without a database query.

use axum::extract::{FromRequestParts, Path};
use http::request::Parts;

use crate::edge::ApiError;

/// The longest id looked up, in bytes; real ids are far shorter.
const MAX_WORKER_ID_LEN: usize = 128;

/// A worker id from the path: 1–[`MAX_WORKER_ID_LEN`] visible ASCII characters (0x21–0x7E).
#[derive(Debug, Clone)]
pub(super) struct WorkerId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for WorkerId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let no_such = || ApiError::NotFound("no such worker".into());
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| no_such())?;
        let plausible = !id.is_empty()
            && id.len() <= MAX_WORKER_ID_LEN
            && id.bytes().all(|b| (0x21..=0x7e).contains(&b));
        if plausible {
            Ok(Self(id))
        } else {
            Err(no_such())
        }
    }
}
