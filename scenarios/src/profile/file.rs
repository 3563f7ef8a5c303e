//! Loading a profile file, of either kind (a target profile, a client profile): `${VAR}` expanded,
//! the YAML parsed, the cross-field rules asked — one road for both.

use serde::de::DeserializeOwned;

use super::env::{expand_recording, mask_values};
use crate::load::{from_yaml, LoadError};

/// Expands `${VAR}` in `text` (the contents of `file`) with `env`, parses it as `P` and asks
/// `validate` (`P`'s cross-field rules) of it. A parse error shows the file as written, never a
/// value a `${VAR}` put in (a secret).
///
/// # Errors
/// A [`LoadError`] with file, line and column for an unset variable, a syntax error, an unknown
/// field or a value of the wrong type, or the first rule `validate` finds broken with every other
/// one in [`LoadError::more`].
pub(crate) fn load_profile<P: DeserializeOwned>(
    file: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    validate: fn(&P, &str) -> Result<(), LoadError>,
) -> Result<P, LoadError> {
    let (expanded, values) = expand_recording(file, text, env)?;
    // A parse error quotes the text it read: the file as written, never a value put in.
    let profile: P = from_yaml(file, &expanded).map_err(|e| mask_values(e, text, &values))?;
    validate(&profile, file)?;
    Ok(profile)
}
