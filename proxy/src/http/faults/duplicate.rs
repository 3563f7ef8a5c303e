//! `duplicate`: send the request upstream twice and answer with the first response, as a
//! misbehaving intermediary would. The body is buffered so both copies carry the same bytes.

use std::time::Instant;

use http::Response;
use idemspec_scenarios::rules::DuplicateMode;

use crate::http::body::ResponseBody;
use crate::http::flight::Flight;

/// Buffers the request, sends two copies one after the other or both at once (`mode`), and
/// answers with the first copy's response (without one, as a pass-through answers; a body the
/// client broke gets 400).
pub(super) async fn apply(flight: Flight<'_>, mode: DuplicateMode) -> Response<ResponseBody> {
    let (mut reply, buffered) = flight.buffer().await;
    let req = match buffered {
        Ok(req) => req,
        Err(err) => return reply.no_response(err),
    };
    let asked = Instant::now();
    let (first, second) = match mode {
        DuplicateMode::Sequential => {
            let first = reply.exchange(req.copy()).await;
            let second = reply.exchange(req.copy()).await;
            (first, second)
        }
        DuplicateMode::Concurrent => {
            tokio::join!(reply.exchange(req.copy()), reply.exchange(req.copy()))
        }
    };
    reply.waited(asked.elapsed());
    for outcome in [&first, &second] {
        reply.event().upstream_sends += match outcome {
            Ok(_) => 1,
            Err(err) => u8::from(err.sent),
        };
    }
    if let Err(err) = &second {
        tracing::debug!(error = %err.message, "second copy of a duplicated request failed");
    }
    match first {
        Ok((parts, body)) => {
            reply.event().upstream_status = Some(parts.status.as_u16());
            reply.send_buffered(parts, body)
        }
        Err(err) => reply.no_response(err),
    }
}
