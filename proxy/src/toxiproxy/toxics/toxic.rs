//! A toxic as the API reads and writes it: the wrapper (`name`, `type`, `stream`, `toxicity`,
//! `attributes`), its [`Kind`] with the type's attributes, and the defaults and bounds a new or
//! updated toxic goes through.

use super::{Bandwidth, Latency, LimitData, ResetPeer, Slicer, SlowClose, Timeout};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// The longest duration an attribute may give, ms (one hour).
pub(crate) const MAX_MS: i64 = 3_600_000;
/// The longest accepted toxic name, bytes.
pub(crate) const MAX_NAME: usize = 256;

/// An attribute out of its range, or of the wrong JSON type.
#[derive(Debug)]
pub(crate) struct AttrError(pub String);

impl AttrError {
    pub(super) fn range(field: &str, min: i64, max: i64, unit: &str) -> Self {
        Self(format!("{field} must be from {min} to {max} {unit}"))
    }
}

pub(super) fn bounded_ms(field: &str, value: i64) -> Result<(), AttrError> {
    if !(0..=MAX_MS).contains(&value) {
        return Err(AttrError::range(field, 0, MAX_MS, "ms"));
    }
    Ok(())
}

/// Which way the bytes a toxic acts on flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Stream {
    /// Client to upstream.
    Upstream,
    /// Upstream to client.
    Downstream,
}

impl Stream {
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "upstream" => Some(Self::Upstream),
            "downstream" => Some(Self::Downstream),
            _ => None,
        }
    }

    /// The name Toxiproxy uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Upstream => "upstream",
            Self::Downstream => "downstream",
        }
    }
}

/// A toxic's type and its attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `latency`.
    Latency(Latency),
    /// `bandwidth`.
    Bandwidth(Bandwidth),
    /// `slow_close`.
    SlowClose(SlowClose),
    /// `timeout`.
    Timeout(Timeout),
    /// `reset_peer`.
    ResetPeer(ResetPeer),
    /// `slicer`.
    Slicer(Slicer),
    /// `limit_data`.
    LimitData(LimitData),
}

/// The toxic types served, as Toxiproxy names them.
pub(crate) const TYPES: [&str; 7] = [
    "latency",
    "bandwidth",
    "slow_close",
    "timeout",
    "reset_peer",
    "slicer",
    "limit_data",
];

/// The attributes as `T`; an error names the attribute (`attributes.latency: invalid value …`).
fn decode<T: DeserializeOwned>(attrs: &Value) -> Result<T, AttrError> {
    serde_path_to_error::deserialize(attrs.clone()).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(".{path}")
        };
        AttrError(format!("bad request body: attributes{at}: {}", e.inner()))
    })
}

fn encode<T: Serialize>(attrs: &T) -> Value {
    serde_json::to_value(attrs).expect("attributes are plain integers")
}

impl Kind {
    /// The kind named `type_name` with `attrs` (an object; absent members are 0); `Ok(None)` for
    /// a type that is not served.
    fn new(type_name: &str, attrs: &Value) -> Result<Option<Self>, AttrError> {
        let kind = match type_name {
            "latency" => Self::Latency(decode(attrs)?),
            "bandwidth" => Self::Bandwidth(decode(attrs)?),
            "slow_close" => Self::SlowClose(decode(attrs)?),
            "timeout" => Self::Timeout(decode(attrs)?),
            "reset_peer" => Self::ResetPeer(decode(attrs)?),
            "slicer" => Self::Slicer(decode(attrs)?),
            "limit_data" => Self::LimitData(decode(attrs)?),
            _ => return Ok(None),
        };
        kind.check()?;
        Ok(Some(kind))
    }

    fn check(&self) -> Result<(), AttrError> {
        match self {
            Self::Latency(t) => t.check(),
            Self::Bandwidth(t) => t.check(),
            Self::SlowClose(t) => t.check(),
            Self::Timeout(t) => t.check(),
            Self::ResetPeer(t) => t.check(),
            Self::Slicer(t) => t.check(),
            Self::LimitData(t) => t.check(),
        }
    }

    /// The type's name.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Self::Latency(_) => "latency",
            Self::Bandwidth(_) => "bandwidth",
            Self::SlowClose(_) => "slow_close",
            Self::Timeout(_) => "timeout",
            Self::ResetPeer(_) => "reset_peer",
            Self::Slicer(_) => "slicer",
            Self::LimitData(_) => "limit_data",
        }
    }

    fn attributes(&self) -> Value {
        match self {
            Self::Latency(t) => encode(t),
            Self::Bandwidth(t) => encode(t),
            Self::SlowClose(t) => encode(t),
            Self::Timeout(t) => encode(t),
            Self::ResetPeer(t) => encode(t),
            Self::Slicer(t) => encode(t),
            Self::LimitData(t) => encode(t),
        }
    }
}

/// One toxic of a proxy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Toxic {
    /// Unique for the life of the server: a toxic removed and added again is a new one (a
    /// connection draws its toxicity again).
    pub id: u64,
    /// Unique within its proxy.
    pub name: String,
    /// The direction it acts on.
    pub stream: Stream,
    /// The chance, 0.0 to 1.0, that it acts on a given connection (drawn once per connection).
    pub toxicity: f32,
    /// Its type and attributes.
    pub kind: Kind,
}

/// Why a toxic body was refused, in Toxiproxy's words.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `400`: the body, a field or an attribute is wrong.
    Bad(String),
}

impl From<AttrError> for Refused {
    fn from(e: AttrError) -> Self {
        Self::Bad(e.0)
    }
}

fn toxicity(value: Option<&Value>, current: f32) -> Result<f32, Refused> {
    match value {
        None | Some(Value::Null) => Ok(current),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(t) if (0.0..=1.0).contains(&t) => Ok(t as f32),
            _ => Err(Refused::Bad(format!(
                "toxicity must be from 0.0 to 1.0, got {n}"
            ))),
        },
        Some(other) => Err(Refused::Bad(format!(
            "bad request body: toxicity must be a number, got {other}"
        ))),
    }
}

fn attributes(value: Option<&Value>) -> Result<Map<String, Value>, Refused> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(other) => Err(Refused::Bad(format!(
            "bad request body: attributes must be an object, got {other}"
        ))),
    }
}

fn string<'a>(body: &'a Map<String, Value>, field: &str) -> Result<Option<&'a str>, Refused> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Refused::Bad(format!(
            "bad request body: {field} must be a string, got {other}"
        ))),
    }
}

impl Toxic {
    /// A new toxic from a create body (a JSON object), with Toxiproxy's defaults.
    ///
    /// Errors (all `400`): a member of the wrong JSON type, an invalid `stream` ("stream was
    /// invalid, can be either upstream or downstream"), an unknown `type` ("invalid toxic
    /// type"), a toxicity outside 0..=1, an attribute out of its range, a name over
    /// [`MAX_NAME`] bytes.
    pub(crate) fn create(id: u64, body: &Map<String, Value>) -> Result<Self, Refused> {
        let stream = match string(body, "stream")? {
            None => Stream::Downstream,
            Some(text) => Stream::parse(text).ok_or_else(|| {
                Refused::Bad("stream was invalid, can be either upstream or downstream".into())
            })?,
        };
        let type_name = string(body, "type")?.unwrap_or_default();
        let name = match string(body, "name")? {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => format!("{type_name}_{}", stream.as_str()),
        };
        if name.len() > MAX_NAME {
            return Err(Refused::Bad(format!(
                "name is {} bytes; at most {MAX_NAME}",
                name.len()
            )));
        }
        let attrs = Value::Object(attributes(body.get("attributes"))?);
        let kind = Kind::new(type_name, &attrs)?.ok_or_else(|| {
            Refused::Bad(format!(
                "invalid toxic type (`{type_name}`; served: {})",
                TYPES.join(", ")
            ))
        })?;
        Ok(Self {
            id,
            name,
            stream,
            toxicity: toxicity(body.get("toxicity"), 1.0)?,
            kind,
        })
    }

    /// This toxic with an update body applied: `attributes` merged over the current ones,
    /// `toxicity` replaced when given. Errors as [`Toxic::create`]'s.
    pub(crate) fn updated(&self, body: &Map<String, Value>) -> Result<Self, Refused> {
        let mut attrs = match self.kind.attributes() {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        attrs.extend(attributes(body.get("attributes"))?);
        let kind = Kind::new(self.kind.type_name(), &Value::Object(attrs))?
            .expect("the type of an existing toxic is served");
        Ok(Self {
            toxicity: toxicity(body.get("toxicity"), self.toxicity)?,
            kind,
            ..self.clone()
        })
    }

    /// The toxic as Toxiproxy shows it.
    pub(crate) fn to_json(&self) -> Value {
        serde_json::json!({
            "attributes": self.kind.attributes(),
            "name": self.name,
            "type": self.kind.type_name(),
            "stream": self.stream.as_str(),
            "toxicity": self.toxicity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("an object"),
        }
    }

    #[test]
    fn defaults_follow_toxiproxy() {
        let t = Toxic::create(1, &object(serde_json::json!({"type": "latency"}))).unwrap();
        assert_eq!(t.name, "latency_downstream");
        assert_eq!(t.stream, Stream::Downstream);
        assert_eq!(t.toxicity, 1.0);
        assert_eq!(
            t.to_json()["attributes"],
            serde_json::json!({"latency": 0, "jitter": 0})
        );
        let up = serde_json::json!({"type": "bandwidth", "stream": "UpStream", "x": 1});
        let t = Toxic::create(2, &object(up)).unwrap();
        assert_eq!(t.name, "bandwidth_upstream");
    }

    #[test]
    fn refusals_say_what_is_wrong() {
        let bad = |v: Value| match Toxic::create(1, &object(v)) {
            Err(Refused::Bad(m)) => m,
            Ok(t) => panic!("accepted {t:?}"),
        };
        assert!(bad(serde_json::json!({"type": "nope"})).starts_with("invalid toxic type"));
        assert!(
            bad(serde_json::json!({"type": "latency", "stream": "sideways"}))
                .starts_with("stream was invalid")
        );
        assert!(bad(serde_json::json!({"type": "latency", "toxicity": 1.5})).contains("toxicity"));
        let m = bad(serde_json::json!({"type": "latency", "attributes": {"latency": -1}}));
        assert!(m.contains("latency must be from 0"), "{m}");
        let m = bad(serde_json::json!({"type": "latency", "attributes": {"latency": "9"}}));
        assert!(m.starts_with("bad request body"), "{m}");
        let m = bad(serde_json::json!({"type": "slicer", "attributes": {"average_size": 0}}));
        assert!(m.contains("average_size"), "{m}");
    }

    #[test]
    fn an_update_merges_attributes_and_keeps_the_rest() {
        let body = serde_json::json!({"type": "latency", "name": "l", "attributes": {"latency": 5, "jitter": 2}, "toxicity": 0.5});
        let t = Toxic::create(1, &object(body)).unwrap();
        let u = t
            .updated(&object(serde_json::json!({"attributes": {"latency": 9}})))
            .unwrap();
        assert_eq!(
            u.kind,
            Kind::Latency(Latency {
                latency: 9,
                jitter: 2
            })
        );
        assert_eq!((u.toxicity, u.name.as_str(), u.id), (0.5, "l", 1));
    }
}
