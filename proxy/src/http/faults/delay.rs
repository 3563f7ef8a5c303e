//! `delay_request` and `delay_response`: hold the request before forwarding it, or forward at
//! once and hold the upstream's response before answering.

use std::time::Duration;

use http::Response;

use crate::http::body::ResponseBody;
use crate::http::flight::Flight;

/// What is held.
#[derive(Debug, Clone, Copy)]
pub(super) enum Hold {
    /// The request, before it is forwarded (`delay_request`).
    Request,
    /// The upstream's response, before it is sent (`delay_response`).
    Response,
}

/// Holds the request or the response for `duration`, then goes on as a pass-through.
pub(super) async fn apply(
    flight: Flight<'_>,
    hold: Hold,
    duration: Duration,
) -> Response<ResponseBody> {
    match hold {
        Hold::Request => {
            tokio::time::sleep(duration).await;
            flight.pass().await
        }
        Hold::Response => match flight.forward().await {
            (reply, Ok(resp)) => {
                tokio::time::sleep(duration).await;
                reply.send(resp)
            }
            (reply, Err(err)) => reply.no_response(err),
        },
    }
}
