//! An error and its causes as one line, `a: b: c`, for the log and for internal-error bodies.

/// `err` and each of its sources, joined by `: `.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
