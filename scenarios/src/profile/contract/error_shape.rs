//! What a refusal's body is promised to look like (`contract.error_shape`): an RFC 9457 problem
//! document, a vendor's error object known by a member at a place, or nothing. key-validation
//! judges its SHOULD of an error body by it, and a client tells two refusals apart by the value
//! it names.

use serde::{Deserialize, Serialize};

use crate::value::JsonPathExpr;

/// The body the contract promises a refusal (a 4xx it answers) carries.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorShape {
    /// An RFC 9457 problem document (`error_shape: problem`): typed `application/problem+json`,
    /// or a JSON object with a string `type` member (the article; draft-ietf-httpapi-idempotency-
    /// key-header-07 §2.7, whose error scenarios describe the problem with one).
    Problem,
    /// A JSON (or XML, read through the XML mapping) body with a member at any of these places
    /// (`error_shape: {at: $.error.type}`, or a list): a vendor's own error object.
    At(Vec<JsonPathExpr>),
    /// Nothing is promised of a refusal's body (`error_shape: none`).
    Unpromised,
}

impl ErrorShape {
    /// The word a profile writes for [`ErrorShape::Problem`].
    pub const PROBLEM: &'static str = "problem";
    /// The word a profile writes for [`ErrorShape::Unpromised`].
    pub const NONE: &'static str = "none";

    /// A shape of a vendor's error object at one place (`$.error.type`), for the presets.
    pub(super) fn at(paths: &[&str]) -> ErrorShape {
        ErrorShape::At(
            paths
                .iter()
                .map(|p| JsonPathExpr::parse(p).expect("a JSONPath written here parses"))
                .collect(),
        )
    }

    /// Whether an answer typed `content_type` with `body` (its JSON, if it parsed) has the shape:
    /// a problem document, or a body with a member (not `null`) at one of the places. Everything
    /// has [`ErrorShape::Unpromised`].
    pub fn holds(&self, content_type: Option<&str>, body: Option<&serde_json::Value>) -> bool {
        match self {
            ErrorShape::Problem => {
                content_type.is_some_and(is_problem_media_type) || problem_type(body).is_some()
            }
            ErrorShape::At(_) => self.names(body).is_some(),
            ErrorShape::Unpromised => true,
        }
    }

    /// What the body says the refusal is, by the shape: a problem document's `type`, or the
    /// value at the first of the places that holds one (a string as it is, anything else as JSON
    /// writes it); `None` where the body says nothing there, or the shape names no place. Two
    /// refusals a client must tell apart may differ here.
    pub fn names(&self, body: Option<&serde_json::Value>) -> Option<String> {
        match self {
            ErrorShape::Problem => problem_type(body).map(str::to_owned),
            ErrorShape::At(paths) => {
                paths
                    .iter()
                    .find_map(|p| match body.and_then(|b| p.first(b))? {
                        serde_json::Value::Null => None,
                        serde_json::Value::String(s) => Some(s.clone()),
                        other => Some(other.to_string()),
                    })
            }
            ErrorShape::Unpromised => None,
        }
    }

    /// What [`ErrorShape::names`] reads, for a sentence: `problem type`, `value at $.__type`;
    /// `None` for a shape that names nothing.
    pub fn naming(&self) -> Option<String> {
        match self {
            ErrorShape::Problem => Some("problem type".into()),
            ErrorShape::At(paths) => Some(format!("value at {}", sources(paths))),
            ErrorShape::Unpromised => None,
        }
    }

    /// The shape as a sentence says it: `an RFC 9457 problem body (application/problem+json, or
    /// a \`type\` member)`, `an error body with a member at $.error.type`.
    pub fn describe(&self) -> String {
        match self {
            ErrorShape::Problem => {
                "an RFC 9457 problem body (application/problem+json, or a `type` member)".into()
            }
            ErrorShape::At(paths) => format!("an error body with a member at {}", sources(paths)),
            ErrorShape::Unpromised => "no particular error body".into(),
        }
    }

    /// The shape as a profile writes it (`problem`, `{at: $.error.type}`), for a sentence that
    /// names the profile's override.
    pub fn as_yaml(&self) -> String {
        match self {
            ErrorShape::Problem => Self::PROBLEM.into(),
            ErrorShape::At(paths) if paths.len() == 1 => format!("{{at: {}}}", paths[0].source()),
            ErrorShape::At(paths) => format!(
                "{{at: [{}]}}",
                paths
                    .iter()
                    .map(JsonPathExpr::source)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ErrorShape::Unpromised => Self::NONE.into(),
        }
    }
}

/// `$.a or $.b`.
fn sources(paths: &[JsonPathExpr]) -> String {
    paths
        .iter()
        .map(JsonPathExpr::source)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// `application/problem+json`, whatever its parameters and case (RFC 9457 §3).
fn is_problem_media_type(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/problem+json"))
}

/// A problem document's `type` member (RFC 9457 §3.1.1), where the body is an object with one
/// that is a string.
fn problem_type(body: Option<&serde_json::Value>) -> Option<&str> {
    body?.get("type")?.as_str()
}

impl Serialize for ErrorShape {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        match self {
            ErrorShape::Problem => serializer.serialize_str(Self::PROBLEM),
            ErrorShape::Unpromised => serializer.serialize_str(Self::NONE),
            ErrorShape::At(paths) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("at", paths)?;
                map.end()
            }
        }
    }
}

/// `{at: PATH}` or `{at: [PATH, …]}` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AtWritten {
    #[serde(deserialize_with = "one_path_or_many")]
    at: Vec<JsonPathExpr>,
}

/// One JSONPath or a non-empty list of them.
fn one_path_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<JsonPathExpr>, D::Error> {
    let text = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => JsonPathExpr::parse(&s).map_err(serde::de::Error::custom),
        _ => Err(serde::de::Error::custom(
            "`at` takes a JSONPath (`$.error.type`) or a list of them",
        )),
    };
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Array(list) if list.is_empty() => {
            Err(serde::de::Error::custom("`at` needs at least one JSONPath"))
        }
        serde_json::Value::Array(list) => list.into_iter().map(text).collect(),
        one => Ok(vec![text(one)?]),
    }
}

impl<'de> Deserialize<'de> for ErrorShape {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = ErrorShape;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "`problem` (an RFC 9457 problem body), `none` (nothing promised), or where \
                     the vendor's error object has a member, `{at: $.error.type}`",
                )
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ErrorShape, E> {
                match v {
                    ErrorShape::PROBLEM => Ok(ErrorShape::Problem),
                    ErrorShape::NONE => Ok(ErrorShape::Unpromised),
                    other => Err(E::custom(format!(
                        "error_shape `{other}` is none of `problem` (an RFC 9457 problem body), \
                         `none` (nothing promised) and `{{at: $.error.type}}` (where the \
                         vendor's error object has a member)"
                    ))),
                }
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ErrorShape, A::Error> {
                AtWritten::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|w| ErrorShape::At(w.at))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_shape_is_a_problem_a_member_at_a_place_or_nothing() {
        let read = |t: &str| serde_saphyr::from_str::<ErrorShape>(t);
        assert_eq!(read("problem").unwrap(), ErrorShape::Problem);
        assert_eq!(read("none").unwrap(), ErrorShape::Unpromised);
        let stripe = read("{at: $.error.type}").unwrap();
        assert_eq!(stripe.as_yaml(), "{at: $.error.type}");
        let gcp = read("{at: [$.error.status, $.error.code]}").unwrap();
        assert_eq!(
            gcp.describe(),
            "an error body with a member at $.error.status or $.error.code"
        );
        for bad in ["rfc9457", "{at: []}", "{at: $.a, is: x}", "{at: 'a[['}"] {
            assert!(read(bad).is_err(), "{bad}");
        }
        let err = read("rfc9457").unwrap_err().to_string();
        assert!(err.contains("none of `problem`"), "{err}");
        assert_eq!(
            serde_json::to_value(&gcp).unwrap(),
            json!({"at": ["$.error.status", "$.error.code"]})
        );
    }

    #[test]
    fn a_body_has_the_shape_it_names() {
        let problem = ErrorShape::Problem;
        let typed = json!({"type": "https://x.test/p/bad-key"});
        assert!(problem.holds(None, Some(&typed)));
        assert!(problem.holds(Some("Application/Problem+JSON; charset=utf-8"), None));
        let stripe_body = json!({"error": {"type": "invalid_request_error"}});
        assert!(!problem.holds(Some("application/json"), Some(&stripe_body)));
        let stripe = ErrorShape::at(&["$.error.type"]);
        assert!(stripe.holds(Some("application/json"), Some(&stripe_body)));
        assert!(!stripe.holds(None, Some(&json!({"error": {"type": null}}))));
        assert!(!stripe.holds(None, None));
        assert_eq!(
            stripe.names(Some(&stripe_body)).as_deref(),
            Some("invalid_request_error")
        );
        let gcp = ErrorShape::at(&["$.error.status", "$.error.code"]);
        let legacy = json!({"error": {"code": 400, "message": "bad"}});
        assert_eq!(gcp.names(Some(&legacy)).as_deref(), Some("400"));
        assert!(ErrorShape::Unpromised.holds(None, None));
        assert_eq!(ErrorShape::Unpromised.names(Some(&typed)), None);
    }
}
