//! `duplicate`: send the request upstream twice and answer with the first response, as a
//! misbehaving intermediary would. The body is buffered so both copies carry the same bytes.
//!
//! Memory is bounded whatever either side sends: the request is held only up to
//! [`BUFFER_LIMIT`] (a longer one is answered 413, not forwarded); the second copy's answer is
//! read a frame at a time and discarded; the first copy's answer is streamed to the client
//! (concurrent mode) or held up to [`BUFFER_LIMIT`] while the second copy is sent (sequential
//! mode: a longer first answer is read to its end and the client gets a 502 naming the limit).

use std::time::Instant;

use bytes::Bytes;
use http::{Response, StatusCode};
use hyper::body::Incoming;
use idemspec_scenarios::rules::DuplicateMode;

use crate::event::Side;
use crate::http::body::ResponseBody;
use crate::http::flight::{Flight, Reply, Unbuffered, BUFFER_LIMIT};
use crate::http::headers::downstream_head;
use crate::http::sink::{self, Uncollected};
use crate::http::upstream::NoResponse;

/// What the first copy's answer became.
enum First {
    /// Its head; its body not yet read (concurrent mode: streamed to the client).
    Streaming(Response<Incoming>),
    /// Read whole (sequential mode).
    Held(http::response::Parts, Bytes),
    /// Longer than [`BUFFER_LIMIT`] (sequential mode): its status and the bytes read.
    TooLong(StatusCode, u64),
}

/// Buffers the request, sends two copies one after the other or both at once (`mode`), and
/// answers with the first copy's response (without one, as a pass-through answers; a body the
/// client broke gets 400, one longer than [`BUFFER_LIMIT`] 413).
pub(super) async fn apply(flight: Flight<'_>, mode: DuplicateMode) -> Response<ResponseBody> {
    let (mut reply, buffered) = flight.buffer().await;
    let req = match buffered {
        Ok(req) => req,
        Err(Unbuffered::Broken(err)) => return reply.no_response(err),
        Err(Unbuffered::TooLong(read)) => {
            let detail = format!(
                "idemspec-proxy holds at most {BUFFER_LIMIT} bytes of a request body to send it \
                 twice (duplicate); this one had more ({read} bytes read), so it was not forwarded"
            );
            return reply.problem(StatusCode::PAYLOAD_TOO_LARGE, Side::Downstream, detail);
        }
    };
    let asked = Instant::now();
    let (first, second) = match mode {
        DuplicateMode::Sequential => {
            let first = match reply.exchange(req.copy()).await {
                Ok(resp) => hold(resp).await,
                Err(err) => Err(err),
            };
            let second = discarded(reply.exchange(req.copy()).await).await;
            (first, second)
        }
        DuplicateMode::Concurrent => {
            let (first, second) = tokio::join!(reply.exchange(req.copy()), async {
                discarded(reply.exchange(req.copy()).await).await
            });
            (first.map(First::Streaming), second)
        }
    };
    reply.waited(asked.elapsed());
    let first_sent = first.as_ref().map_or_else(|err| err.sent, |_| true);
    let second_sent = second.as_ref().map_or_else(|err| err.sent, |_| true);
    reply.event().upstream_sends += u8::from(first_sent) + u8::from(second_sent);
    match second {
        Ok(read) => reply.event().discarded_bytes += read,
        Err(err) => {
            tracing::debug!(error = %err.message, "second copy of a duplicated request failed")
        }
    }
    answer(reply, first)
}

/// Answers the client with what the first copy got.
fn answer(mut reply: Reply<'_>, first: Result<First, NoResponse>) -> Response<ResponseBody> {
    match first {
        Ok(First::Streaming(resp)) => {
            reply.event().upstream_status = Some(resp.status().as_u16());
            reply.send(resp)
        }
        Ok(First::Held(parts, body)) => {
            reply.event().upstream_status = Some(parts.status.as_u16());
            reply.send_buffered(parts, body)
        }
        Ok(First::TooLong(status, read)) => {
            reply.event().upstream_status = Some(status.as_u16());
            reply.event().discarded_bytes += read;
            let detail = format!(
                "idemspec-proxy holds at most {BUFFER_LIMIT} bytes of the first copy's answer \
                 while it sends the second (duplicate, sequential); the upstream answered {} \
                 with {read} bytes, read and discarded",
                status.as_u16()
            );
            reply.problem(StatusCode::BAD_GATEWAY, Side::Upstream, detail)
        }
        Err(err) => reply.no_response(err),
    }
}

/// Reads the first copy's answer whole, or to its end without keeping it when it is longer
/// than [`BUFFER_LIMIT`].
async fn hold(resp: Response<Incoming>) -> Result<First, NoResponse> {
    let (parts, mut body) = downstream_head(resp);
    match sink::collect_within(&mut body, BUFFER_LIMIT).await {
        Ok(bytes) => Ok(First::Held(parts, bytes)),
        Err(Uncollected::Failed(err)) => Err(NoResponse::body_failed(&err)),
        Err(Uncollected::TooLong(read)) => match sink::discard(body).await {
            Ok(rest) => Ok(First::TooLong(parts.status, read + rest)),
            Err((err, _)) => Err(NoResponse::body_failed(&err)),
        },
    }
}

/// Reads the second copy's answer to its end and discards it; the bytes read.
async fn discarded(answer: Result<Response<Incoming>, NoResponse>) -> Result<u64, NoResponse> {
    let body = answer?.into_body();
    sink::discard(body)
        .await
        .map_err(|(err, _)| NoResponse::body_failed(&err))
}
