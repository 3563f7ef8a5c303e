//! `drop_response`: forward, read the upstream's whole response, then close the downstream
//! connection without sending a byte of it: the work is done, the client never hears.

use http::Response;

use crate::http::body::ResponseBody;
use crate::http::flight::Flight;

/// Forwards, waits for the whole response, and closes the downstream connection (FIN).
pub(super) async fn apply(flight: Flight<'_>) -> Response<ResponseBody> {
    let (mut reply, answer) = flight.forward().await;
    reply.discard(answer).await;
    reply.abort(false).await
}
