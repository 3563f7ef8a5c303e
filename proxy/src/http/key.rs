//! Where the proxy finds each request's idempotency key ([`crate::ProxyConfig::key_at`]): a header
//! or a query parameter, read from the head; a form field or a JSON member, read from the first
//! [`BODY_LIMIT`] bytes of the body (undone of its `Content-Encoding`), which then go upstream
//! ahead of the rest, unchanged.

use bytes::{Bytes, BytesMut};
use http::header::HeaderName;
use http::request::Parts;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use idemspec_scenarios::profile::{content_coding, KeyAt};

use super::body::Source;

/// The most of a request body read to find a key in it: 64 KiB. A body longer than that is
/// forwarded whole, and its key is not recorded (a provisioning request is a few hundred bytes).
pub(crate) const BODY_LIMIT: usize = 64 * 1024;

/// Where the key is, ready to read.
#[derive(Debug, Clone)]
pub(crate) struct RequestKey {
    at: KeyAt,
    /// The header's parsed name, where the key is a header.
    header: Option<HeaderName>,
}

impl RequestKey {
    /// The key at `at`. Errors: a header name HTTP cannot carry.
    pub(crate) fn new(at: KeyAt) -> Result<Self, String> {
        let header = match &at {
            KeyAt::Header(name) => Some(HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                format!("`{name}` is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)")
            })?),
            _ => None,
        };
        Ok(Self { at, header })
    }

    /// The header that carries the key (lowercase), where one does: the fast path reads only
    /// such keys, and leaves the others to hyper's path.
    pub(crate) fn header(&self) -> Option<&str> {
        self.header.as_ref().map(HeaderName::as_str)
    }

    /// Whether the key is in the body.
    pub(crate) fn in_body(&self) -> bool {
        self.at.in_body()
    }

    /// The key in the request head `parts`; `None` where the key is in the body.
    pub(crate) fn in_head(&self, parts: &Parts) -> Option<String> {
        if self.in_body() {
            return None;
        }
        // A named header is looked up by its parsed name; a pattern is tried on each.
        let header = |wanted: &dyn Fn(&str) -> bool| match &self.header {
            Some(name) => parts.headers.get(name).map(|v| v.as_bytes()),
            None => parts
                .headers
                .iter()
                .find(|(name, _)| wanted(name.as_str()))
                .map(|(_, v)| v.as_bytes()),
        };
        // A key in the head is always readable.
        self.at.find(target(parts), header, None).unwrap_or(None)
    }

    /// Reads up to [`BODY_LIMIT`] of `body` and finds the key in it; returns the key, or why it
    /// could not be read, and the body to send upstream (what was read, then the rest). Errors:
    /// the client's body failed.
    pub(crate) async fn read_body(
        &self,
        parts: &Parts,
        mut body: Incoming,
    ) -> Result<(Result<Option<String>, String>, Source), hyper::Error> {
        let mut kept = BytesMut::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                kept.extend_from_slice(&data);
            }
            if kept.len() > BODY_LIMIT {
                let why = format!(
                    "the body is longer than the {} KiB the proxy reads",
                    BODY_LIMIT / 1024
                );
                return Ok((Err(why), Source::Prefixed(Some(kept.freeze()), body)));
            }
        }
        let kept: Bytes = kept.freeze();
        // The key is read from the body as sent, undone of its Content-Encoding; the bytes go
        // upstream as they came.
        let encoding = parts.headers.get(http::header::CONTENT_ENCODING);
        let key = content_coding::decoded(encoding.map(|v| v.as_bytes()), &kept)
            .and_then(|body| self.at.find(target(parts), |_| None, Some(&body)));
        Ok((key, Source::Full(Some(kept))))
    }
}

/// The request-target as sent (path and query).
fn target(parts: &Parts) -> &str {
    parts.uri.path_and_query().map_or("/", |pq| pq.as_str())
}
