//! One attempt of the operation, as the proxy's event log recorded it: the ground truth of what
//! the client sent (method, path, key, when) and what it was answered.

use std::time::Duration;

use idemspec_proxy::ProxyEvent;
use idemspec_scenarios::client_profile::OperationMatch;
use time::OffsetDateTime;

/// One request of the operation under test.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The method as sent.
    pub method: String,
    /// The path and query as sent.
    pub path: String,
    /// The key where the contract puts it, `None` when the request carried none (or it could not
    /// be read: `key_unread`).
    pub key: Option<String>,
    /// Why the proxy could not read the key (a body longer than it reads, or not JSON).
    pub key_unread: Option<String>,
    /// When the proxy received it.
    pub start: OffsetDateTime,
    /// From its arrival until its exchange ended (answered, cut, or given up by the client), ms.
    pub duration_ms: u64,
    /// The planned fault's name, when one applied.
    pub rule: Option<String>,
    /// The fault verb applied.
    pub fault: Option<String>,
    /// The status the client was sent, if a response head was sent.
    pub client_status: Option<u16>,
    /// The upstream's status, when it answered.
    pub upstream_status: Option<u16>,
    /// The limit the upstream's response head broke, when it answered with one the proxy
    /// refuses.
    pub upstream_head_refused: Option<String>,
    /// Whether the client got the complete response.
    pub client_complete: bool,
    /// Whether the client went away before the exchange was over (gave up: its own timeout).
    pub client_disconnected: bool,
    /// Why the exchange failed, when it did.
    pub error: Option<String>,
}

impl Attempt {
    /// The attempt behind `event`.
    pub fn from_event(event: &ProxyEvent) -> Self {
        let start =
            OffsetDateTime::parse(&event.at, &time::format_description::well_known::Rfc3339)
                .unwrap_or(OffsetDateTime::UNIX_EPOCH);
        Self {
            method: event.method.clone(),
            path: event.path.clone(),
            key: event.idempotency_key.clone(),
            key_unread: event.key_unread.clone(),
            start,
            duration_ms: event.duration_ms,
            rule: event.rule.clone(),
            fault: event.fault.clone(),
            client_status: event.client_status,
            upstream_status: event.upstream_status,
            upstream_head_refused: event.upstream_head_refused.clone(),
            client_complete: event.client_complete,
            client_disconnected: event.client_disconnected,
            error: event.upstream_error.clone(),
        }
    }

    /// When its exchange ended.
    pub fn end(&self) -> OffsetDateTime {
        self.start + Duration::from_millis(self.duration_ms)
    }

    /// How long the client waited after `previous` ended before sending this one (0 when they
    /// overlap).
    pub fn delay_after(&self, previous: &Attempt) -> Duration {
        (self.start - previous.end())
            .try_into()
            .unwrap_or(Duration::ZERO)
    }

    /// Whether the client received a complete 2xx.
    pub fn succeeded(&self) -> bool {
        self.client_complete && self.client_status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Whether a request (`method`, `path` with its query) is the operation.
/// A trailing slash on either is ignored (`/v1/workers/` is `/v1/workers`).
pub fn is_operation(operation: &OperationMatch, method: &str, path: &str) -> bool {
    let path = without_trailing_slash(path.split('?').next().unwrap_or(path));
    operation.method.as_str().eq_ignore_ascii_case(method)
        && operation
            .path
            .as_deref()
            .is_none_or(|pattern| path_matches(without_trailing_slash(pattern), path))
}

/// `path` without one trailing slash (`/` stays `/`).
pub fn without_trailing_slash(path: &str) -> &str {
    path.strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path)
}

/// `pattern` against `path`, segment by segment; `*` in a segment stands for any characters but
/// `/`.
fn path_matches(pattern: &str, path: &str) -> bool {
    let (p, s): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == s.len() && p.iter().zip(&s).all(|(p, s)| segment_matches(p, s))
}

fn segment_matches(pattern: &str, segment: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == segment,
        Some((head, rest)) => {
            let Some(after) = segment.strip_prefix(head) else {
                return false;
            };
            (0..=after.len())
                .filter(|i| after.is_char_boundary(*i))
                .any(|i| segment_matches(rest, &after[i..]))
        }
    }
}

/// `attempts` (in send order) split into logical operations: an operation ends with the attempt
/// that got a complete 2xx, so with `operations: 2` the second operation's attempts start after
/// the first one's success.
pub fn operations(attempts: &[Attempt]) -> Vec<&[Attempt]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, a) in attempts.iter().enumerate() {
        if a.succeeded() {
            out.push(&attempts[start..=i]);
            start = i + 1;
        }
    }
    if start < attempts.len() {
        out.push(&attempts[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemspec_scenarios::rules::HttpMethod;

    #[test]
    fn the_operation_is_matched_by_method_and_path_pattern() {
        let op = |path: Option<&str>| OperationMatch {
            method: HttpMethod::new("post").expect("method"),
            path: path.map(str::to_owned),
        };
        assert!(is_operation(&op(None), "POST", "/anything?x=1"));
        assert!(!is_operation(&op(None), "GET", "/anything"));
        let exact = op(Some("/v1/customers"));
        assert!(is_operation(&exact, "POST", "/v1/customers?expand=x"));
        assert!(!is_operation(&exact, "POST", "/v1/customers/cus_1"));
        assert!(is_operation(&exact, "POST", "/v1/customers/"));
        assert!(is_operation(&exact, "POST", "/v1/customers/?expand=x"));
        assert!(is_operation(
            &op(Some("/v1/customers/")),
            "POST",
            "/v1/customers"
        ));
        assert!(is_operation(&op(Some("/")), "POST", "/"));
        assert!(!is_operation(&op(Some("/")), "POST", "/x"));
        let glob = op(Some("/v1/servers/*/actions"));
        assert!(is_operation(&glob, "POST", "/v1/servers/42/actions"));
        assert!(!is_operation(&glob, "POST", "/v1/servers/4/2/actions"));
        assert!(is_operation(&op(Some("/v1/s-*")), "POST", "/v1/s-1"));
    }
}
