//! Small validated values used by the rule schema; each rejects a bad value while parsing, so the
//! error is located at the value itself.

use std::fmt;
use std::time::Duration;

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// A count that is at least 1: the 1-based `nth` of a match, a rule's `times`.
///
/// `0` is rejected because a rule with `nth: 0` or `times: 0` could never apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Count(u64);

impl Count {
    /// `Some` when `n >= 1`.
    pub const fn new(n: u64) -> Option<Self> {
        if n == 0 {
            None
        } else {
            Some(Self(n))
        }
    }

    /// The count, at least 1.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = u64::deserialize(d)?;
        Count::new(n).ok_or_else(|| {
            de::Error::custom("a count must be at least 1 (it is 1-based: 0 would never match)")
        })
    }
}

/// A probability in `0 < p <= 1`: the chance that a matching request gets the fault.
///
/// `0` is rejected (the rule could never apply), as is anything outside the unit interval.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
#[serde(transparent)]
pub struct Probability(f64);

impl Probability {
    /// `Some` when `0 < p <= 1`.
    pub fn new(p: f64) -> Option<Self> {
        (p > 0.0 && p <= 1.0).then_some(Self(p))
    }

    /// The probability, in `(0, 1]`.
    pub const fn get(self) -> f64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Probability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let p = f64::deserialize(d)?;
        Probability::new(p).ok_or_else(|| {
            de::Error::custom(format_args!(
                "probability must be in 0 < p <= 1 (0 would never match), got {p}"
            ))
        })
    }
}

/// The cross-field rule for a seeded probability: `probability` needs an explicit `seed` (so a run
/// replays exactly), and a `seed` alone means nothing.
pub(crate) fn check_seed(
    probability: Option<Probability>,
    seed: Option<u64>,
) -> Result<(), String> {
    match (probability, seed) {
        (Some(_), None) => {
            Err("`probability` needs an explicit `seed` so a run can be replayed".into())
        }
        (None, Some(_)) => Err("`seed` is only meaningful with `probability`".into()),
        _ => Ok(()),
    }
}

/// Whether `s` is an RFC 9110 §5.6.2 `token` (method names, header names, media type parts).
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

/// The rule for a rule's name: at least one visible character, no control characters. Names are
/// how the event log and the control API say which rule applied, so they are also unique in
/// their list ([`duplicate_name`]).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("a rule name must not be empty (events name the rule that applied)".into());
    }
    if name.chars().any(char::is_control) {
        return Err(format!(
            "rule name {name:?} has a control character; use letters, digits and punctuation"
        ));
    }
    Ok(())
}

/// The first name in `names` that an earlier one already has: its index and the name.
///
/// Rule names are unique within a rule list (a scenario's `faults:`, a proxy file's `rules:` or
/// `tcp_rules:`, the control API's rule set), because an event names the rule that applied.
pub fn duplicate_name<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<(usize, &'a str)> {
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .enumerate()
        .find(|(_, name)| !seen.insert(*name))
}

/// The message for the rule at index `index` (0-based) whose `name` an earlier rule has.
pub(crate) fn duplicate_message(index: usize, name: &str, first: usize) -> String {
    format!(
        "rule {} is named `{name}` like rule {}; names say which rule applied, so give each its own",
        index + 1,
        first + 1
    )
}

/// The rule for a synthetic response's `Content-Type`: a media type `type/subtype`, optionally
/// with parameters (RFC 9110 §8.3.1), in the characters a header value may carry (visible ASCII,
/// space and tab), so that the response carries exactly what the rule says.
pub(crate) fn check_media_type(value: &str) -> Result<(), String> {
    let expected = "expected `type/subtype`, e.g. application/json";
    if !value
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return Err(format!(
            "content type {value:?} is not a media type: it has a control or non-ASCII character ({expected})"
        ));
    }
    let essence = value.split(';').next().unwrap_or_default().trim();
    match essence.split_once('/') {
        Some((kind, subtype)) if is_token(kind) && is_token(subtype) => Ok(()),
        _ => Err(format!(
            "content type {value:?} is not a media type ({expected})"
        )),
    }
}

/// Serde helpers that apply a `check_*` rule while parsing, so the error points at the value.
pub(crate) mod checked {
    use super::*;

    /// A rule's name ([`check_name`]).
    pub(crate) fn name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let name = String::deserialize(d)?;
        check_name(&name).map_err(de::Error::custom)?;
        Ok(name)
    }

    /// An optional media type ([`check_media_type`]); called only when the field is present.
    pub(crate) fn media_type<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let value = String::deserialize(d)?;
        check_media_type(&value).map_err(de::Error::custom)?;
        Ok(Some(value))
    }
}

/// An HTTP method token, upper-cased (`post` reads as `POST`), as in RFC 9110 §9.1.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct HttpMethod(String);

impl HttpMethod {
    /// Parses a method token; `None` for an empty string or a character outside RFC 9110's `tchar`.
    pub fn new(s: &str) -> Option<Self> {
        is_token(s).then(|| Self(s.to_ascii_uppercase()))
    }

    /// The upper-cased method, e.g. `POST`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for HttpMethod {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        HttpMethod::new(&s).ok_or_else(|| {
            de::Error::custom(format_args!(
                "`{s}` is not an HTTP method (expected a token such as POST)"
            ))
        })
    }
}

impl fmt::Display for HttpMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Serde helpers for durations written with units, as humantime reads them (`250ms`, `3s`, `1m 30s`).
pub(crate) mod duration {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_duration(*d))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(|e| {
            de::Error::custom(format_args!(
                "`{s}` is not a duration ({e}); expected a number with a unit such as 250ms or 3s"
            ))
        })
    }

    /// The same for an optional duration.
    pub(crate) mod option {
        use super::*;

        pub(crate) fn serialize<S: Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}

/// A final HTTP status code in 200–599, as a synthetic response carries it (RFC 9110 §15).
///
/// 1xx codes are rejected: they are interim responses (RFC 9110 §15.2), so a client sent one as
/// the answer keeps waiting for a final response that never comes (101 even switches protocols).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Status(u16);

impl Status {
    /// `Some` when `200 <= code <= 599`.
    pub const fn new(code: u16) -> Option<Self> {
        if code >= 200 && code <= 599 {
            Some(Self(code))
        } else {
            None
        }
    }

    /// The numeric code.
    pub const fn get(self) -> u16 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let code = u16::deserialize(d)?;
        Status::new(code).ok_or_else(|| {
            de::Error::custom(format_args!(
                "status must be in 200..=599 (a final status: 1xx are interim responses), got {code}"
            ))
        })
    }
}

/// The headers about the connection rather than the message (RFC 9110 §7.6.1; `Proxy-Connection`
/// by practice), lower case: never part of a synthetic answer, never a key (`profile::KeyAt`).
pub const CONNECTION_HEADERS: [&str; 6] = [
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
];

/// Extra headers of a synthetic response (`respond`), in the order written: e.g. `Retry-After`
/// on a 429 or 503, so a client's handling of it can be tested. Each name must be an HTTP field
/// name and each value free of control characters (RFC 9110 §5.1, §5.5); `Content-Type` has its
/// own field (`content_type`) and is refused here, as are `Content-Length` and
/// `Transfer-Encoding`, which are set from the body, and the headers about the connection rather
/// than the response (`Connection`, `Keep-Alive`, `TE`, `Trailer`, `Upgrade`, `Proxy-Connection`,
/// RFC 9110 §7.6.1; `Host`). A value is at most [`ResponseHeaders::MAX_VALUE`] bytes and all of
/// them together at most [`ResponseHeaders::MAX_TOTAL`]: clients refuse longer header sections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ResponseHeaders(std::collections::BTreeMap<String, String>);

impl ResponseHeaders {
    /// The longest header value, in bytes: 8 KiB.
    pub const MAX_VALUE: usize = 8 * 1024;
    /// The most bytes of names and values together: 32 KiB (Python's http.client reads a header
    /// line of at most 64 KiB; many servers and clients stop at 8 to 16 KiB a line).
    pub const MAX_TOTAL: usize = 32 * 1024;

    /// Validates `headers` (see the type's documentation).
    ///
    /// # Errors
    /// A message naming the first header that cannot be sent.
    pub fn new(headers: std::collections::BTreeMap<String, String>) -> Result<Self, String> {
        for (name, value) in &headers {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(format!("`{name}` is not a valid header name"));
            }
            if http::HeaderValue::from_str(value).is_err() {
                return Err(format!(
                    "header `{name}` has a value HTTP cannot carry ({value:?}): control characters such as CR and LF are not allowed"
                ));
            }
            let lower = name.to_ascii_lowercase();
            if lower == "content-type" {
                return Err(format!(
                    "`{name}` has a field of its own: give the body's type as `content_type`"
                ));
            }
            if ["content-length", "transfer-encoding"].contains(&lower.as_str()) {
                return Err(format!("`{name}` is set from the body; leave it out"));
            }
            if lower == "host" || CONNECTION_HEADERS.contains(&lower.as_str()) {
                return Err(format!(
                    "`{name}` is about the connection, not the response (RFC 9110 §7.6.1); leave it out"
                ));
            }
            if value.len() > Self::MAX_VALUE {
                return Err(format!(
                    "header `{name}` is {} bytes; at most {} (clients refuse longer lines)",
                    value.len(),
                    Self::MAX_VALUE
                ));
            }
        }
        let total: usize = headers.iter().map(|(n, v)| n.len() + v.len()).sum();
        if total > Self::MAX_TOTAL {
            return Err(format!(
                "the headers are {total} bytes together; at most {}",
                Self::MAX_TOTAL
            ));
        }
        Ok(Self(headers))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The headers, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}

impl<'de> Deserialize<'de> for ResponseHeaders {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<String, String>::deserialize(d)?;
        ResponseHeaders::new(map).map_err(de::Error::custom)
    }
}

/// Serde helper for a fault field: accepts the externally tagged map form (`{refuse: {reset: true}}`)
/// and, for verbs whose options all have defaults, the bare verb (`refuse`).
pub(crate) mod bare_verb {
    use super::*;
    use std::marker::PhantomData;

    pub(crate) fn deserialize<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        d.deserialize_any(Visitor(PhantomData))
    }

    struct Visitor<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> de::Visitor<'de> for Visitor<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(
                "a fault: a verb such as `refuse`, or a mapping such as `{respond: {status: 502}}`",
            )
        }

        fn visit_str<E: de::Error>(self, verb: &str) -> Result<T, E> {
            // A bare verb means "this verb with its default options", i.e. `{verb: {}}`.
            let mut map = serde_json::Map::new();
            map.insert(
                verb.to_owned(),
                serde_json::Value::Object(Default::default()),
            );
            T::deserialize(serde_json::Value::Object(map)).map_err(|e| {
                let e = e.to_string();
                if e.starts_with("unknown variant") {
                    E::custom(e)
                } else {
                    E::custom(format_args!(
                        "`{verb}` needs options ({e}); write it as a mapping, e.g. `{{{verb}: {{…}}}}`"
                    ))
                }
            })
        }

        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
}
