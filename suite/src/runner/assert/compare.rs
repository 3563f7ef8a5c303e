//! Comparing a replay with the original: status, body bytes, Location, Content-Type.

use crate::client::Exchange;

/// What differs between `replay` and `original` (empty: a faithful replay).
pub(crate) fn differences(replay: &Exchange, original: &Exchange) -> Vec<String> {
    let mut out = Vec::new();
    if replay.status != original.status {
        out.push(format!(
            "status {} instead of {}",
            replay.describe(),
            original.describe()
        ));
    }
    for header in ["location", "content-type"] {
        match (replay.header(header), original.header(header)) {
            (a, b) if a == b => {}
            (None, Some(b)) => out.push(format!("{header} missing (was `{b}`)")),
            (Some(a), None) => out.push(format!("{header} `{a}` added")),
            (Some(a), Some(b)) => out.push(format!("{header} `{a}` instead of `{b}`")),
            (None, None) => {}
        }
    }
    if replay.body != original.body {
        out.push(format!(
            "body differs ({} bytes instead of {})",
            replay.body.len(),
            original.body.len()
        ));
    }
    out
}

/// Whether `a` is the same status and body as `b` (what a replay of `b` looks like).
pub(crate) fn same_response(a: &Exchange, b: &Exchange) -> bool {
    a.status.is_some() && a.status == b.status && a.body == b.body
}
