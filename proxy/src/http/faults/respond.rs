//! `respond`: answer with a synthetic response; the request is not forwarded.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Response, StatusCode};
use idemspec_scenarios::rules::{ResponseHeaders, Status};

use crate::http::body::ResponseBody;
use crate::http::flight::Flight;

/// The `Content-Type` when the rule names none.
const DEFAULT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// Answers with `status` and `body` (of `content_type`, plain text by default) and `headers`
/// (a `Retry-After` on a 429, say).
pub(super) fn apply(
    flight: Flight<'_>,
    status: Status,
    body: &str,
    content_type: Option<&str>,
    headers: &ResponseHeaders,
) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(status.get()).expect("Status is validated to 200..=599");
    let mut response = flight.synthetic(
        status,
        content_type.unwrap_or(DEFAULT_CONTENT_TYPE),
        Bytes::copy_from_slice(body.as_bytes()),
    );
    for (name, value) in headers.iter() {
        // ResponseHeaders validated both when the rule was read.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}
