//! The errors of the Toxiproxy API: Toxiproxy's `{"error": MESSAGE, "status": N}`, sent as an
//! RFC 9457 problem document that also carries those two members, so that Toxiproxy's clients
//! and problem-aware ones both read it.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::toxics::Refused;
use crate::http::{problem_document, PROBLEM_JSON};

/// A refused request: its status and Toxiproxy's message.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// 400, 403, 404, 405, 409 or 413.
    pub status: StatusCode,
    /// As Toxiproxy words it (`proxy not found`, `toxic already exists` …), with detail after a
    /// colon where there is some.
    pub message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// The body: a problem document with `error` beside `status`.
    pub(crate) fn document(&self) -> serde_json::Map<String, serde_json::Value> {
        let title = self.status.canonical_reason().unwrap_or("error");
        let mut doc = problem_document(self.status, title, &self.message);
        doc.insert("error".into(), self.message.clone().into());
        doc
    }
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> Self {
        let Refused::Bad(message) = r;
        Self::bad_request(message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            [(header::CONTENT_TYPE, PROBLEM_JSON)],
            serde_json::Value::Object(self.document()).to_string(),
        )
            .into_response()
    }
}
