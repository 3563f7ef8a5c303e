//! Small value types read from YAML: durations with units and compiled JSONPaths.

use serde::{Deserialize, Deserializer, Serialize};

/// A duration written with units (`250ms`, `3s`, `1h`), parsed with humantime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HumanDuration(pub std::time::Duration);

impl HumanDuration {
    /// The longest duration any file may give: 30 days (a retention window of a month; anything
    /// longer is a typo, and a run must end).
    pub const MAX: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let d = humantime::parse_duration(text.trim()).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid duration `{text}` ({e}); expected e.g. `250ms`, `3s`"
            ))
        })?;
        if d > Self::MAX {
            return Err(serde::de::Error::custom(format!(
                "duration `{text}` is longer than the limit of 30 days"
            )));
        }
        Ok(HumanDuration(d))
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

/// A JSONPath (RFC 9535) compiled when the file is loaded, so a bad path is a located error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPathExpr {
    source: String,
    path: serde_json_path::JsonPath,
}

impl JsonPathExpr {
    /// Compiles `source`.
    ///
    /// # Errors
    /// A message naming the path and the parser's complaint.
    pub fn parse(source: &str) -> Result<Self, String> {
        serde_json_path::JsonPath::parse(source)
            .map(|path| Self {
                source: source.to_owned(),
                path,
            })
            .map_err(|e| format!("invalid JSONPath `{source}`: {e}"))
    }

    /// The path as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// All nodes the path selects in `value`.
    pub fn select<'v>(&self, value: &'v serde_json::Value) -> Vec<&'v serde_json::Value> {
        self.path.query(value).all()
    }

    /// The first node the path selects, if any.
    pub fn first<'v>(&self, value: &'v serde_json::Value) -> Option<&'v serde_json::Value> {
        self.path.query(value).first()
    }
}

impl<'de> Deserialize<'de> for JsonPathExpr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        JsonPathExpr::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Serialize for JsonPathExpr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}
