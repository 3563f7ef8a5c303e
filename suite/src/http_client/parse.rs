//! An answer's body read as JSON once, within a bound: what [`Exchange::json`] holds and every
//! check shares (an [`Arc`], so a check reading the exchanges so far copies no parsed value).
//!
//! At most [`MAX_VALUES`] JSON values are read: the parse stops there, keeps what it read, and
//! [`Exchange::parse_note`] says so. A 7 MB answer of 1.8 M small members
//! would otherwise parse into hundreds of megabytes per exchange; the ids and refusals a check
//! reads come first in the answers real APIs send, and a list read in part is not counted. An
//! XML body is read to at most [`MAX_VALUES`] elements, the same way.
//!
//! [`Exchange::json`]: super::Exchange::json
//! [`Exchange::parse_note`]: super::Exchange::parse_note

use std::fmt;
use std::sync::Arc;

use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

use super::xml;

/// The most JSON values (objects, arrays, members' values, items) or XML elements read of one
/// body: a list of 4,000 resources of 25 fields each.
pub const MAX_VALUES: usize = 100_000;

/// The deepest JSON nesting read: 127 levels, under serde_json's recursion limit of 128. A
/// deeper body is not read, and its note says so (it is JSON, only deeper than idemspec reads).
pub const MAX_JSON_DEPTH: usize = 127;

/// Whether `err` is serde_json's recursion limit ([`MAX_JSON_DEPTH`]); serde_json names it in
/// its message only.
pub(crate) fn too_deep(err: &serde_json::Error) -> bool {
    err.to_string().starts_with("recursion limit exceeded")
}

/// A body as JSON (an XML body through [`xml`]'s mapping), and a note when it was read only in
/// part or not at all because it is larger than idemspec reads.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) json: Option<Arc<Value>>,
    pub(super) note: Option<String>,
}

/// Parses `body` (of media type `content_type`) once, as JSON or else as XML, within
/// [`MAX_VALUES`].
pub(super) fn parse(body: &[u8], content_type: Option<&str>) -> Parsed {
    let mut budget = Budget {
        left: MAX_VALUES,
        cut: None,
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    match Bounded(&mut budget).deserialize(&mut de) {
        Ok(json) if de.end().is_ok() => {
            return Parsed {
                json: Some(Arc::new(json)),
                note: None,
            }
        }
        Err(_) if budget.cut.is_some() => {
            return Parsed {
                json: budget.cut.take().map(Arc::new),
                note: Some(format!(
                    "its body was read in part: idemspec reads the first {MAX_VALUES} JSON \
                     values of an answer, and this one has more ({} bytes)",
                    body.len()
                )),
            }
        }
        Err(err) if too_deep(&err) => {
            return Parsed {
                json: None,
                note: Some(format!(
                    "its body was not read: its JSON is nested deeper than {MAX_JSON_DEPTH} \
                     levels, more than idemspec reads (serde_json's recursion limit)"
                )),
            }
        }
        _ => {}
    }
    if !xml::is_xml(content_type, body) {
        return Parsed::default();
    }
    match xml::to_json_within(body, MAX_VALUES) {
        Some((json, cut)) => Parsed {
            json: Some(Arc::new(json)),
            note: cut.then(|| {
                format!(
                    "its body was read in part: idemspec reads the first {MAX_VALUES} XML \
                     elements of an answer, and this one has more ({} bytes)",
                    body.len()
                )
            }),
        },
        None => Parsed::default(),
    }
}

/// How many more values a parse may keep; once it is spent, the value read so far.
struct Budget {
    left: usize,
    /// Set when the budget ran out before the end: the innermost open array or object as read
    /// so far, then, as the parse unwinds, each enclosing one with it as its last item.
    cut: Option<Value>,
}

/// A JSON value read while the [`Budget`] lasts: each array item and member value costs one.
/// When it is spent with more to read, the parse stops at once (an error that unwinds every open
/// array and object, each leaving what it read in [`Budget::cut`]): nothing past the bound is
/// read, not even skipped.
struct Bounded<'b>(&'b mut Budget);

/// The error that stops a parse whose budget is spent.
const SPENT: &str = "idemspec's parse budget is spent";

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            if self.0.left == 0 {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    return Ok(Value::Array(items));
                }
                self.0.cut = Some(Value::Array(items));
                return Err(A::Error::custom(SPENT));
            }
            self.0.left -= 1;
            match seq.next_element_seed(Bounded(self.0)) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return Ok(Value::Array(items)),
                Err(err) => {
                    if let Some(inner) = self.0.cut.take() {
                        items.push(inner);
                        self.0.cut = Some(Value::Array(items));
                    }
                    return Err(err);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        loop {
            if self.0.left == 0 {
                if map.next_key::<IgnoredAny>()?.is_none() {
                    return Ok(Value::Object(members));
                }
                self.0.cut = Some(Value::Object(members));
                return Err(A::Error::custom(SPENT));
            }
            let Some(name) = map.next_key::<String>()? else {
                return Ok(Value::Object(members));
            };
            self.0.left -= 1;
            match map.next_value_seed(Bounded(self.0)) {
                Ok(value) => {
                    members.insert(name, value);
                }
                Err(err) => {
                    if let Some(inner) = self.0.cut.take() {
                        members.insert(name, inner);
                        self.0.cut = Some(Value::Object(members));
                    }
                    return Err(err);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_within_the_bound_is_read_whole_and_one_beyond_it_in_part_with_a_note() {
        let small = parse(br#"{"id": "a,b", "tags": [1, 2]}"#, None);
        assert_eq!(small.json.as_deref().unwrap()["id"], "a,b");
        assert!(small.note.is_none());

        // What a check reads first stays readable; the values past the bound are skipped.
        let wide = format!(
            r#"{{"id": "w-1", "pad": [{}], "after": 1}}"#,
            vec!["1"; MAX_VALUES + 10].join(",")
        );
        let parsed = parse(wide.as_bytes(), Some("application/json"));
        let json = parsed.json.expect("read in part");
        assert_eq!(json["id"], "w-1");
        assert_eq!(json["pad"].as_array().unwrap().len(), MAX_VALUES - 2);
        assert!(json.get("after").is_none());
        let why = parsed.note.expect("a note");
        assert!(
            why.contains(&format!("the first {MAX_VALUES} JSON values")),
            "{why}"
        );
        // Nested: every open container keeps what it read, in order.
        let nested = format!(r#"[{{"a": [[{}]]}}]"#, vec!["2"; MAX_VALUES].join(","));
        let json = parse(nested.as_bytes(), None).json.expect("read in part");
        assert_eq!(json[0]["a"][0].as_array().unwrap().len(), MAX_VALUES - 3);

        // Exactly at the bound: whole, no note.
        let full = format!("[{}]", vec!["0"; MAX_VALUES].join(","));
        let parsed = parse(full.as_bytes(), None);
        assert!(parsed.note.is_none());
        assert_eq!(parsed.json.unwrap().as_array().unwrap().len(), MAX_VALUES);

        let xml_body = format!(
            "<r><id>x-1</id><set>{}</set><after>1</after></r>",
            "<item>1</item>".repeat(MAX_VALUES + 1)
        );
        let parsed = parse(xml_body.as_bytes(), Some("text/xml"));
        let json = parsed.json.expect("read in part");
        assert_eq!(json["r"]["id"], "x-1");
        assert_eq!(
            json["r"]["set"]["item"].as_array().unwrap().len(),
            MAX_VALUES - 3
        );
        assert!(json["r"].get("after").is_none());
        assert!(parsed.note.unwrap().contains("XML elements"));
        let small = parse(b"<r><!-- c --><item>1</item></r>", Some("text/xml"));
        assert!(small.json.is_some() && small.note.is_none());
        assert!(parse(b"not json", None).json.is_none());
    }

    #[test]
    fn json_nested_past_serde_jsons_limit_is_named_as_such_not_as_not_json() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let within = parse(deep(MAX_JSON_DEPTH).as_bytes(), None);
        assert!(within.json.is_some() && within.note.is_none());
        let past = parse(
            deep(MAX_JSON_DEPTH + 1).as_bytes(),
            Some("application/json"),
        );
        assert!(past.json.is_none());
        let note = past.note.expect("a note");
        assert!(note.contains("nested deeper than 127 levels"), "{note}");
        assert!(
            parse(b"{not json", None).note.is_none(),
            "not JSON has no note"
        );
    }
}
