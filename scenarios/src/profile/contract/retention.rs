//! How long a completed key's record is kept (`contract.retention`): a window, or as long as the
//! resource its request created exists.

use serde::{Deserialize, Serialize};

use crate::value::HumanDuration;

/// How long a completed key's record is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// For this long after its request completed (`retention: 24h`).
    For(std::time::Duration),
    /// As long as the resource its request created exists (`retention: while_resource_exists`):
    /// a create with the key after that resource was deleted runs anew, as an API documents that
    /// dedups a client token only while its resource exists.
    WhileResourceExists,
}

impl Retention {
    /// The word a profile writes for [`Retention::WhileResourceExists`].
    pub const WHILE_RESOURCE_EXISTS: &'static str = "while_resource_exists";
}

impl Serialize for Retention {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Retention::For(d) => HumanDuration(*d).serialize(serializer),
            Retention::WhileResourceExists => serializer.serialize_str(Self::WHILE_RESOURCE_EXISTS),
        }
    }
}

impl<'de> Deserialize<'de> for Retention {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::IntoDeserializer as _;
        let text = String::deserialize(deserializer)?;
        if text.trim() == Self::WHILE_RESOURCE_EXISTS {
            return Ok(Retention::WhileResourceExists);
        }
        let duration: Result<HumanDuration, D::Error> =
            HumanDuration::deserialize(text.as_str().into_deserializer());
        duration.map(|d| Retention::For(d.0)).map_err(|e| {
            serde::de::Error::custom(format!(
                "{e}, or `{}` (a key lives as long as its resource)",
                Self::WHILE_RESOURCE_EXISTS
            ))
        })
    }
}

/// Which contracts an assertion applies under, by their retention (an assertion's
/// `if_retention`): a check whose rule depends on whether a key outlives its resource judges by
/// the assertions of the contract's case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetentionCase {
    /// The contract says `retention: while_resource_exists`.
    WhileResourceExists,
    /// Any other retention (a window, or none declared): a key outlives its resource.
    OutlivesResource,
}

impl RetentionCase {
    /// Whether a contract with `retention` is of this case.
    pub fn holds(self, retention: Option<Retention>) -> bool {
        let dies = retention == Some(Retention::WhileResourceExists);
        match self {
            RetentionCase::WhileResourceExists => dies,
            RetentionCase::OutlivesResource => !dies,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_is_a_duration_or_while_the_resource_exists() {
        let read = |t: &str| serde_json::from_str::<Retention>(t);
        assert_eq!(
            read("\"24h\"").unwrap(),
            Retention::For(std::time::Duration::from_secs(86_400))
        );
        assert_eq!(
            read("\"while_resource_exists\"").unwrap(),
            Retention::WhileResourceExists
        );
        let err = read("\"forever\"").expect_err("neither");
        assert!(
            err.to_string().contains("or `while_resource_exists`"),
            "{err}"
        );
        assert!(RetentionCase::OutlivesResource.holds(None));
        assert!(!RetentionCase::OutlivesResource.holds(Some(Retention::WhileResourceExists)));
    }
}
