//! The fault verbs, one file each: a verb's settings come from its [`Fault`] variant, and its
//! behaviour is one `apply` over the request's [`Flight`].

mod delay;
mod drop_response;
mod duplicate;
mod hang;
mod refuse;
mod reset_mid_response;
mod respond;

use http::Response;
use idemspec_scenarios::rules::Fault;

use super::body::ResponseBody;
use super::flight::Flight;

/// Applies `fault` to the request in `flight`.
pub(super) async fn apply(fault: &Fault, flight: Flight<'_>) -> Response<ResponseBody> {
    match fault {
        Fault::Refuse { reset } => refuse::apply(flight, *reset).await,
        Fault::Respond {
            status,
            body,
            content_type,
            headers,
        } => respond::apply(flight, *status, body, content_type.as_deref(), headers),
        Fault::DelayRequest { duration } => {
            delay::apply(flight, delay::Hold::Request, *duration).await
        }
        Fault::DelayResponse { duration } => {
            delay::apply(flight, delay::Hold::Response, *duration).await
        }
        Fault::DropResponse {} => drop_response::apply(flight).await,
        Fault::ResetMidResponse { after_bytes } => {
            reset_mid_response::apply(flight, *after_bytes).await
        }
        Fault::Hang { forward } => hang::apply(flight, *forward).await,
        Fault::Duplicate { mode } => duplicate::apply(flight, *mode).await,
    }
}
