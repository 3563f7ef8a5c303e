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
        out.push(body_difference(&replay.body, &original.body));
    }
    out
}

/// Where two bodies first differ, with a short excerpt of each side from just before that byte, so a
/// reader sees the change itself and not only two lengths (which may be equal).
fn body_difference(replay: &[u8], original: &[u8]) -> String {
    const BEFORE: usize = 12;
    const EXCERPT: usize = 40;
    let at = replay
        .iter()
        .zip(original)
        .position(|(a, b)| a != b)
        .unwrap_or(replay.len().min(original.len()));
    let excerpt = |body: &[u8]| {
        let start = at.saturating_sub(BEFORE);
        let end = (start + EXCERPT).min(body.len());
        let text = String::from_utf8_lossy(&body[start.min(end)..end]);
        let lead = if start > 0 { "…" } else { "" };
        let tail = if end < body.len() { "…" } else { "" };
        format!("`{lead}{text}{tail}`")
    };
    format!(
        "body differs at byte {at} ({} bytes instead of {}): {} instead of {}",
        replay.len(),
        original.len(),
        excerpt(replay),
        excerpt(original)
    )
}

/// Whether `a` is the same status and body as `b` (what a replay of `b` looks like).
pub(crate) fn same_response(a: &Exchange, b: &Exchange) -> bool {
    a.status.is_some() && a.status == b.status && a.body == b.body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, location: Option<&str>, body: &str) -> Exchange {
        let mut ex = Exchange::failed("s", String::new());
        ex.status = Some(status);
        if let Some(l) = location {
            ex.headers
                .insert("location", l.parse().expect("valid header"));
        }
        ex.body = bytes::Bytes::from(body.to_owned());
        ex
    }

    #[test]
    fn a_body_of_equal_length_names_the_first_differing_byte() {
        let replay = response(201, None, r#"{"id":"w1","cpu":1}"#);
        let original = response(201, None, r#"{"id":"w1","cpu":2}"#);
        assert_eq!(
            differences(&replay, &original),
            vec![
                r#"body differs at byte 17 (19 bytes instead of 19): `…:"w1","cpu":1}` instead of `…:"w1","cpu":2}`"#
                    .to_owned()
            ]
        );
    }

    #[test]
    fn a_truncated_body_differs_where_it_ends() {
        let replay = response(200, None, "abc");
        let original = response(200, None, "abcdef");
        assert_eq!(
            differences(&replay, &original),
            vec![
                "body differs at byte 3 (3 bytes instead of 6): `abc` instead of `abcdef`"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn a_faithful_replay_has_no_differences() {
        let a = response(201, Some("/w/1"), "{}");
        assert!(differences(&a, &a.clone()).is_empty());
        assert!(same_response(&a, &a.clone()));
    }

    #[test]
    fn each_difference_is_named() {
        let original = response(201, Some("/w/1"), r#"{"id":1}"#);
        let replay = response(200, None, r#"{"id":2}"#);
        let diffs = differences(&replay, &original);
        assert_eq!(diffs.len(), 3, "{diffs:?}");
        assert!(diffs[0].starts_with("status 200 instead of 201"));
        assert_eq!(diffs[1], "location missing (was `/w/1`)");
        assert!(diffs[2].starts_with("body differs"));
    }
}
