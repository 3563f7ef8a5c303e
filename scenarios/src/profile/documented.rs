//! `documented:`, the deviations from the article an API's own documentation states. Each names
//! the check it shows in, what the documentation says and where, and optionally the statuses
//! that mark it, so a report shows that check's FAIL or WARN "as documented": still a deviation
//! at its level, never hidden, never called a defect nobody knew of (docs/profile-reference.md,
//! `documented`).

use serde::{Deserialize, Serialize};

use super::contract::any_statuses;
use crate::load::{LoadError, LoadErrors, Spanned};

/// The longest `says` a deviation may carry, in characters: a sentence or two, shown beside the
/// verdict in every report.
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
    /// Where it says so: a URL, or a document and its section (optional).
    #[serde(default)]
    pub source: Option<String>,
    /// The statuses the documented behaviour answers with: one code (`400`) or a list (`[400,
    /// 409]`). With it, a FAIL or WARN of the check is the documented deviation only when one of
    /// the check's exchanges got one of them; without it, any FAIL or WARN of the check is.
    #[serde(default, deserialize_with = "any_statuses")]
    pub answer: Option<Vec<u16>>,
}

impl Deviation {
    /// `says`, then `(source)` when there is one: how every report quotes the documentation.
    pub fn quoted(&self) -> String {
        match &self.source {
            Some(source) => format!("{} ({source})", self.says.value.trim()),
            None => self.says.value.trim().to_owned(),
        }
    }
}

/// The rules `documented` keeps on its own: `says` not empty and at most [`MAX_SAYS`]
/// characters, each check named once.
pub(crate) fn check(deviations: &[Deviation], errors: &mut LoadErrors) {
    for (i, d) in deviations.iter().enumerate() {
        let says = d.says.value.trim();
        if says.is_empty() {
            errors.at(
                &d.says.referenced,
                "documented: `says` is empty; quote what the API's documentation says, in a \
                 sentence",
            );
        } else if says.chars().count() > MAX_SAYS {
            errors.at(
                &d.says.referenced,
                format!(
                    "documented: `says` is {} characters; at most {MAX_SAYS} (a sentence or two, \
                     and `source` for where the rest is)",
                    says.chars().count()
                ),
            );
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
