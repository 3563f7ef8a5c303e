//! `hang`: hold the downstream connection without answering, optionally after the upstream did
//! the work.

use http::Response;

use crate::http::body::ResponseBody;
use crate::http::flight::Flight;

/// With `forward`, forwards and discards the whole response first; without, reads the request
/// body unforwarded (so hyper notices the client leaving). Then holds until the client gives
/// up (the service future is dropped and the event says so) or the proxy shuts down, which
/// closes the connection without an answer.
pub(super) async fn apply(flight: Flight<'_>, forward: bool) -> Response<ResponseBody> {
    let reply = if forward {
        let (mut reply, answer) = flight.forward().await;
        reply.discard(answer).await;
        reply
    } else {
        flight.drain().await
    };
    reply.shutting_down().await;
    reply.abort(false).await
}
