//! A body condition (`{at: $.error.type, is: idempotency_error}`): what an answer's JSON body says
//! besides its status, as a refusal's, a replay's or a settled long-running operation's.

use serde::{Deserialize, Serialize};

/// What a refusal's body says besides its status: the JSON value at `at` is one of `is` (a string
/// is compared as it is, a number or a boolean as written in JSON). A body that is not JSON, or
/// has nothing at `at`, does not say it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BodyCondition {
    /// Where in the body (a JSONPath, RFC 9535), e.g. `$.error.type` or `$.type`.
    pub at: crate::value::JsonPathExpr,
    /// The value (or any of the values) it must have there.
    #[serde(deserialize_with = "one_or_many")]
    pub is: Vec<String>,
}

impl BodyCondition {
    /// Whether `body` (parsed JSON, if it parsed) says it.
    pub fn holds(&self, body: Option<&serde_json::Value>) -> bool {
        let Some(found) = body.and_then(|b| self.at.first(b)) else {
            return false;
        };
        let found = match found {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.is.contains(&found)
    }

    /// `$.error.type is idempotency_error` (for sentences).
    pub fn describe(&self) -> String {
        format!("{} is {}", self.at.source(), self.is.join(" or "))
    }
}

/// One value or a non-empty list of them, as strings.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let text = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(_) | serde_json::Value::Bool(_) => Ok(v.to_string()),
        _ => Err(serde::de::Error::custom(
            "`is` takes a string, a number or a boolean, or a list of them",
        )),
    };
    let values = match serde_json::Value::deserialize(d)? {
        serde_json::Value::Array(list) if list.is_empty() => {
            return Err(serde::de::Error::custom("`is` needs at least one value"))
        }
        serde_json::Value::Array(list) => list,
        one => vec![one],
    };
    values.into_iter().map(text).collect()
}
