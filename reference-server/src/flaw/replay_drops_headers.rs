//! `replay-drops-headers`: a wrapper around the idempotency layer that sends a replay with none of
//! its stored headers (a create's `Location` and `Content-Type`), only the `Idempotent-Replayed`
//! marker. The first answer is untouched, so `replay-fidelity` sees the difference.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// The header the idempotency layer marks a replay with.
const REPLAYED: &str = "idempotent-replayed";

/// The middleware (`axum::middleware::from_fn`), outside the idempotency layer.
pub async fn strip(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    if let Some(marker) = headers.get(REPLAYED).cloned() {
        headers.clear();
        headers.insert(REPLAYED, marker);
    }
    response
}
