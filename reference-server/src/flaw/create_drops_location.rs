//! `create-drops-location`: a wrapper around the create route that sends every answer without
//! `Location`, the first and its replays alike (the stored answer keeps it; no client sees it),
//! refusals too (they carry none).
//! With asynchronous creates the `202` names its operation in its body as well, so no rule breaks.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::header::LOCATION;

/// The middleware (`axum::middleware::from_fn`), around the create route and its idempotency
/// layer.
pub async fn strip(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    response.headers_mut().remove(LOCATION);
    response
}
