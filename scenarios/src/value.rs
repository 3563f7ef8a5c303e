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
    /// The longest path accepted, in bytes: a profile's paths select an id, a list's items or a
    /// counter, and are a few dozen bytes.
    pub const MAX_LEN: usize = 1024;

    /// The deepest nesting of brackets and parentheses accepted. The compiler (serde_json_path)
    /// descends recursively, and a few thousand open parentheses overflow a thread's stack.
    pub const MAX_DEPTH: usize = 32;

    /// Compiles `source`.
    ///
    /// # Errors
    /// A message naming the path and the parser's complaint; or the limit it passes
    /// ([`Self::MAX_LEN`], [`Self::MAX_DEPTH`]).
    pub fn parse(source: &str) -> Result<Self, String> {
        if source.len() > Self::MAX_LEN {
            return Err(format!(
                "JSONPath of {} bytes is longer than the limit of {} bytes",
                source.len(),
                Self::MAX_LEN
            ));
        }
        if nesting(source) > Self::MAX_DEPTH {
            return Err(format!(
                "invalid JSONPath `{source}`: brackets and parentheses nested deeper than {}",
                Self::MAX_DEPTH
            ));
        }
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

    /// For a path that selects every member of one node (`$.items[*]`, `$['data'].*`), that node's
    /// path (`$.items`, `$['data']`); `None` for any other path, and where the node's path is not a
    /// singular query (RFC 9535 §2.3.5.1: names and indexes only, no `..`, wildcard, filter,
    /// slice or union), since such a path may rightly select nothing. A list whose items path
    /// selects nothing is empty only if this node is there: otherwise the path misses the response.
    pub fn container(&self) -> Option<JsonPathExpr> {
        let node = self
            .source
            .strip_suffix("[*]")
            .or_else(|| self.source.strip_suffix(".*"))?;
        singular(node).then(|| Self::parse(node).ok())?
    }
}

/// Whether `source` reads as a singular query: outside string literals, no `..`, `*`, `?`, `:`
/// (slice), `,` (union) or `(`.
fn singular(source: &str) -> bool {
    let mut previous = ' ';
    unquoted(source).all(|c| {
        let ok = !(matches!(c, '*' | '?' | ':' | ',' | '(') || c == '.' && previous == '.');
        previous = c;
        ok
    })
}

/// The deepest nesting of `[` and `(` in `source`, outside string literals.
fn nesting(source: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for c in unquoted(source) {
        match c {
            '[' | '(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ']' | ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The characters of `source` outside string literals (RFC 9535 §2.3.1.1: in `'…'` or `"…"`, with
/// `\\` escapes), the quotes left out.
fn unquoted(source: &str) -> impl Iterator<Item = char> + '_ {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    source.chars().filter(move |&c| match (quote, c) {
        (Some(_), _) if escaped => {
            escaped = false;
            false
        }
        (Some(_), '\\') => {
            escaped = true;
            false
        }
        (Some(q), c) if c == q => {
            quote = None;
            false
        }
        (Some(_), _) => false,
        (None, '\'' | '"') => {
            quote = Some(c);
            false
        }
        (None, _) => true,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_paths_container_is_the_node_it_spreads() {
        let container = |p: &str| {
            JsonPathExpr::parse(p)
                .unwrap()
                .container()
                .map(|c| c.source().to_owned())
        };
        assert_eq!(container("$.items[*]").as_deref(), Some("$.items"));
        assert_eq!(
            container("$.data.machines.*").as_deref(),
            Some("$.data.machines")
        );
        assert_eq!(container("$[*]").as_deref(), Some("$"));
        assert_eq!(container("$.items[0]"), None);
        assert_eq!(container("$..id"), None);
        assert_eq!(container("$['items'][*]").as_deref(), Some("$['items']"));
        assert_eq!(container("$['a.b'][*]").as_deref(), Some("$['a.b']"));
        assert_eq!(container("$['a*'][0][*]").as_deref(), Some("$['a*'][0]"));
        // Not one node: each may rightly select nothing.
        for p in [
            "$..items[*]",
            "$.pages[*].items[*]",
            "$.data[*][*]",
            "$[?@.a].items[*]",
            "$.a[0:2][*]",
            "$['a','b'][*]",
        ] {
            assert_eq!(container(p), None, "{p}");
        }
        let body = serde_json::json!({"items": [], "next": null});
        let items = JsonPathExpr::parse("$.items[*]").unwrap();
        assert!(items.select(&body).is_empty());
        assert_eq!(items.container().unwrap().select(&body).len(), 1);
        let data = JsonPathExpr::parse("$.data[*]").unwrap();
        assert!(data.container().unwrap().select(&body).is_empty());
    }

    #[test]
    fn deep_or_long_jsonpaths_are_refused_not_a_stack_overflow() {
        let deep = |n: usize| format!("$[?{}@.a{}]", "(".repeat(n), ")".repeat(n));
        let err = JsonPathExpr::parse(&deep(300)).unwrap_err();
        assert!(err.contains("nested deeper than 32"), "{err}");
        assert!(JsonPathExpr::parse(&deep(30)).is_ok());
        assert!(JsonPathExpr::parse("$['((((((((((((((((((((((((((((((((((((']").is_ok());
        let err = JsonPathExpr::parse(&format!("${}", ".a".repeat(600))).unwrap_err();
        assert!(err.contains("longer than the limit of 1024 bytes"), "{err}");
    }
}
