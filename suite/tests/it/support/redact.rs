//! What varies between runs, replaced for snapshots: durations, ports, temporary paths, per-check
//! markers and generated ids. A snapshot then changes only when the output really does.

/// insta filters (regex, replacement) for reports and CLI output.
pub fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        // Leading spaces too: a table pads a short duration more than a long one.
        (r" *\b\d+(\.\d+)?(ms|s)\b", " [time]"),
        (r"\b\d+m\d{2}s\b", "[time]"),
        (r#"time="[0-9.]+""#, r#"time="[time]""#),
        (r"127\.0\.0\.1:\d+", "127.0.0.1:[port]"),
        (r"/tmp/[^\s`'\x22]+", "[tmp]"),
        (r"\bm[0-9a-f]{10}\b", "[marker]"),
        (
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            "[uuid]",
        ),
    ]
}

/// Runs `$body` with [`filters`] applied to every insta assertion in it.
macro_rules! redacted {
    ($body:expr) => {
        insta::with_settings!({filters => $crate::support::redact::filters()}, { $body })
    };
}
pub(crate) use redacted;
