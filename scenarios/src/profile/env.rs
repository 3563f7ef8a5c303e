//! `${VAR}` and `${VAR:-default}` expansion in profile text, before parsing, with located errors.

use crate::load::LoadError;

/// Replaces `${NAME}` and `${NAME:-default}` in `text` with `lookup(NAME)`. Line numbers are kept
/// (values must not contain newlines), so later parse errors still point at the right line.
///
/// # Errors
/// A [`LoadError`] at the reference when a variable is unset and has no default, when a value contains
/// a newline, or when `${` is not closed.
pub fn expand_env(
    file: &str,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, LoadError> {
    expand_recording(file, text, lookup).map(|(out, _)| out)
}

/// [`expand_env`], also giving each value put in and the `${…}` it replaced, in order, so an
/// error on the expanded text can be shown without them ([`mask_values`]).
///
/// # Errors
/// As [`expand_env`].
pub(crate) fn expand_recording(
    file: &str,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, Vec<(String, String)>), LoadError> {
    let mut values = Vec::new();
    let mut out = String::with_capacity(text.len());
    for (line_no, line) in text.split_inclusive('\n').enumerate() {
        // A comment is kept as written: a commented-out example must not demand its variable.
        let (code, comment) = line.split_at(comment_start(line).unwrap_or(line.len()));
        let mut rest = code;
        let mut column = 1u64;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            column += rest[..start].chars().count() as u64;
            let located = |message: String| LoadError {
                file: file.to_owned(),
                line: line_no as u64 + 1,
                column,
                message,
                snippet: Some(line.trim_end().to_owned()),
                more: Vec::new(),
            };
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| located("unclosed `${`; expected `${NAME}`".into()))?;
            let inner = &after[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            let is_name = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !is_name {
                return Err(located(format!(
                    "`${{{name}}}`: `{name}` is not a variable name (letters, digits and `_`, not \
                     starting with a digit)"
                )));
            }
            if default.is_some_and(|d| d.contains("${")) {
                return Err(located(format!(
                    "`${{{name}:-${{…}}}}`: a default cannot name another variable (nested \
                     `${{…}}` is not expanded); write the default's value itself, or set `{name}`"
                )));
            }
            let value = match (lookup(name), default) {
                (Some(v), _) => v,
                (None, Some(d)) => d.to_owned(),
                (None, None) => {
                    return Err(located(format!(
                        "environment variable `{name}` is not set (write `${{{name}:-default}}` for a default)"
                    )))
                }
            };
            if value.contains('\n') {
                return Err(located(format!(
                    "environment variable `{name}` contains a newline"
                )));
            }
            out.push_str(&value);
            values.push((value, format!("${{{inner}}}")));
            column += inner.chars().count() as u64 + 3;
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out.push_str(comment);
    }
    Ok((out, values))
}

/// `error`, found in the expanded text of `original`, shown without the values `${…}` put in (a
/// secret key, a token): its snippet's numbered lines are the file's own lines as written, and
/// every value still in its message (and those of [`LoadError::more`]) reads as the `${…}` it came
/// from. The caret keeps the expanded line's column.
pub(crate) fn mask_values(
    mut error: LoadError,
    original: &str,
    values: &[(String, String)],
) -> LoadError {
    let lines: Vec<&str> = original.lines().collect();
    let mask = |text: &str| {
        values
            .iter()
            .filter(|(value, _)| !value.is_empty())
            .fold(text.to_owned(), |t, (value, reference)| {
                t.replace(value.as_str(), reference)
            })
    };
    error.message = mask(&error.message);
    error.snippet = error.snippet.map(|snippet| {
        let shown: Vec<String> = snippet
            .lines()
            .map(|line| as_written(line, &lines).unwrap_or_else(|| mask(line)))
            .collect();
        shown.join("\n")
    });
    error.more = error
        .more
        .into_iter()
        .map(|e| mask_values(e, original, values))
        .collect();
    error
}

/// A snippet line `  NN | text` with the file's line NN as written in place of `text` (cut where
/// the shown text was cut, at `…`); `None` for a line that is no numbered source line.
fn as_written(line: &str, source: &[&str]) -> Option<String> {
    let (number, shown) = line.split_once(" | ")?;
    let n: usize = number.trim().parse().ok()?;
    let written = source.get(n.checked_sub(1)?)?;
    let text: String = match shown.strip_suffix('…') {
        Some(cut) => {
            let mut kept: String = written.chars().take(cut.chars().count()).collect();
            kept.push('…');
            kept
        }
        None => (*written).to_owned(),
    };
    Some(format!("{number} | {text}"))
}

/// Where a YAML comment starts on `line`: a `#` at the start or after white space, outside quotes
/// (YAML 1.2 §6.6; `http://x/#y` and `"a # b"` are not comments).
fn comment_start(line: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '#') if previous.is_whitespace() => return Some(i),
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
        previous = c;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_and_locates_missing() {
        let lookup = |n: &str| (n == "A").then(|| "x".to_owned());
        assert_eq!(
            expand_env("p", "a: ${A}/${B:-d}\n", &lookup).unwrap(),
            "a: x/d\n"
        );
        let err = expand_env("p", "a: 1\nb: ${NOPE}\n", &lookup).unwrap_err();
        assert_eq!((err.line, err.column), (2, 4));
        assert!(err.message.contains("`NOPE` is not set"));
    }

    #[test]
    fn a_nested_default_is_refused_by_name() {
        let lookup = |n: &str| (n == "B").then(|| "x".to_owned());
        let err = expand_env("p", "a: 1\nurl: ${A:-${B}}/v1\n", &lookup).unwrap_err();
        assert_eq!((err.line, err.column), (2, 6));
        assert!(
            err.message
                .contains("`${A:-${…}}`: a default cannot name another variable"),
            "{err}"
        );
    }

    #[test]
    fn a_name_that_is_no_variable_name_is_refused_as_such() {
        let lookup = |_: &str| None;
        for text in ["a: ${1A}\n", "a: ${A B}\n", "a: ${}\n"] {
            let err = expand_env("p", text, &lookup).unwrap_err();
            assert!(
                err.message.contains("is not a variable name"),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn comments_are_not_expanded() {
        let lookup = |n: &str| (n == "A").then(|| "x".to_owned());
        let text = "# url: ${UNSET}\na: ${A} # or ${UNSET}\nb: \"# ${A}\"\nc: http://h/#${A}\n";
        assert_eq!(
            expand_env("p", text, &lookup).unwrap(),
            "# url: ${UNSET}\na: x # or ${UNSET}\nb: \"# x\"\nc: http://h/#x\n"
        );
    }
}
