//! Where a request carries its idempotency key, how a sender puts it there and how an observer
//! finds it again (`contract.key_at`): one type for the runner, which sends keys, and the proxy,
//! which records them.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

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
    /// The first request header whose name matches this pattern, case-insensitively, `*` standing
    /// for any run of characters (`X-*-Idempotency-Key`): for observing a client whose header
    /// name carries a vendor or a version. A pattern names no header to send a key in, so only
    /// client profiles take it.
    HeaderMatching(String),
}

impl KeyAt {
    /// `the \`Idempotency-Key\` header`, `the query parameter \`requestId\``, … (for sentences).
    pub fn describe(&self) -> String {
        match self {
            KeyAt::Header(n) => format!("the `{n}` header"),
            KeyAt::Query(n) => format!("the query parameter `{n}`"),
            KeyAt::Form(n) => format!("the form field `{n}`"),
            KeyAt::Json(n) => format!("the JSON member `{n}`"),
            KeyAt::HeaderMatching(p) => format!("the header matching `{p}`"),
        }
    }

    /// As a profile writes it: `{header: Idempotency-Key}`, `{json: clientToken}`, …
    pub fn as_yaml(&self) -> String {
        match self {
            KeyAt::Header(n) => format!("{{header: {n}}}"),
            KeyAt::Query(n) => format!("{{query: {n}}}"),
            KeyAt::Form(n) => format!("{{form: {n}}}"),
            KeyAt::Json(n) => format!("{{json: {n}}}"),
            KeyAt::HeaderMatching(p) => format!("{{header_matching: \"{p}\"}}"),
        }
    }

    /// Whether a header called `name` carries the key: the header itself, or one the pattern
    /// matches (case-insensitively both); never for a key outside the headers.
    pub fn matches_header(&self, name: &str) -> bool {
        match self {
            KeyAt::Header(n) => n.eq_ignore_ascii_case(name),
            KeyAt::HeaderMatching(p) => globset::GlobBuilder::new(p)
                .case_insensitive(true)
                .build()
                .is_ok_and(|g| g.compile_matcher().is_match(name)),
            _ => false,
        }
    }

    /// Why the name cannot carry a key, if it cannot (a header HTTP or idemspec uses for
    /// something else, a name no query, form or JSON member could have).
    pub fn problem(&self) -> Option<String> {
        let (field, name) = match self {
            KeyAt::Header(n) => return key_header_problem(n),
            KeyAt::HeaderMatching(p) => return header_pattern_problem(p),
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
            KeyAt::HeaderMatching(p) => {
                return Err(format!(
                    "`key_at: {{header_matching: \"{p}\"}}` names no header to send the key in; \
                     give `{{header: NAME}}`"
                ))
            }
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
    /// request-target (path and query), `header` gives the first header whose name satisfies the
    /// predicate it is handed ([`KeyAt::matches_header`]), and `body` is the
    /// request body (a form body for [`KeyAt::Form`], a JSON object for [`KeyAt::Json`]), when
    /// it was kept. Bytes that are not UTF-8 are shown as `\xNN`, so two keys that differ in them
    /// stay apart. A JSON member that is `null` is no key (how an SDK writes an unset token);
    /// another value that is not a string is its JSON text (`42`). `Ok(None)` where the request
    /// carries no key there.
    ///
    /// # Errors
    /// Why the key could not be read at all, as opposed to being absent: a JSON member's body
    /// that is not JSON, or that names the member (or an object on its path) twice — which one
    /// an API reads is its parser's choice, so neither is chosen here.
    pub fn find<'h>(
        &self,
        target: &str,
        header: impl Fn(&dyn Fn(&str) -> bool) -> Option<&'h [u8]>,
        body: Option<&[u8]>,
    ) -> Result<Option<String>, String> {
        Ok(match (self, body) {
            (KeyAt::Header(_) | KeyAt::HeaderMatching(_), _) => {
                header(&|name| self.matches_header(name)).map(text)
            }
            (KeyAt::Query(name), _) => {
                let query = target.split_once('?').map_or("", |(_, q)| q);
                form_field(query.as_bytes(), name)
            }
            (KeyAt::Form(name), Some(body)) => form_field(body, name),
            (KeyAt::Json(dotted), Some(body)) => match json_member(body, dotted)? {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(s)) => Some(s),
                Some(other) => Some(other.to_string()),
            },
            (KeyAt::Form(_) | KeyAt::Json(_), None) => None,
        })
    }
}

impl KeyAt {
    /// Every place a request carries a value, with the value, as [`KeyAt::find`] would read it:
    /// each header (`headers`, in order, a name once), each query parameter of `target`, each
    /// field of a form `body` (one that parses as form fields and is not JSON), each string or
    /// number member of a JSON object `body` at any depth (dotted). For finding where a client
    /// puts its key (`idemspec client --discover`).
    pub fn every_place(
        target: &str,
        headers: &[(String, Vec<u8>)],
        body: Option<&[u8]>,
    ) -> Vec<(KeyAt, String)> {
        let mut out: Vec<(KeyAt, String)> = Vec::new();
        for (name, value) in headers {
            let at = KeyAt::Header(name.clone());
            if !out.iter().any(|(seen, _)| *seen == at) {
                out.push((at, text(value)));
            }
        }
        let pairs = |form: &[u8]| -> Vec<String> {
            form.split(|b| *b == b'&')
                .filter(|p| !p.is_empty())
                .map(|pair| {
                    let name = pair.split(|b| *b == b'=').next().unwrap_or_default();
                    let spaced: Vec<u8> = name
                        .iter()
                        .map(|b| if *b == b'+' { b' ' } else { *b })
                        .collect();
                    text(&percent_encoding::percent_decode(&spaced).collect::<Vec<u8>>())
                })
                .collect()
        };
        if let Some((_, query)) = target.split_once('?') {
            for name in pairs(query.as_bytes()) {
                if let Some(v) = form_field(query.as_bytes(), &name) {
                    out.push((KeyAt::Query(name), v));
                }
            }
        }
        let Some(body) = body else { return out };
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(json) => members(&json, "", &mut out),
            Err(_) if body.contains(&b'=') => {
                for name in pairs(body) {
                    if let Some(v) = form_field(body, &name) {
                        out.push((KeyAt::Form(name), v));
                    }
                }
            }
            Err(_) => {}
        }
        out
    }
}

/// The member at `dotted` of the JSON object `body`: `Ok(None)` where it has none.
///
/// # Errors
/// The body is not JSON, or names a member on the path more than once (with the values).
fn json_member(body: &[u8], dotted: &str) -> Result<Option<serde_json::Value>, String> {
    let not_json = |e: serde_json::Error| format!("the body is not JSON ({e})");
    let mut raw: &RawValue = serde_json::from_slice(body).map_err(not_json)?;
    let mut path = String::new();
    for name in dotted.split('.') {
        let Ok(Entries(entries)) = serde_json::from_str::<Entries>(raw.get()) else {
            // Not an object here: no member (a JSON body that is not valid fails above).
            return Ok(None);
        };
        path = if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        let named: Vec<&RawValue> = entries
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .collect();
        match named.as_slice() {
            [] => return Ok(None),
            [one] => raw = one,
            [first, .., last] => {
                return Err(format!(
                    "the body names `{path}` {} times ({} first, {} last): which one the API reads \
                     is its parser's choice, so the key is not read",
                    named.len(),
                    cut(first.get()),
                    cut(last.get())
                ))
            }
        }
    }
    serde_json::from_str(raw.get()).map(Some).map_err(not_json)
}

/// A JSON value's text for a message: at most 40 characters.
fn cut(text: &str) -> String {
    let mut out: String = text.chars().take(40).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// A JSON object's members in the order written, names repeated as they are.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Entries<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Entries<'a>, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        de.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// The string and number members of `value` under `prefix`, dotted, as [`KeyAt::Json`] places.
fn members(value: &serde_json::Value, prefix: &str, out: &mut Vec<(KeyAt, String)>) {
    let Some(object) = value.as_object() else {
        return;
    };
    for (name, member) in object {
        // A name with a dot could not be told from a path; `key_at` cannot name it either.
        if name.is_empty() || name.contains('.') {
            continue;
        }
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match member {
            serde_json::Value::String(s) => out.push((KeyAt::Json(path), s.clone())),
            serde_json::Value::Number(n) => out.push((KeyAt::Json(path), n.to_string())),
            serde_json::Value::Object(_) => members(member, &path, out),
            _ => {}
        }
    }
}

/// The headers HTTP itself or idemspec uses, which cannot also carry a key: the message's framing
/// and connection (RFC 9110 §7.6.1, RFC 9112 §6), its host, and idemspec's `X-Idemspec-*` control
/// headers, which the proxy strips.
const RESERVED_HEADERS: [&str; 5] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "expect",
];

/// Why header `name` cannot carry a key, if it cannot: not a header name, or one HTTP or
/// idemspec uses for something else.
pub(crate) fn key_header_problem(name: &str) -> Option<String> {
    if let Err(m) = super::check_header(name, "k") {
        return Some(m);
    }
    let lower = name.to_ascii_lowercase();
    (RESERVED_HEADERS.contains(&lower.as_str())
        || crate::rules::CONNECTION_HEADERS.contains(&lower.as_str())
        || lower.starts_with("x-idemspec-"))
    .then(|| {
        format!(
            "the key cannot travel in `{name}`: HTTP or idemspec uses that header for something \
             else (the message's framing, its host, or idemspec's step tag)"
        )
    })
}

/// Why `pattern` cannot find a key header, if it cannot: a header name's characters and `*`,
/// something besides `*`, at most 256 characters.
fn header_pattern_problem(pattern: &str) -> Option<String> {
    let ok = !pattern.is_empty()
        && pattern.len() <= 256
        && pattern.chars().any(|c| c != '*')
        && pattern
            .chars()
            .all(|c| c == '*' || c.is_ascii_alphanumeric() || "!#$%&'+-.^_`|~".contains(c));
    (!ok).then(|| {
        format!(
            "key_at.header_matching `{pattern}` is no header-name pattern: give a header name's \
             letters, digits and !#$%&'+-.^_`|~, with `*` for any run of them (`X-*-Idempotency-Key`)"
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

    /// A member named twice on the key's path is not read, the two values named; once, it is.
    #[test]
    fn a_key_member_named_twice_is_not_chosen() {
        let at = KeyAt::Json("params.token".into());
        let find = |body: &str| at.find("/", |_| None, Some(body.as_bytes()));
        assert_eq!(
            find(r#"{"params": {"token": "a", "x": 1}}"#),
            Ok(Some("a".into()))
        );
        let twice = find(r#"{"params": {"token": "a", "token": "b"}}"#).unwrap_err();
        assert!(twice.contains("names `params.token` 2 times"), "{twice}");
        assert!(twice.contains(r#""a" first, "b" last"#), "{twice}");
        let outer = find(r#"{"params": {"token": "a"}, "params": {"token": "b"}}"#).unwrap_err();
        assert!(outer.contains("names `params` 2 times"), "{outer}");
        assert_eq!(find(r#"{"params": 3, "other": {"token": "x"}}"#), Ok(None));
        assert_eq!(find(r#"[1, 2]"#), Ok(None));
        assert!(find("not json").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn every_place_a_request_carries_a_value_is_found_as_find_reads_it() {
        let headers = vec![
            ("idempotency-key".to_owned(), b"k1".to_vec()),
            ("x-dup".to_owned(), b"a".to_vec()),
            ("x-dup".to_owned(), b"b".to_vec()),
        ];
        let json =
            br#"{"clientToken":"t1","n":3,"params":{"requestId":"r1"},"list":[1],"a.b":"x"}"#;
        let places = KeyAt::every_place("/v1/x?requestId=q%201&z", &headers, Some(json));
        let found: Vec<(KeyAt, &str)> = places
            .iter()
            .map(|(a, v)| (a.clone(), v.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                (KeyAt::Header("idempotency-key".into()), "k1"),
                (KeyAt::Header("x-dup".into()), "a"),
                (KeyAt::Query("requestId".into()), "q 1"),
                (KeyAt::Query("z".into()), ""),
                (KeyAt::Json("clientToken".into()), "t1"),
                (KeyAt::Json("n".into()), "3"),
                (KeyAt::Json("params.requestId".into()), "r1"),
            ]
        );
        for (at, value) in &places {
            let header = |wanted: &dyn Fn(&str) -> bool| {
                headers
                    .iter()
                    .find(|(h, _)| wanted(h))
                    .map(|(_, v)| v.as_slice())
            };
            let read = at.find("/v1/x?requestId=q%201&z", header, Some(json));
            assert_eq!(read, Ok(Some(value.clone())), "{at:?}");
        }
        let form = KeyAt::every_place("/", &[], Some(b"Action=RunInstances&ClientToken=c+1"));
        assert_eq!(form[1], (KeyAt::Form("ClientToken".into()), "c 1".into()));
    }

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
        let sent: [(&str, &[u8]); 2] = [("accept", b"*/*"), ("x-request-token", b"t-1")];
        let lookup =
            |wanted: &dyn Fn(&str) -> bool| sent.iter().find(|(n, _)| wanted(n)).map(|(_, v)| *v);
        assert_eq!(header.find("/", lookup, None), Ok(Some("t-1".into())));
        // A pattern finds a header whose name carries a vendor or a version.
        let pattern = KeyAt::HeaderMatching("X-*-Token".into());
        assert_eq!(pattern.find("/", lookup, None), Ok(Some("t-1".into())));
        assert!(!KeyAt::HeaderMatching("X-*-Key".into()).matches_header("x-request-token"));
        assert!(pattern.problem().is_none());
        assert!(KeyAt::HeaderMatching("***".into()).problem().is_some());
        assert!(KeyAt::HeaderMatching("X-[a]".into()).problem().is_some());
        let (mut path, mut body, mut ct) = ("/".to_owned(), None, None);
        assert!(pattern.place("k", &mut path, &mut body, &mut ct).is_err());
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
        let raw = KeyAt::Header("K".into()).find(
            "/",
            |_: &dyn Fn(&str) -> bool| Some(&b"k\xff"[..]),
            None,
        );
        assert_eq!(raw, Ok(Some("k\\xff".into())));
    }
}
