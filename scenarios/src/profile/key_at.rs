//! Where a request carries its idempotency key, how a sender puts it there and how an observer
//! finds it again (`contract.key_at`): one type for the runner, which sends keys, and the proxy,
//! which records them.

use serde::{Deserialize, Serialize};

/// Where a request carries its idempotency key (`contract.key_at`). A request without a key
/// leaves the header, parameter or member out altogether.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum KeyAt {
    /// A request header of this name.
    Header(String),
    /// A query parameter of this name, appended to the path (form-urlencoded).
    Query(String),
    /// A field of this name in an `application/x-www-form-urlencoded` body.
    Form(String),
    /// A member of a JSON object body: a name, or names joined by `.` for a member inside
    /// another (`params.clientToken`); missing objects on the way are made.
    Json(String),
}

impl KeyAt {
    /// `the \`Idempotency-Key\` header`, `the query parameter \`requestId\``, … (for sentences).
    pub fn describe(&self) -> String {
        match self {
            KeyAt::Header(n) => format!("the `{n}` header"),
            KeyAt::Query(n) => format!("the query parameter `{n}`"),
            KeyAt::Form(n) => format!("the form field `{n}`"),
            KeyAt::Json(n) => format!("the JSON member `{n}`"),
        }
    }

    /// Why the name cannot carry a key, if it cannot.
    pub(crate) fn problem(&self) -> Option<String> {
        let (field, name) = match self {
            KeyAt::Header(n) => return key_header_problem(n),
            KeyAt::Query(n) => ("query", n),
            KeyAt::Form(n) => ("form", n),
            KeyAt::Json(n) => ("json", n),
        };
        let bad = name.is_empty()
            || name.len() > 256
            || name.chars().any(char::is_control)
            || (field == "json" && name.split('.').any(str::is_empty));
        bad.then(|| {
            format!(
                "key_at.{field} `{name}` is no name to carry the key: give 1–256 characters \
                 without control characters{}",
                if field == "json" { ", and for a member inside another, names joined by single dots (`params.clientToken`)" } else { "" }
            )
        })
    }

    /// Puts `key` where this says (a header is the sender's, and left alone here): a query
    /// parameter appended to `path`, a field appended to a form body, or a member set in a JSON
    /// object body (made, with the objects on the way, where missing). A body-less request gets a
    /// body of the key alone, and its type.
    ///
    /// # Errors
    /// A JSON placement in a body that is not a JSON object.
    pub fn place(
        &self,
        key: &str,
        path: &mut String,
        body: &mut Option<String>,
        content_type: &mut Option<String>,
    ) -> Result<(), String> {
        let pair = |name: &str| {
            form_urlencoded::Serializer::new(String::new())
                .append_pair(name, key)
                .finish()
        };
        match self {
            KeyAt::Header(_) => {}
            KeyAt::Query(name) => {
                path.push(if path.contains('?') { '&' } else { '?' });
                path.push_str(&pair(name));
            }
            KeyAt::Form(name) => {
                let field = pair(name);
                *body = Some(match body.take().filter(|b| !b.is_empty()) {
                    Some(b) => format!("{b}&{field}"),
                    None => field,
                });
                content_type.get_or_insert_with(|| "application/x-www-form-urlencoded".into());
            }
            KeyAt::Json(dotted) => {
                let mut value = match body.as_deref().filter(|b| !b.trim().is_empty()) {
                    Some(b) => serde_json::from_str::<serde_json::Value>(b).map_err(|e| {
                        format!("the body is not JSON ({e}), so the key cannot be its member `{dotted}` (`contract.key_at`)")
                    })?,
                    None => serde_json::Value::Object(serde_json::Map::new()),
                };
                let mut node = &mut value;
                for name in dotted.split('.') {
                    let object = node.as_object_mut().ok_or_else(|| {
                        format!(
                            "the body has no JSON object where the key's member `{dotted}` goes \
                             (`contract.key_at`)"
                        )
                    })?;
                    node = object
                        .entry(name)
                        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
                }
                *node = serde_json::Value::String(key.to_owned());
                *body = Some(value.to_string());
                content_type.get_or_insert_with(|| "application/json".into());
            }
        }
        Ok(())
    }

    /// Whether the key is in the request's body (a form field or a JSON member).
    pub fn in_body(&self) -> bool {
        matches!(self, KeyAt::Form(_) | KeyAt::Json(_))
    }

    /// The key a request carries here, the inverse of [`KeyAt::place`]: `target` is the
    /// request-target (path and query), `header` looks a header up by name, and `body` is the
    /// request body (a form body for [`KeyAt::Form`], a JSON object for [`KeyAt::Json`]), when
    /// it was kept. Bytes that are not UTF-8 are shown as `\xNN`, so two keys that differ in them
    /// stay apart. A JSON member that is `null` is no key (how an SDK writes an unset token);
    /// another value that is not a string is its JSON text (`42`). `Ok(None)` where the request
    /// carries no key there.
    ///
    /// # Errors
    /// Why the key could not be read at all, as opposed to being absent: a JSON member's body
    /// that is not JSON.
    pub fn find<'h>(
        &self,
        target: &str,
        header: impl Fn(&str) -> Option<&'h [u8]>,
        body: Option<&[u8]>,
    ) -> Result<Option<String>, String> {
        Ok(match (self, body) {
            (KeyAt::Header(name), _) => header(name).map(text),
            (KeyAt::Query(name), _) => {
                let query = target.split_once('?').map_or("", |(_, q)| q);
                form_field(query.as_bytes(), name)
            }
            (KeyAt::Form(name), Some(body)) => form_field(body, name),
            (KeyAt::Json(dotted), Some(body)) => {
                let value: serde_json::Value = serde_json::from_slice(body)
                    .map_err(|e| format!("the body is not JSON ({e})"))?;
                let member = dotted
                    .split('.')
                    .try_fold(&value, |node, name| node.as_object()?.get(name));
                match member {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(other) => Some(other.to_string()),
                }
            }
            (KeyAt::Form(_) | KeyAt::Json(_), None) => None,
        })
    }
}

/// The headers HTTP itself or idemspec uses, which cannot also carry a key: the message's framing
/// and connection (RFC 9110 §7.6.1, RFC 9112 §6), its host, and idemspec's `X-Idemspec-*` control
/// headers, which the proxy strips.
const RESERVED_HEADERS: [&str; 11] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "expect",
];

/// Why header `name` cannot carry a key, if it cannot: not a header name, or one HTTP or
/// idemspec uses for something else.
pub(crate) fn key_header_problem(name: &str) -> Option<String> {
    if let Err(m) = super::check_header(name, "k") {
        return Some(m);
    }
    let lower = name.to_ascii_lowercase();
    (RESERVED_HEADERS.contains(&lower.as_str()) || lower.starts_with("x-idemspec-")).then(|| {
        format!(
            "the key cannot travel in `{name}`: HTTP or idemspec uses that header for something \
             else (the message's framing, its host, or idemspec's step tag)"
        )
    })
}

/// `bytes` as text: UTF-8 as it is, any other byte as `\xNN`.
fn text(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The first value of field `name` in a form-urlencoded `form` (`+` a space, `%XX` a byte), as
/// [`text`]. Not `form_urlencoded::parse`, which replaces bytes that are not UTF-8.
fn form_field(form: &[u8], name: &str) -> Option<String> {
    let decode = |raw: &[u8]| -> Vec<u8> {
        let spaced: Vec<u8> = raw
            .iter()
            .map(|b| if *b == b'+' { b' ' } else { *b })
            .collect();
        percent_encoding::percent_decode(&spaced).collect()
    };
    form.split(|b| *b == b'&').find_map(|pair| {
        let (n, v) = match pair.iter().position(|b| *b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &[][..]),
        };
        (decode(n) == name.as_bytes()).then(|| text(&decode(v)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_goes_where_the_contract_says_and_is_encoded_there() {
        let place = |at: KeyAt, key: &str, path: &str, body: Option<&str>| {
            let (mut path, mut body, mut ct) = (path.to_owned(), body.map(str::to_owned), None);
            let r = at.place(key, &mut path, &mut body, &mut ct);
            r.map(|()| (path, body, ct))
        };
        let q = place(KeyAt::Query("requestId".into()), "a b&c", "/v1/x", None).unwrap();
        assert_eq!(q.0, "/v1/x?requestId=a+b%26c");
        let q2 = place(KeyAt::Query("requestId".into()), "k", "/v1/x?zone=z", None).unwrap();
        assert_eq!(q2.0, "/v1/x?zone=z&requestId=k");
        let f = place(
            KeyAt::Form("ClientToken".into()),
            "k=1",
            "/",
            Some("Action=Run"),
        )
        .unwrap();
        assert_eq!(f.1.as_deref(), Some("Action=Run&ClientToken=k%3D1"));
        let f2 = place(KeyAt::Form("ClientToken".into()), "k", "/", None).unwrap();
        assert_eq!(
            (f2.1.as_deref(), f2.2.as_deref()),
            (
                Some("ClientToken=k"),
                Some("application/x-www-form-urlencoded")
            )
        );
        let j = place(
            KeyAt::Json("params.clientToken".into()),
            "k\"1",
            "/",
            Some(r#"{"a":1}"#),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(j.1.as_deref().unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": 1, "params": {"clientToken": "k\"1"}})
        );
        assert!(place(KeyAt::Json("t".into()), "k", "/", Some("[1]")).is_err());
        assert!(place(KeyAt::Json("t".into()), "k", "/", Some("a=1")).is_err());
    }

    /// What [`KeyAt::place`] puts is what [`KeyAt::find`] reads back, wherever it goes; absent,
    /// or in a body of another kind, there is no key.
    #[test]
    fn a_placed_key_is_found_again() {
        for at in [
            KeyAt::Query("requestId".into()),
            KeyAt::Form("ClientToken".into()),
            KeyAt::Json("params.clientToken".into()),
        ] {
            for key in ["k1", "a b&c=d", "ключ", "\"quoted\""] {
                let (mut path, mut body, mut ct) =
                    ("/v1/x?zone=z".to_owned(), None::<String>, None);
                if at == KeyAt::Json("params.clientToken".into()) {
                    body = Some(r#"{"image":"debian"}"#.into());
                }
                at.place(key, &mut path, &mut body, &mut ct).unwrap();
                let found = at
                    .find(&path, |_| None, body.as_deref().map(str::as_bytes))
                    .unwrap();
                assert_eq!(found.as_deref(), Some(key), "{at:?}: {path} {body:?}");
            }
            assert_eq!(
                at.find("/v1/x?zone=z", |_| None, Some(b"{}")),
                Ok(None),
                "{at:?}"
            );
        }
        let header = KeyAt::Header("X-Request-Token".into());
        let found = header.find(
            "/",
            |n| (n == "X-Request-Token").then_some(&b"t-1"[..]),
            None,
        );
        assert_eq!(found, Ok(Some("t-1".into())));
        let json = KeyAt::Json("clientToken".into());
        let in_json = |body: &[u8]| json.find("/", |_| None, Some(body));
        assert!(in_json(b"clientToken=k").unwrap_err().contains("not JSON"));
        assert!(in_json(b"[1,").is_err());
        assert_eq!(in_json(br#"{"clientToken":42}"#), Ok(Some("42".into())));
        assert_eq!(
            in_json(br#"{"clientToken":{"a":1}}"#),
            Ok(Some(r#"{"a":1}"#.into()))
        );
        assert_eq!(
            in_json(br#"{"clientToken":null}"#),
            Ok(None),
            "null is no key"
        );
        assert_eq!(in_json(b"[1]"), Ok(None), "JSON without the member");
        // Bytes that are not UTF-8 stay apart, shown escaped; a stray `%` stays as it is.
        let query = KeyAt::Query("requestId".into());
        let a = query.find("/x?requestId=k%A3", |_| None, None).unwrap();
        let b = query.find("/x?requestId=k%A4", |_| None, None).unwrap();
        assert_eq!(a.as_deref(), Some("k\\xa3"));
        assert_ne!(a, b);
        let odd = query.find("/x?requestId=50%25+off%", |_| None, None);
        assert_eq!(odd, Ok(Some("50% off%".into())));
        let raw = KeyAt::Header("K".into()).find("/", |_| Some(&b"k\xff"[..]), None);
        assert_eq!(raw, Ok(Some("k\\xff".into())));
    }
}
