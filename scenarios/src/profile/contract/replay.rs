//! How a contract recognises a replay of a completed success: what a replay's body says
//! (`replay_body`: a value at a place, or the original answer's body itself), and the reason an
//! answer was read as a replay ([`ReplayBy`]).

use serde::{Deserialize, Serialize};

use super::BodyCondition;

/// What the body of a replay under a `replay_status` code says (`contract.replay_body`).
#[derive(Debug, Clone, PartialEq)]
pub enum ReplayBody {
    /// It is the original answer's body, byte for byte (`replay_body: original`): a layer that
    /// answers a completed key `409` with the stored body and no marker.
    Original,
    /// The value at a place in it (`replay_body: {at: $.cached, is: true}`).
    Says(BodyCondition),
}

impl ReplayBody {
    /// The condition of [`ReplayBody::Says`], if that is the form.
    pub fn condition(&self) -> Option<&BodyCondition> {
        match self {
            ReplayBody::Says(c) => Some(c),
            ReplayBody::Original => None,
        }
    }

    /// `the original answer's body` or `$.cached is true` (for sentences).
    pub fn describe(&self) -> String {
        match self {
            ReplayBody::Original => "the original answer's body".into(),
            ReplayBody::Says(c) => c.describe(),
        }
    }
}

impl Serialize for ReplayBody {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ReplayBody::Original => serializer.serialize_str("original"),
            ReplayBody::Says(c) => c.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ReplayBody {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = ReplayBody;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "`original` (a replay's body is the original answer's) or what it says, \
                     `{at: $.cached, is: true}`",
                )
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ReplayBody, E> {
                match v {
                    "original" => Ok(ReplayBody::Original),
                    other => Err(E::custom(format!(
                        "replay_body `{other}` is neither `original` (a replay's body is the \
                         original answer's) nor what it says (`{{at: $.cached, is: true}}`)"
                    ))),
                }
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ReplayBody, A::Error> {
                BodyCondition::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ReplayBody::Says)
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// Why an answer is a replay of a completed success under the contract: the reason its reading
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayBy {
    /// It carries the replay marker header (`replayed_header`).
    Marker,
    /// Its status is a `replay_status` code no refusal shares.
    DeclaredStatus,
    /// Its body says what `replay_body: {at, is}` says a replay's does.
    DeclaredBody,
    /// Its body is the original answer's, byte for byte (`replay_body: original`).
    OriginalBody,
    /// It names the original's resource at `replay_id_at`.
    OriginalId,
}

impl ReplayBy {
    /// How a sentence says it (`the replay marker`, `the original's id at replay_id_at`).
    pub fn describe(self) -> &'static str {
        match self {
            ReplayBy::Marker => "its replay marker header",
            ReplayBy::DeclaredStatus => "its declared replay_status",
            ReplayBy::DeclaredBody => "what its body says, as replay_body declares",
            ReplayBy::OriginalBody => "the original's body, as `replay_body: original` declares",
            ReplayBy::OriginalId => "the original's id, where `replay_id_at` declares",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_body_is_original_or_a_condition() {
        let original: ReplayBody = serde_json::from_str("\"original\"").expect("original");
        assert_eq!(original, ReplayBody::Original);
        let says: ReplayBody =
            serde_json::from_str(r#"{"at": "$.cached", "is": true}"#).expect("a condition");
        assert_eq!(says.describe(), "$.cached is true");
        let err = serde_json::from_str::<ReplayBody>("\"stored\"").expect_err("unknown word");
        assert!(err.to_string().contains("neither `original`"), "{err}");
        assert_eq!(serde_json::to_string(&original).unwrap(), "\"original\"");
    }
}
