//! Reading request bodies: 1 MiB limit (413), a deadline (408), JSON only (415), and JSON errors
//! split into syntax (400 `malformed-json`) and shape (422 `invalid-request-body`).

use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderMap};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;

use super::{ApiError, MAX_BODY_BYTES};

/// When a request's body must have arrived, set by [`crate::listener`] on every request it hands
/// to the router: the end of the request's head plus the body read timeout (the second field).
/// A request without it (one built in process) has no deadline.
#[derive(Debug, Clone, Copy)]
pub struct BodyDeadline(pub tokio::time::Instant, pub Duration);

/// Buffers a body of at most [`MAX_BODY_BYTES`] (else 413, also when `Content-Length` says so up
/// front) that arrives before the request's [`BodyDeadline`] (else 408).
pub(crate) async fn read_body(body: Body, parts: &Parts) -> Result<Bytes, ApiError> {
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(ApiError::PayloadTooLarge);
    }
    let collect = Limited::new(body, MAX_BODY_BYTES).collect();
    let collected = match parts.extensions.get::<BodyDeadline>() {
        Some(&BodyDeadline(at, timeout)) => tokio::time::timeout_at(at, collect)
            .await
            .map_err(|_| ApiError::RequestTimeout(timeout))?,
        None => collect.await,
    };
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.downcast_ref::<LengthLimitError>().is_some() => {
            Err(ApiError::PayloadTooLarge)
        }
        Err(err) => Err(ApiError::MalformedJson(format!(
            "the body could not be read: {err}"
        ))),
    }
}

/// Whether `headers` declare a JSON body (`application/json` or `application/*+json`, any parameters,
/// case-insensitive). Two `Content-Type` headers declare nothing: which one a proxy in front honoured
/// is unknown.
fn is_json(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::CONTENT_TYPE).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// A JSON request body with problem-body rejections (the axum `Json` extractor answers in plain text).
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        if !is_json(&parts.headers) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes = read_body(body, &parts).await?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| match e.classify() {
                serde_json::error::Category::Data => ApiError::InvalidBody(e.to_string()),
                _ => ApiError::MalformedJson(e.to_string()),
            })
    }
}
