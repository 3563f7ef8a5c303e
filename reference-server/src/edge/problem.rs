//! [`ApiError`]: every error the API returns, rendered as an RFC 9457 `application/problem+json` body
//! whose `type` names the rule. Internal details (database errors) go to the log, never to the client.
//!
//! Problem types (all `https://idemspec.dev/problems/<name>`):
//!
//! | name | status | when |
//! |---|---|---|
//! | `missing-idempotency-key` | 400 | the endpoint requires a key and none was sent |
//! | `invalid-idempotency-key` | 400 | empty, over 255 characters, non-ASCII, repeated header, bad sf-string |
//! | `request-in-progress` | 409 | the key's first request is still in flight (`Retry-After` set); retryable |
//! | `key-reused-with-different-request` | 409 | same key, different fingerprint; terminal |
//! | `unauthorized` | 401 | missing or unknown bearer token (and no client certificate naming a principal) |
//! | `malformed-json` | 400 | the body is not JSON |
//! | `invalid-request-body` | 422 | wrong types, unknown or missing fields, out-of-range values |
//! | `unsupported-media-type` | 415 | a body that is not `application/json` |
//! | `payload-too-large` | 413 | a body over 1 MiB |
//! | `request-timeout` | 408 | the body did not arrive within `--body-read-timeout`; the connection closes |
//! | `not-found` | 404 | unknown worker id or route |
//! | `method-not-allowed` | 405 | known route, wrong method |
//! | `pool-exhausted` | 503 | no free node (`Retry-After` set); nothing was written |
//! | `hypervisor-error` | 502 | the simulated hypervisor failed a boot; a retry resumes |
//! | `internal-error` | 500 | anything else; details only in the log |
//! | `malformed-request` | 400 | the request line or a header is not valid HTTP/1.1 (hyper refused it) |
//! | `uri-too-long` | 414 | the request target is too long for hyper's parser |
//! | `request-header-fields-too-large` | 431 | more header fields or head bytes than [`crate::listener`] accepts |
//! | `plain-http-to-tls-port` | 400 | a plain HTTP request on the TLS listener (`--tls-cert`); answered in plain HTTP |
//!
//! The last four never reach the router: hyper refuses the request while parsing it (or, for the
//! last, the listener finds no TLS handshake), and [`crate::listener`] puts the problem body on its
//! answer (see [`ApiError::wire_response`]).

use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};
use serde::Serialize;

use super::{MAX_HEADER_FIELDS, MAX_HEAD_BYTES};

/// The prefix of every problem `type`.
pub const PROBLEM_BASE: &str = "https://idemspec.dev/problems/";

/// An API error; each variant maps to one problem type.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 `missing-idempotency-key`.
    #[error("this endpoint requires an Idempotency-Key header")]
    MissingKey,
    /// 400 `invalid-idempotency-key`.
    #[error("{0}")]
    InvalidKey(String),
    /// 409 `request-in-progress`, with `Retry-After` in seconds.
    #[error("a request with this Idempotency-Key is still in flight; retry after {0} s")]
    InProgress(u64),
    /// 409 `key-reused-with-different-request`.
    #[error(
        "this Idempotency-Key was used with a different request (method, path, query or body)"
    )]
    KeyMismatch,
    /// 401 `unauthorized`.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// 400 `malformed-json`.
    #[error("the body is not valid JSON: {0}")]
    MalformedJson(String),
    /// 422 `invalid-request-body`.
    #[error("{0}")]
    InvalidBody(String),
    /// 415 `unsupported-media-type`.
    #[error("the body must be application/json")]
    UnsupportedMediaType,
    /// 413 `payload-too-large`.
    #[error("the body is larger than 1 MiB")]
    PayloadTooLarge,
    /// 408 `request-timeout` (RFC 9110 §15.5.9), with `Connection: close`: the body did not arrive
    /// within the body read timeout (the value given).
    #[error("the body did not arrive within {0:?}")]
    RequestTimeout(std::time::Duration),
    /// 404 `not-found`.
    #[error("{0}")]
    NotFound(String),
    /// 405 `method-not-allowed`.
    #[error("this method is not allowed on this route")]
    MethodNotAllowed,
    /// 503 `pool-exhausted`.
    #[error("no free node in the pool; nothing was allocated")]
    PoolExhausted,
    /// 502 `hypervisor-error`.
    #[error(
        "the hypervisor failed to boot the worker; retrying with the same Idempotency-Key resumes"
    )]
    Hypervisor,
    /// 500 `internal-error`; the cause is logged, not shown.
    #[error("internal error")]
    Internal(String),
    /// 400 `malformed-request`: hyper could not parse the request line or a header (RFC 9112 §2–§5).
    #[error("the request line or a header field is not valid HTTP/1.1 (RFC 9112)")]
    MalformedRequest,
    /// 414 `uri-too-long` (RFC 9110 §15.5.15).
    #[error("the request target is too long")]
    UriTooLong,
    /// 431 `request-header-fields-too-large` (RFC 6585 §5).
    #[error(
        "the request has more than {MAX_HEADER_FIELDS} header fields, or its line and headers are over {} KiB",
        MAX_HEAD_BYTES / 1024
    )]
    HeaderFieldsTooLarge,
    /// 400 `plain-http-to-tls-port`: the connection began with a plain HTTP request where the
    /// listener expects a TLS handshake (nginx answers the same case 400 with "The plain HTTP
    /// request was sent to HTTPS port").
    #[error(
        "the plain HTTP request was sent to HTTPS port: this listener speaks TLS, use https://"
    )]
    PlainHttpToTlsPort,
}

impl ApiError {
    /// The status and problem name.
    pub fn kind(&self) -> (StatusCode, &'static str) {
        match self {
            Self::MissingKey => (StatusCode::BAD_REQUEST, "missing-idempotency-key"),
            Self::InvalidKey(_) => (StatusCode::BAD_REQUEST, "invalid-idempotency-key"),
            Self::InProgress(_) => (StatusCode::CONFLICT, "request-in-progress"),
            Self::KeyMismatch => (StatusCode::CONFLICT, "key-reused-with-different-request"),
            Self::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Self::MalformedJson(_) => (StatusCode::BAD_REQUEST, "malformed-json"),
            Self::InvalidBody(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid-request-body"),
            Self::UnsupportedMediaType => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type")
            }
            Self::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large"),
            Self::RequestTimeout(_) => (StatusCode::REQUEST_TIMEOUT, "request-timeout"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "not-found"),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed"),
            Self::PoolExhausted => (StatusCode::SERVICE_UNAVAILABLE, "pool-exhausted"),
            Self::Hypervisor => (StatusCode::BAD_GATEWAY, "hypervisor-error"),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal-error"),
            Self::MalformedRequest => (StatusCode::BAD_REQUEST, "malformed-request"),
            Self::UriTooLong => (StatusCode::URI_TOO_LONG, "uri-too-long"),
            Self::HeaderFieldsTooLarge => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "request-header-fields-too-large",
            ),
            Self::PlainHttpToTlsPort => (StatusCode::BAD_REQUEST, "plain-http-to-tls-port"),
        }
    }

    /// The problem for a request hyper refused while parsing it, by the status hyper chose for it
    /// (400, 414, 431); `None` for any other status.
    pub fn rejected_by_parser(status: StatusCode) -> Option<Self> {
        match status {
            StatusCode::BAD_REQUEST => Some(Self::MalformedRequest),
            StatusCode::URI_TOO_LONG => Some(Self::UriTooLong),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => Some(Self::HeaderFieldsTooLarge),
            _ => None,
        }
    }

    /// The RFC 9457 body: `{"type", "title", "status", "detail"}` as JSON bytes.
    fn problem_body(&self) -> Vec<u8> {
        let (status, name) = self.kind();
        let problem = Problem {
            kind: format!("{PROBLEM_BASE}{name}"),
            title: status.canonical_reason().unwrap_or("error"),
            status: status.as_u16(),
            detail: self.to_string(),
        };
        serde_json::to_vec(&problem).expect("a problem always serialises")
    }

    /// A whole HTTP/1.1 response carrying this problem, for a connection that closes after it:
    /// status line, `content-type: application/problem+json`, `content-length`, `connection: close`,
    /// the `extra` header lines as given (each ending in CRLF, e.g. hyper's `date`), the body.
    pub fn wire_response(&self, extra: &[u8]) -> Vec<u8> {
        let (status, _) = self.kind();
        let body = self.problem_body();
        let mut out = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\nconnection: close\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or("error"),
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(extra);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body);
        out
    }

    /// An internal error from any displayable cause (logged with its chain).
    pub fn internal(err: impl std::error::Error) -> Self {
        Self::Internal(crate::error_chain::error_chain(&err))
    }
}

#[derive(Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: String,
    title: &'a str,
    status: u16,
    detail: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, _) = self.kind();
        if let Self::Internal(cause) = &self {
            tracing::error!(%cause, "internal error");
        }
        let body = self.problem_body();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        match self {
            Self::InProgress(secs) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            Self::PoolExhausted => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            Self::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            // The rest of the body may still be on its way: this connection is done.
            Self::RequestTimeout(_) => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response
    }
}
