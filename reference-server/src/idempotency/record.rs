//! What is stored for a completed record, and how it is replayed.
//!
//! Stored: the status, the headers a client relies on (`Location`, `Content-Type`) and the body,
//! deflate-compressed above [`COMPRESS_ABOVE_BYTES`]. Only terminal outcomes are stored: 2xx, and 4xx
//! that are permanent (not 408, 409, 425, 429; those invite a retry). 5xx and panics mark the record failed.

use std::io::{Read, Write};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use http::{HeaderName, HeaderValue, StatusCode};

use crate::store::StoredResponse;

/// Bodies larger than this many bytes are stored deflate-compressed.
pub const COMPRESS_ABOVE_BYTES: usize = 4096;

/// The response headers stored and replayed.
const REPLAYED_HEADERS: [HeaderName; 2] = [http::header::LOCATION, http::header::CONTENT_TYPE];

/// Whether an outcome with `status` is terminal and stored (2xx, and 4xx except 408, 409, 425, 429).
pub fn is_storable(status: StatusCode) -> bool {
    status.is_success()
        || (status.is_client_error() && !matches!(status.as_u16(), 408 | 409 | 425 | 429))
}

/// Encodes a response for storage.
pub(crate) fn encode(status: StatusCode, headers: &http::HeaderMap, body: &[u8]) -> StoredResponse {
    let pairs: Vec<(String, String)> = REPLAYED_HEADERS
        .iter()
        .filter_map(|name| {
            let value = headers.get(name)?.to_str().ok()?;
            Some((name.as_str().to_owned(), value.to_owned()))
        })
        .collect();
    let headers_json =
        serde_json::to_string(&pairs).expect("a list of string pairs always serialises");
    let (body, compressed) = if body.len() > COMPRESS_ABOVE_BYTES {
        let mut enc = DeflateEncoder::new(Vec::new(), Compression::fast());
        // Writing to a Vec cannot fail.
        let done = enc.write_all(body).and_then(|()| enc.finish());
        match done {
            Ok(packed) => (packed, true),
            Err(_) => (body.to_vec(), false),
        }
    } else {
        (body.to_vec(), false)
    };
    StoredResponse {
        status: status.as_u16(),
        headers_json,
        body,
        compressed,
    }
}

/// Rebuilds a stored response for replay, marked `Idempotent-Replayed: true`.
pub(crate) fn replay(stored: &StoredResponse) -> Result<Response, String> {
    let status = StatusCode::from_u16(stored.status).map_err(|e| e.to_string())?;
    let pairs: Vec<(String, String)> =
        serde_json::from_str(&stored.headers_json).map_err(|e| e.to_string())?;
    let body = if stored.compressed {
        let mut out = Vec::new();
        DeflateDecoder::new(stored.body.as_slice())
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        out
    } else {
        stored.body.clone()
    };
    let mut response = Response::new(Body::from(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    for (name, value) in pairs {
        let name = HeaderName::try_from(name).map_err(|e| e.to_string())?;
        let value = HeaderValue::try_from(value).map_err(|e| e.to_string())?;
        headers.insert(name, value);
    }
    headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storable_statuses() {
        for s in [200, 201, 202, 204, 400, 404, 413, 415, 422] {
            assert!(is_storable(StatusCode::from_u16(s).unwrap()), "{s}");
        }
        for s in [408, 409, 425, 429, 500, 502, 503, 504, 301] {
            assert!(!is_storable(StatusCode::from_u16(s).unwrap()), "{s}");
        }
    }

    #[tokio::test]
    async fn large_bodies_round_trip_compressed() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::LOCATION,
            HeaderValue::from_static("/v1/workers/wkr-1"),
        );
        headers.insert("x-other", HeaderValue::from_static("dropped"));
        let body = "x".repeat(10_000);
        let stored = encode(StatusCode::CREATED, &headers, body.as_bytes());
        assert!(stored.compressed && stored.body.len() < 1000);
        let replayed = replay(&stored).unwrap();
        assert_eq!(replayed.status(), StatusCode::CREATED);
        assert_eq!(
            replayed.headers()[http::header::LOCATION],
            "/v1/workers/wkr-1"
        );
        assert!(replayed.headers().get("x-other").is_none());
        let got = axum::body::to_bytes(replayed.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(got, body.as_bytes());
    }
}
