//! `reset_mid_response`: forward, send the response head and part of the body, then reset the
//! downstream connection.

use http::Response;

use crate::http::body::ResponseBody;
use crate::http::flight::Flight;

/// Forwards and sends the head and at most `after_bytes` body bytes (never the whole body),
/// then RST; without an upstream response, as a pass-through answers.
pub(super) async fn apply(flight: Flight<'_>, after_bytes: u64) -> Response<ResponseBody> {
    match flight.forward().await {
        (reply, Ok(resp)) => reply.send_cut(resp, after_bytes),
        (reply, Err(err)) => reply.no_response(err),
    }
}
