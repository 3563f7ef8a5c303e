//! `documented:`, the deviations from the article an API's own documentation states. Each names
//! the check it shows in, what the documentation says and where, and optionally the statuses
//! that mark it, so a report shows that check's FAIL or WARN "as documented": still a deviation
//! at its level, never hidden, never called a defect nobody knew of (docs/profile-reference.md,
//! `documented`).

use serde::{Deserialize, Serialize};

use super::contract::deviation_statuses;
use crate::load::{control_character, LoadError, LoadErrors, Spanned};

/// The longest `says` (and `source`) a deviation may carry, in characters: a sentence or two, and
/// a URL, shown beside the verdict in every report.
pub const MAX_SAYS: usize = 500;

/// One deviation the API's documentation states (`documented[]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Deviation {
    /// The check whose FAIL or WARN the documentation explains, by id (`endpoint-scope`;
    /// `idemspec list` shows every id). One entry per check.
    pub check: Spanned<String>,
    /// What the documentation says, in a sentence or two (at most [`MAX_SAYS`] characters):
    /// `"A key reused on another endpoint is refused with 400."`.
    pub says: Spanned<String>,
    /// Where it says so: a URL, or a document and its section (optional; at most [`MAX_SAYS`]
    /// characters).
    #[serde(default)]
    pub source: Option<Spanned<String>>,
    /// The statuses the documented behaviour answers with: one code (`400`) or a list (`[400,
    /// 409]`), each a 3xx, 4xx or 5xx (every check's first requests get a 2xx, so a 2xx would
    /// mark any failure). With it, a FAIL or WARN of the check is the documented deviation only
    /// when one of the check's exchanges got one of them; without it, any FAIL or WARN of the
    /// check is.
    #[serde(default, deserialize_with = "deviation_statuses")]
    pub answer: Option<Vec<u16>>,
}

impl Deviation {
    /// `"SAYS"`, then ` (SOURCE)` when there is one: how every report quotes the documentation.
    pub fn quoted(&self) -> String {
        let says = format!("\"{}\"", self.says.value.trim());
        match self.source() {
            Some(source) => format!("{says} ({source})"),
            None => says,
        }
    }

    /// `source`, trimmed, when there is one.
    pub fn source(&self) -> Option<&str> {
        self.source.as_ref().map(|s| s.value.trim())
    }
}

/// What is wrong with `text` as a field of a report's sentence, if anything: empty, longer than
/// [`MAX_SAYS`] characters, or holding a control character (a line break, a terminal escape
/// sequence), which would break every report's layout or reach a terminal raw.
fn unprintable(field: &str, text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return Some(format!(
            "documented: `{field}` is empty; {}",
            if field == "says" {
                "quote what the API's documentation says, in a sentence"
            } else {
                "leave it out, or say where the documentation says it"
            }
        ));
    }
    let n = text.chars().count();
    if n > MAX_SAYS {
        return Some(format!(
            "documented: `{field}` is {n} characters; at most {MAX_SAYS} (a sentence or two, and a \
             URL in `source` for where the rest is)"
        ));
    }
    control_character(text).map(|c| {
        format!(
            "documented: `{field}` holds the control character U+{:04X}; write it on one line, \
             as plain text (every report quotes it beside the verdict)",
            u32::from(c)
        )
    })
}

/// The rules `documented` keeps on its own: `says` and `source` not empty, at most
/// [`MAX_SAYS`] characters and on one line of plain text; each check named once.
pub(crate) fn check(deviations: &[Deviation], errors: &mut LoadErrors) {
    for (i, d) in deviations.iter().enumerate() {
        if let Some(m) = unprintable("says", &d.says.value) {
            errors.at(&d.says.referenced, m);
        }
        if let Some(source) = &d.source {
            if let Some(m) = unprintable("source", &source.value) {
                errors.at(&source.referenced, m);
            }
        }
        if deviations[..i]
            .iter()
            .any(|e| e.check.value == d.check.value)
        {
            errors.at(
                &d.check.referenced,
                format!(
                    "documented: `{}` is named twice; give one entry per check",
                    d.check.value
                ),
            );
        }
    }
}

/// Each deviation names a check among `known` (the catalogue's ids and the run's own scenarios'),
/// so a misspelt id is an error at its line, not a deviation that never applies.
///
/// # Errors
/// A [`LoadError`] at the first unknown `check`, naming the ids there are; every other one in
/// [`LoadError::more`].
pub fn check_known(deviations: &[Deviation], file: &str, known: &[&str]) -> Result<(), LoadError> {
    let mut errors = LoadErrors::new(file);
    for d in deviations {
        if !known.contains(&d.check.value.as_str()) {
            errors.at(
                &d.check.referenced,
                format!(
                    "documented: no check is named `{}`; expected one of: {}",
                    d.check.value,
                    known.join(", ")
                ),
            );
        }
    }
    errors.finish()
}
