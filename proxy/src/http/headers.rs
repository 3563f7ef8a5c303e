//! The header rewriting a transparent reverse proxy does: hop-by-hop headers (RFC 9110 §7.6.1) go
//! both ways, the `x-idemspec-*` control headers go before the upstream sees the request, and
//! everything else, `Host` included, passes as the peer sent it.

use http::header::{self, HeaderMap, HeaderName};
use http::Response;
use hyper::body::Incoming;

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus `expect`,
/// which the downstream side already answered.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::EXPECT,
];

/// The prefix of the request headers rules may match and the upstream never sees.
pub(super) const CONTROL_PREFIX: &str = "x-idemspec-";

/// Removes the hop-by-hop headers, and the ones `Connection` names.
pub(super) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most messages carry none: one pass over the names (standard names compare by tag) saves
    // the eight hashed removals.
    if !headers.keys().any(|name| HOP_BY_HOP.contains(name)) {
        return;
    }
    // Names listed in Connection are hop-by-hop too.
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in HOP_BY_HOP.iter().chain(&listed) {
        headers.remove(name);
    }
}

/// Removes the `x-idemspec-*` control headers: rules see them, the upstream must not.
pub(super) fn strip_control(headers: &mut HeaderMap) {
    let control: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with(CONTROL_PREFIX))
        .cloned()
        .collect();
    for name in control {
        headers.remove(name);
    }
}

/// The upstream response's head as it goes downstream (hop-by-hop headers removed), and its body.
pub(super) fn downstream_head(resp: Response<Incoming>) -> (http::response::Parts, Incoming) {
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    (parts, body)
}
