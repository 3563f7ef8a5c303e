//! `checks_at_once:`, how many checks the target can take at once: read as YAML writes a whole
//! number, its range checked with the field's location.

use serde::{Deserialize, Serialize};

use crate::load::{LoadErrors, Spanned};

/// The most checks a run drives at once (`--jobs`, `checks_at_once`).
pub const MAX_CHECKS_AT_ONCE: u32 = 64;

/// `checks_at_once`: a whole number as YAML writes one (not a string, a float or a bool), its
/// range checked by [`crate::profile::TargetProfile::validate`] with the field's location. A wrong type gets a
/// message naming the field and its range, not the parser's `invalid u32`. The value is kept as
/// written (saturated at `i64`'s bounds) so the range error can quote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChecksAtOnce(pub i64);

impl ChecksAtOnce {
    /// The value, where it is within 1 to [`MAX_CHECKS_AT_ONCE`].
    pub fn get(self) -> Option<u32> {
        u32::try_from(self.0)
            .ok()
            .filter(|n| (1..=MAX_CHECKS_AT_ONCE).contains(n))
    }

    /// The value is within 1 to [`MAX_CHECKS_AT_ONCE`]; the error quotes it as written.
    pub(crate) fn check(written: &Spanned<ChecksAtOnce>, errors: &mut LoadErrors) {
        if written.value.get().is_some() {
            return;
        }
        let shown = match written.value.0 {
            i64::MAX | i64::MIN => "a number that large".to_owned(),
            v => v.to_string(),
        };
        errors.at(
            &written.referenced,
            format!(
                "checks_at_once: {shown} is out of range; expected 1 to {MAX_CHECKS_AT_ONCE} (1: \
                 one check at a time)"
            ),
        );
    }
}

impl<'de> Deserialize<'de> for ChecksAtOnce {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ChecksAtOnce;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("checks_at_once: a whole number from 1 to 64")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ChecksAtOnce, E> {
                Ok(ChecksAtOnce(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ChecksAtOnce, E> {
                Ok(ChecksAtOnce(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<ChecksAtOnce, E> {
                Ok(ChecksAtOnce(if v < 0 { i64::MIN } else { i64::MAX }))
            }
            fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<ChecksAtOnce, E> {
                Ok(ChecksAtOnce(i64::MAX))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ChecksAtOnce, E> {
                if v.fract() == 0.0 && v.abs() > 1e15 {
                    // A whole number too large for an integer, which YAML reads as a float.
                    return Ok(ChecksAtOnce(if v < 0.0 { i64::MIN } else { i64::MAX }));
                }
                Err(E::custom(format!(
                    "checks_at_once: {v:?} is not a whole number; expected 1 to 64"
                )))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ChecksAtOnce, E> {
                Err(E::custom(format!(
                    "checks_at_once: {v:?} is text; expected a whole number from 1 to 64, unquoted"
                )))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ChecksAtOnce, E> {
                Err(E::custom(format!(
                    "checks_at_once: {v} is not a number; expected a whole number from 1 to 64"
                )))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
