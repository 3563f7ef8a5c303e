//! `refuse`: close (or reset) the downstream connection before forwarding; the upstream never
//! sees the request.

use http::Response;

use crate::http::body::ResponseBody;
use crate::http::flight::Flight;

/// Ends the downstream connection, with RST when `reset`, without forwarding.
pub(super) async fn apply(flight: Flight<'_>, reset: bool) -> Response<ResponseBody> {
    flight.abort(reset).await
}
