//! An XML answer read as JSON, so one path language (JSONPath, RFC 9535) reads ids, lists and
//! refusals from JSON and XML APIs alike (EC2's Query protocol answers XML).
//!
//! The mapping (docs/profile-reference.md, "XML answers"):
//! - the document is an object with one member, the root element's name;
//! - an element with no attributes and no child elements is its text, a string (`""` when empty
//!   or only whitespace);
//! - any other element is an object: each attribute as `@name`, each child element under its name
//!   (one child: its value; repeated: an array of them, in order), and text beside child elements
//!   as `#text`, trimmed;
//! - children named `item` or `member` always form an array, even one alone: they are the list
//!   members of the AWS Query protocol, so `$..instancesSet.item[*]` reads one instance or many;
//! - names lose their namespace prefix, and `xmlns` attributes are dropped.
//!
//! A document type declaration is refused (no entity is ever expanded but the five predefined
//! ones and character references), as are more than [`MAX_DEPTH`] nested elements.

use quick_xml::events::Event;
use serde_json::{Map, Value};

/// The deepest nesting read.
pub const MAX_DEPTH: usize = 64;

/// One element being read: its name, attributes, children in order and text.
struct Open {
    name: String,
    attributes: Vec<(String, String)>,
    children: Vec<(String, Value)>,
    text: String,
}

impl Open {
    fn new(start: &quick_xml::events::BytesStart<'_>) -> Option<Self> {
        let name = local(start.name().as_ref());
        let mut attributes = Vec::new();
        for attribute in start.attributes() {
            let attribute = attribute.ok()?;
            let key = attribute.key.as_ref();
            if key == b"xmlns" || key.starts_with(b"xmlns:") {
                continue;
            }
            let value = attribute
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()?
                .into_owned();
            attributes.push((format!("@{}", local(key)), value));
        }
        Some(Self {
            name,
            attributes,
            children: Vec::new(),
            text: String::new(),
        })
    }

    /// The element as JSON, by the module's mapping.
    fn value(self) -> Value {
        if self.attributes.is_empty() && self.children.is_empty() {
            let blank = self.text.trim().is_empty();
            return Value::String(if blank { String::new() } else { self.text });
        }
        let mut object = Map::new();
        for (name, value) in self.attributes {
            object.insert(name, Value::String(value));
        }
        for (name, value) in self.children {
            let listed = name == "item" || name == "member";
            match object.get_mut(&name) {
                Some(Value::Array(values)) => values.push(value),
                Some(one) => {
                    let first = one.take();
                    *one = Value::Array(vec![first, value]);
                }
                None if listed => {
                    object.insert(name, Value::Array(vec![value]));
                }
                None => {
                    object.insert(name, value);
                }
            }
        }
        let text = self.text.trim();
        if !text.is_empty() {
            object.insert("#text".into(), Value::String(text.to_owned()));
        }
        Value::Object(object)
    }
}

/// A name without its namespace prefix.
fn local(name: &[u8]) -> String {
    let name = String::from_utf8_lossy(name);
    match name.rsplit_once(':') {
        Some((_, local)) => local.to_owned(),
        None => name.into_owned(),
    }
}

/// `body` as JSON by the module's mapping; `None` where it is no well-formed XML document (or has
/// a document type declaration, or nests deeper than [`MAX_DEPTH`]).
pub fn to_json(body: &[u8]) -> Option<Value> {
    to_json_within(body, usize::MAX).map(|(json, _)| json)
}

/// [`to_json`] of at most `elements` elements: past them the reading stops, every element still
/// open is closed with what it read, and the flag says the document was read in part (then it is
/// not checked for well-formedness past that point).
pub fn to_json_within(body: &[u8], elements: usize) -> Option<(Value, bool)> {
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut open: Vec<Open> = Vec::new();
    let mut root = None;
    let mut left = elements;
    let mut cut = false;
    loop {
        let event = reader.read_event().ok()?;
        if matches!(event, Event::Start(_) | Event::Empty(_)) {
            if left == 0 && root.is_none() {
                cut = true;
                break;
            }
            left = left.saturating_sub(1);
        }
        let closed = match event {
            Event::Start(start) => {
                if open.len() >= MAX_DEPTH || root.is_some() {
                    return None;
                }
                open.push(Open::new(&start)?);
                None
            }
            Event::Empty(start) => {
                if root.is_some() {
                    return None;
                }
                Some(Open::new(&start)?)
            }
            Event::End(_) => Some(open.pop()?),
            Event::Text(text) => {
                let text = text.decode().ok()?;
                match open.last_mut() {
                    Some(element) => element.text.push_str(&text),
                    None if text.trim().is_empty() => {}
                    None => return None,
                }
                None
            }
            Event::GeneralRef(reference) => {
                let named = match reference.decode().ok()?.as_ref() {
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "amp" => Some('&'),
                    "apos" => Some('\''),
                    "quot" => Some('"'),
                    _ => None,
                };
                let c = match named {
                    Some(c) => c,
                    // A character reference; any other entity is one no document here declares.
                    None => reference.resolve_char_ref().ok()??,
                };
                open.last_mut()?.text.push(c);
                None
            }
            Event::CData(data) => {
                let text = String::from_utf8(data.into_inner().into_owned()).ok()?;
                open.last_mut()?.text.push_str(&text);
                None
            }
            Event::DocType(_) => return None,
            Event::Eof => break,
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) => None,
            #[allow(unreachable_patterns, reason = "quick-xml may add events")]
            _ => None,
        };
        if let Some(element) = closed {
            let name = element.name.clone();
            let value = element.value();
            match open.last_mut() {
                Some(parent) => parent.children.push((name, value)),
                None => root = Some((name, value)),
            }
        }
    }
    if cut {
        // Close what is open, innermost first, as if the document ended here.
        while let Some(element) = open.pop() {
            let name = element.name.clone();
            let value = element.value();
            match open.last_mut() {
                Some(parent) => parent.children.push((name, value)),
                None => root = Some((name, value)),
            }
        }
    } else if !open.is_empty() {
        return None;
    }
    let (name, value) = root?;
    Some((Value::Object(Map::from_iter([(name, value)])), cut))
}

/// Whether an answer with `content_type` and `body` is XML: an XML media type (`application/xml`,
/// `text/xml`, `…+xml`), or no JSON type and a body that starts with `<?xml`.
pub fn is_xml(content_type: Option<&str>, body: &[u8]) -> bool {
    let essence = content_type
        .and_then(|t| t.split(';').next())
        .map(|t| t.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("application/xml" | "text/xml") => true,
        Some(t) if t.ends_with("+xml") => true,
        Some(t) if t.contains("json") => false,
        _ => body.trim_ascii_start().starts_with(b"<?xml"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_ec2_answer_reads_as_json_with_its_lists_as_arrays() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<RunInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r-1</requestId>
  <instancesSet>
    <item><instanceId>i-1</instanceId><state code="0"><name>pending</name></state></item>
  </instancesSet>
  <groupSet/>
</RunInstancesResponse>"#;
        assert_eq!(
            to_json(body).unwrap(),
            json!({"RunInstancesResponse": {
                "requestId": "r-1",
                "instancesSet": {"item": [{"instanceId": "i-1", "state": {"@code": "0", "name": "pending"}}]},
                "groupSet": ""
            }})
        );
    }

    #[test]
    fn repeated_children_are_an_array_and_text_is_unescaped() {
        let body = b"<r><a>1</a><a>2 &amp; 3</a><b><![CDATA[<x>]]></b><ns:c>4</ns:c></r>";
        assert_eq!(
            to_json(body).unwrap(),
            json!({"r": {"a": ["1", "2 & 3"], "b": "<x>", "c": "4"}})
        );
    }

    #[test]
    fn an_error_answer_names_its_code() {
        let body = b"<Response><Errors><Error><Code>IdempotentParameterMismatch</Code>\
            <Message>m</Message></Error></Errors><RequestID>x</RequestID></Response>";
        let json = to_json(body).unwrap();
        assert_eq!(
            json["Response"]["Errors"]["Error"]["Code"],
            "IdempotentParameterMismatch"
        );
    }

    #[test]
    fn what_is_no_document_reads_as_nothing() {
        let deep = format!(
            "{}{}",
            "<a>".repeat(MAX_DEPTH + 1),
            "</a>".repeat(MAX_DEPTH + 1)
        );
        for bad in [
            b"<a><b></a>".as_slice(),
            b"<a></a><b></b>",
            b"text<a/>",
            b"<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>",
            b"",
            deep.as_bytes(),
        ] {
            assert_eq!(to_json(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn xml_is_known_by_its_media_type_or_its_declaration() {
        assert!(is_xml(Some("text/xml;charset=UTF-8"), b"<a/>"));
        assert!(is_xml(Some("application/atom+xml"), b""));
        assert!(is_xml(None, b"  <?xml version=\"1.0\"?><a/>"));
        assert!(!is_xml(Some("application/json"), b"<?xml"));
        assert!(!is_xml(None, b"{}"));
    }
}
