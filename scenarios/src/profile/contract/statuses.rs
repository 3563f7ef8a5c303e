//! The status fields of a contract as a profile writes them: one code or a list of them
//! (`mismatch_status: [409, 423]`, `replay_status`), and the answers a layer stores, codes or
//! classes (`stores: [2xx, 4xx]`), each read with an error that names the value.

use serde::{Deserialize as _, Serialize};

use crate::load::Spanned;

/// Reads a contract's refusal statuses: one code (`422`) or a non-empty list (`[409, 423]`), each
/// a 4xx or 5xx, since each names how the API refuses a request; a null keeps the preset's.
///
/// # Errors
/// A message naming the value: a class such as `4xx` (the codes themselves are needed), a number
/// that is no HTTP status, a code below 400, or an empty list.
pub(super) fn refusals<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<u16>>, D::Error> {
    status_codes(d, |c| match c {
        400..=599 => Ok(()),
        _ => Err(format!(
            "{c} is not a refusal: these statuses say how the API refuses a request, a 4xx or \
             5xx such as 409 or 422"
        )),
    })
}

/// Reads `replay_status`: one code or a non-empty list, each a 2xx or 4xx (a replay of a success,
/// answered as a success or under a client error such as `409`); a null keeps the preset's.
///
/// # Errors
/// As [`refusals`], and a code that is a 1xx, 3xx or 5xx (a 5xx says the server failed, which
/// no replay of a success is).
pub(super) fn replay_statuses<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Spanned<Vec<u16>>>, D::Error> {
    /// The codes, inside the position the parser records around them.
    #[derive(serde::Deserialize)]
    struct Codes(#[serde(deserialize_with = "replay_status_codes")] Option<Vec<u16>>);
    let read = Option::<Spanned<Codes>>::deserialize(d)?;
    Ok(read.and_then(|s| Some(Spanned::new(s.value.0?, s.referenced, s.defined))))
}

/// Reads the statuses a documented deviation answers with (`documented[].answer`): one code
/// (`422`) or a non-empty list (`[404, 422]`), each a 3xx, 4xx or 5xx; a null is `None`.
///
/// # Errors
/// As [`refusals`], and a 1xx or 2xx: every check's first requests get a 2xx, so one would mark
/// any failure of the check as the documented one.
pub(crate) fn deviation_statuses<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<u16>>, D::Error> {
    status_codes(d, |c| match c {
        300..=599 => Ok(()),
        _ => Err(format!(
            "{c} cannot mark a deviation: every check's first requests get a 2xx, so it would \
             mark any failure; give the deviation's own status (a 3xx, 4xx or 5xx), or leave \
             `answer` out (a deviation answered with a success, such as the original's answer \
             to a changed request, is the contract's to declare: `mismatch_answer: original`)"
        )),
    })
}

/// The codes of [`replay_statuses`], without their position.
fn replay_status_codes<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<u16>>, D::Error> {
    status_codes(d, |c| match c {
        200..=299 | 400..=499 => Ok(()),
        _ => Err(format!(
            "{c} is not a status a replay of a success comes under: expected a 2xx or 4xx such \
             as 200 or 409"
        )),
    })
}

/// One code (`422`) or a non-empty list of them (`[409, 423]`), each an HTTP status that
/// `allowed` accepts (its error says why not); a null is `None`.
fn status_codes<'de, D: serde::Deserializer<'de>>(
    d: D,
    allowed: fn(u16) -> Result<(), String>,
) -> Result<Option<Vec<u16>>, D::Error> {
    let code = move |v: &str| match v.trim().parse::<i128>() {
        Ok(n) => match u16::try_from(n) {
            Ok(c @ 100..=599) => allowed(c).map(|()| c),
            _ => Err(format!(
                "{n} is not an HTTP status code (100-599); expected a code such as 409"
            )),
        },
        Err(_) => Err(format!(
            "`{v}` is not a status code; list the codes themselves, e.g. [409, 423]"
        )),
    };
    one_or_list(
        d,
        ListForm {
            parse: code,
            one: "a status code such as 409",
            many: "a status code such as 422, or a list of them such as [409, 423]",
            empty: "an empty list: give at least one status code",
        },
    )
}

/// How [`one_or_list`] reads an element (a number is read as its decimal text), and what it says
/// it expected.
#[derive(Clone, Copy)]
struct ListForm<P> {
    /// An element from its text; the error names the value.
    parse: P,
    /// What one element looks like.
    one: &'static str,
    /// What the whole value looks like.
    many: &'static str,
    /// The error for an empty list.
    empty: &'static str,
}

/// One element or a non-empty list of them, each read as `form` says, duplicates dropped; a null
/// is `None` (the preset's value stands).
fn one_or_list<'de, D, T, P>(d: D, form: ListForm<P>) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: PartialEq,
    P: Fn(&str) -> Result<T, String> + Copy,
{
    use serde::de::{Error, SeqAccess, Visitor};
    /// One element, where a list element is expected.
    struct One<P>(ListForm<P>);
    impl<'de, T, P: Fn(&str) -> Result<T, String> + Copy> serde::de::DeserializeSeed<'de> for One<P> {
        type Value = T;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<T, P: Fn(&str) -> Result<T, String> + Copy> Visitor<'_> for One<P> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.0.one)
        }
        fn visit_u64<E: Error>(self, n: u64) -> Result<T, E> {
            (self.0.parse)(&n.to_string()).map_err(E::custom)
        }
        fn visit_i64<E: Error>(self, n: i64) -> Result<T, E> {
            (self.0.parse)(&n.to_string()).map_err(E::custom)
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<T, E> {
            (self.0.parse)(v).map_err(E::custom)
        }
    }
    /// The whole form.
    struct Many<P>(ListForm<P>);
    impl<'de, T: PartialEq, P: Fn(&str) -> Result<T, String> + Copy> Visitor<'de> for Many<P> {
        type Value = Option<Vec<T>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.0.many)
        }
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: Error>(self, n: u64) -> Result<Self::Value, E> {
            One(self.0).visit_u64(n).map(|t| Some(vec![t]))
        }
        fn visit_i64<E: Error>(self, n: i64) -> Result<Self::Value, E> {
            One(self.0).visit_i64(n).map(|t| Some(vec![t]))
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
            One(self.0).visit_str(v).map(|t| Some(vec![t]))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(t) = seq.next_element_seed(One(self.0))? {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
            if out.is_empty() {
                return Err(A::Error::custom(self.0.empty));
            }
            Ok(Some(out))
        }
    }
    d.deserialize_any(Many(form))
}

/// A status, or a class of them, that an idempotency layer stores and replays
/// (`contract.stores`): `201`, or `4xx`. Written as a number or a string (`"201"`, `2xx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredStatus {
    /// One status code, 200–599.
    Code(u16),
    /// A class: 2 (`2xx`), 4 (`4xx`) or 5 (`5xx`).
    Class(u8),
}

impl StoredStatus {
    /// Whether it is a 5xx, or the 5xx class.
    pub fn is_5xx(self) -> bool {
        match self {
            Self::Code(c) => (500..=599).contains(&c),
            Self::Class(c) => c == 5,
        }
    }

    /// `text` as a stored status: `2xx`/`4xx`/`5xx`, or a code 200–599 other than a 3xx.
    ///
    /// # Errors
    /// What was expected, naming `text`.
    fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let class = match t.to_ascii_lowercase().as_str() {
            "2xx" => Some(2),
            "4xx" => Some(4),
            "5xx" => Some(5),
            _ => None,
        };
        if let Some(class) = class {
            return Ok(Self::Class(class));
        }
        match t.parse::<u16>() {
            Ok(c @ (200..=299 | 400..=599)) => Ok(Self::Code(c)),
            _ => Err(format!(
                "`{text}` is not an answer a layer stores: expected a class (`2xx`, `4xx`, \
                 `5xx`) or a 2xx, 4xx or 5xx code such as 201"
            )),
        }
    }
}

impl std::fmt::Display for StoredStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(c) => write!(f, "{c}"),
            Self::Class(c) => write!(f, "{c}xx"),
        }
    }
}

impl Serialize for StoredStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Reads `stores`: one stored status or a non-empty list of them; a null keeps the preset's.
///
/// # Errors
/// A message naming the value ([`StoredStatus::parse`]), or an empty list.
pub(super) fn stored_statuses<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<StoredStatus>>, D::Error> {
    one_or_list(
        d,
        ListForm {
            parse: StoredStatus::parse,
            one: "a status class such as 2xx or a code such as 201",
            many: "a status class or code, or a list of them such as [2xx, 4xx]",
            empty: "an empty list: a layer that stores nothing keeps no key; list what it \
                    stores, e.g. [2xx]",
        },
    )
}
