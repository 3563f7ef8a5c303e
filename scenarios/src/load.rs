//! The located YAML loader: text in, a typed value or a [`LoadError`] that names file, line and column.

use serde::de::DeserializeOwned;

/// A configuration error located in a source file.
///
/// Displayed as `FILE:LINE:COLUMN: MESSAGE`, followed by a snippet of the offending lines when one is
/// known. Lines and columns are 1-based. A file name of `<embedded:ID>` names a built-in catalogue entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{file}:{line}:{column}: {message}{}{}",
    snippet.as_deref().map(|s| format!("\n{s}")).unwrap_or_default(),
    more.iter().map(|e| format!("\n{e}")).collect::<String>()
)]
pub struct LoadError {
    /// The file the text came from, as the user named it.
    pub file: String,
    /// 1-based line; 0 when the position is unknown.
    pub line: u64,
    /// 1-based column; 0 when the position is unknown.
    pub column: u64,
    /// What was wrong and, where the parser knows it, what was expected.
    pub message: String,
    /// The source lines around the position, with a caret, when available.
    pub snippet: Option<String>,
    /// Further errors the loader found in the same file (a validation pass reports every rule
    /// broken, not only the first); each displayed on its own line after this one.
    pub more: Vec<LoadError>,
}

impl LoadError {
    /// An error found by a `validate()` pass at a position the parser recorded with [`Spanned`].
    pub fn at(file: &str, location: &Location, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            line: location.line(),
            column: location.column(),
            message: message.into(),
            snippet: None,
            more: Vec::new(),
        }
    }

    /// `Ok` when `errors` is empty; otherwise the first error, carrying the rest in
    /// [`LoadError::more`].
    ///
    /// # Errors
    /// The first of `errors`.
    pub fn all(errors: Vec<LoadError>) -> Result<(), LoadError> {
        let mut errors = errors.into_iter();
        match errors.next() {
            None => Ok(()),
            Some(mut first) => {
                first.more.extend(errors);
                Err(first)
            }
        }
    }

    /// This error and every one in [`LoadError::more`], in file order.
    pub fn each(&self) -> impl Iterator<Item = &LoadError> {
        std::iter::once(self).chain(self.more.iter())
    }
}

/// The errors a `validate()` pass finds in one file, gathered in the order the rules are asked
/// (each type's rules beside the type, as [`crate::scenario::Step`]'s are), then returned as one
/// [`LoadError`] carrying the rest in [`LoadError::more`].
pub(crate) struct LoadErrors<'f> {
    /// The file the rules read, as the user named it.
    file: &'f str,
    /// What was found, in order.
    found: Vec<LoadError>,
}

impl<'f> LoadErrors<'f> {
    /// None found yet in `file`.
    pub(crate) fn new(file: &'f str) -> Self {
        Self {
            file,
            found: Vec::new(),
        }
    }

    /// A rule broken at `location`, said by `message`.
    pub(crate) fn at(&mut self, location: &Location, message: impl Into<String>) {
        self.found.push(LoadError::at(self.file, location, message));
    }

    /// `Ok` when nothing was found; otherwise the first error with the rest in
    /// [`LoadError::more`] ([`LoadError::all`]).
    pub(crate) fn finish(self) -> Result<(), LoadError> {
        LoadError::all(self.found)
    }
}

/// The file's `version` is 1, the only schema version there is (a profile's, a scenario's).
pub(crate) fn check_version(version: &Spanned<u32>, errors: &mut LoadErrors) {
    if version.value != 1 {
        errors.at(
            &version.referenced,
            format!("unsupported version {}; expected 1", version.value),
        );
    }
}

/// A profile's `name` is one line of plain text: every report shows it (a terminal's header, a
/// Markdown title, an HTML `<title>`), so a control character — a line break, a terminal escape
/// sequence — is refused at its line instead of reaching them raw.
pub(crate) fn check_name(name: &Spanned<String>, errors: &mut LoadErrors) {
    if let Some(c) = control_character(&name.value) {
        errors.at(
            &name.referenced,
            format!(
                "name holds the control character U+{:04X}; write it on one line, as plain text \
                 (every report shows it)",
                u32::from(c)
            ),
        );
    }
}

/// The first control character in `text` (a line break, the escape of a terminal sequence), if
/// any: text every report shows must be one line of plain text.
pub(crate) fn control_character(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control())
}

/// A value with the position it was read from (re-exported from serde-saphyr), for cross-field
/// validation errors that must still point at a line and column.
pub use serde_saphyr::Spanned;

/// A position in a YAML source (1-based line and column), re-exported from serde-saphyr.
pub use serde_saphyr::Location;

/// Parses `text` (the contents of `file`) as YAML into `T`.
///
/// Unknown fields, wrong types and syntax errors come back as a [`LoadError`] with the parser's
/// line, column and a snippet; the file name replaces the parser's `<input>` placeholder.
pub fn from_yaml<T: DeserializeOwned>(file: &str, text: &str) -> Result<T, LoadError> {
    serde_saphyr::from_str::<T>(text).map_err(|err| {
        let (line, column) = err
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        let rendered = err.to_string();
        // serde-saphyr renders "error: line L column C: MESSAGE\n --> <input>:L:C\n<snippet>".
        let mut lines = rendered.lines();
        let first = lines.next().unwrap_or_default();
        let message = first
            .split_once(": ")
            .and_then(|(_, rest)| rest.split_once(": ").map(|(_, m)| m))
            .unwrap_or(first)
            .to_owned();
        let snippet: Vec<&str> = lines
            .skip_while(|l| l.trim_start().starts_with("-->"))
            .collect();
        let said = in_user_terms(&message);
        LoadError {
            file: file.to_owned(),
            line,
            column,
            snippet: (!snippet.is_empty()).then(|| snippet.join("\n").replace(&message, &said)),
            message: said,
            more: Vec::new(),
        }
    })
}

/// The parser's message in the words of someone writing a profile or scenario: its advice to
/// programmers ("use from_str_multiple") and its budgets ("budget breached: Nodes …") say nothing
/// to them.
fn in_user_terms(message: &str) -> String {
    if message.starts_with("multiple YAML documents detected") {
        "a second YAML document starts here (`---`); a file holds one profile, scenario or proxy \
         file: split it, or remove the `---`"
            .into()
    } else if let Some(budget) = message.strip_prefix("budget breached: ") {
        let what = budget.split_whitespace().next().unwrap_or(budget);
        format!(
            "the file is larger or more deeply nested than any profile or scenario needs (the \
             loader's limit on {} was reached here); check that this is the file you meant",
            what.to_lowercase()
        )
    } else if let Some(rest) = message.strip_prefix("duplicate mapping key") {
        match rest.strip_prefix(": ") {
            Some(rest) => {
                let key = rest
                    .rsplit_once(", set DuplicateKeyPolicy")
                    .map_or(rest, |(k, _)| k);
                format!("`{key}` is given twice in one mapping; keep one")
            }
            None => "a key is given twice in one mapping; keep one".to_owned(),
        }
    } else if let Some(field) = message.strip_prefix("missing field ") {
        format!(
            "missing field {field}: the mapping this line belongs to needs it (the parser noticed \
             at the mapping's last entry)"
        )
    } else {
        message.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        version: u32,
        name: String,
    }

    #[test]
    fn unknown_field_is_located() {
        let err = from_yaml::<Doc>("a.yaml", "version: 1\nname: x\nnmae: y\n").unwrap_err();
        assert_eq!((err.file.as_str(), err.line, err.column), ("a.yaml", 3, 1));
        assert!(
            err.message.contains("unknown field `nmae`"),
            "{}",
            err.message
        );
        assert!(
            err.to_string().starts_with("a.yaml:3:1: unknown field"),
            "{err}"
        );
    }

    #[test]
    fn several_documents_and_huge_files_are_explained_in_the_users_terms() {
        let err = from_yaml::<Doc>("m.yaml", "version: 1\nname: a\n---\nversion: 1\n").unwrap_err();
        assert_eq!(err.line, 4);
        assert!(err.message.contains("a second YAML document"), "{err}");
        assert!(!err.to_string().contains("from_str_multiple"), "{err}");
        let huge = format!("version: 1\nname: [{}]\n", vec!["1"; 300_000].join(","));
        let err = from_yaml::<serde_json::Value>("h.yaml", &huge).unwrap_err();
        assert!(
            err.message.contains("larger or more deeply nested"),
            "{err}"
        );
        assert!(!err.to_string().contains("budget breached"), "{err}");
    }

    #[test]
    fn a_duplicate_or_missing_field_is_said_without_the_parsers_advice() {
        let err = from_yaml::<Doc>("d.yaml", "version: 1\nname: x\nname: y\n").unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert_eq!(
            err.message,
            "`name` is given twice in one mapping; keep one"
        );
        assert!(!err.to_string().contains("DuplicateKeyPolicy"), "{err}");
        let err = from_yaml::<Doc>("d.yaml", "version: 1\n").unwrap_err();
        assert!(
            err.message
                .starts_with("missing field `name`: the mapping this line belongs to"),
            "{err}"
        );
    }

    #[test]
    fn wrong_type_is_located() {
        let err = from_yaml::<Doc>("b.yaml", "version: one\nname: x\n").unwrap_err();
        assert_eq!((err.line, err.column), (1, 10));
    }
}
