//! The `Idempotency-Key` header: 1–255 visible ASCII characters, bare or as an RFC 8941 sf-string.
//!
//! Source: draft-ietf-httpapi-idempotency-key-header-07 §2.1 (the header is an sf-string) and the
//! article's contract (bare opaque keys such as UUIDs or `order-17` are accepted too).

use http::HeaderMap;

/// The header name.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The longest accepted key, in characters (after sf-string unquoting).
pub const MAX_KEY_LEN: usize = 255;

/// A validated, unquoted Idempotency-Key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

/// Why a key was rejected (rendered as a 400 `invalid-idempotency-key` problem).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The header was sent more than once.
    #[error("the Idempotency-Key header was sent more than once")]
    Repeated,
    /// Empty value (or an empty sf-string `""`).
    #[error("the Idempotency-Key is empty")]
    Empty,
    /// Longer than [`MAX_KEY_LEN`].
    #[error("the Idempotency-Key is {0} characters long; the limit is 255")]
    TooLong(usize),
    /// A byte outside visible ASCII (or outside printable ASCII inside an sf-string).
    #[error("the Idempotency-Key must be visible ASCII; found byte 0x{0:02x}")]
    InvalidByte(u8),
    /// A value starting with `"` that is not a well-formed sf-string.
    #[error(
        "the Idempotency-Key looks like a quoted string but is not a valid RFC 8941 sf-string"
    )]
    BadSfString,
}

impl IdempotencyKey {
    /// Parses one header value: an sf-string (`"…"`, with `\"` and `\\` escapes) is unquoted;
    /// anything else must be 1–255 visible ASCII characters (0x21–0x7E).
    pub fn parse(raw: &[u8]) -> Result<Self, KeyError> {
        let key = if raw.first() == Some(&b'"') {
            unquote_sf_string(raw)?
        } else {
            if let Some(&b) = raw.iter().find(|b| !(0x21..=0x7e).contains(*b)) {
                return Err(KeyError::InvalidByte(b));
            }
            String::from_utf8(raw.to_vec()).map_err(|_| KeyError::BadSfString)?
        };
        if key.is_empty() {
            return Err(KeyError::Empty);
        }
        if key.len() > MAX_KEY_LEN {
            return Err(KeyError::TooLong(key.len()));
        }
        Ok(Self(key))
    }

    /// Reads the key from `headers`: `Ok(None)` when absent.
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<Self>, KeyError> {
        let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
        let Some(first) = values.next() else {
            return Ok(None);
        };
        if values.next().is_some() {
            return Err(KeyError::Repeated);
        }
        Self::parse(first.as_bytes()).map(Some)
    }

    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// RFC 8941 §4.2.5: DQUOTE *(unescaped / "\" ( DQUOTE / "\" )) DQUOTE, unescaped = %x20-21 / %x23-5B / %x5D-7E.
fn unquote_sf_string(raw: &[u8]) -> Result<String, KeyError> {
    let inner = raw
        .strip_prefix(b"\"")
        .and_then(|r| r.strip_suffix(b"\""))
        .ok_or(KeyError::BadSfString)?;
    let mut out = String::with_capacity(inner.len());
    let mut bytes = inner.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'\\' => match bytes.next() {
                Some(&e @ (b'"' | b'\\')) => out.push(char::from(e)),
                _ => return Err(KeyError::BadSfString),
            },
            b'"' => return Err(KeyError::BadSfString),
            0x20..=0x7e => out.push(char::from(b)),
            other => return Err(KeyError::InvalidByte(other)),
        }
    }
    Ok(out)
}

/// A key that does not parse is 400 `invalid-idempotency-key`, saying why.
impl From<KeyError> for crate::edge::ApiError {
    fn from(e: KeyError) -> Self {
        Self::InvalidKey(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_bare_and_quoted() {
        assert_eq!(
            IdempotencyKey::parse(b"order-17").unwrap().as_str(),
            "order-17"
        );
        assert_eq!(
            IdempotencyKey::parse(b"\"order-17\"").unwrap().as_str(),
            "order-17"
        );
        assert_eq!(
            IdempotencyKey::parse(br#""a\"b\\c""#).unwrap().as_str(),
            r#"a"b\c"#
        );
        assert_eq!(IdempotencyKey::parse(b"\"a b\"").unwrap().as_str(), "a b");
    }

    #[test]
    fn rejects_invalid() {
        assert_eq!(IdempotencyKey::parse(b""), Err(KeyError::Empty));
        assert_eq!(IdempotencyKey::parse(b"\"\""), Err(KeyError::Empty));
        assert_eq!(
            IdempotencyKey::parse(&[b'k'; 256]),
            Err(KeyError::TooLong(256))
        );
        assert!(IdempotencyKey::parse(&[b'k'; 255]).is_ok());
        assert_eq!(
            IdempotencyKey::parse("clé".as_bytes()),
            Err(KeyError::InvalidByte(0xc3))
        );
        assert_eq!(
            IdempotencyKey::parse(b"a b"),
            Err(KeyError::InvalidByte(b' '))
        );
        assert_eq!(IdempotencyKey::parse(b"\"open"), Err(KeyError::BadSfString));
        assert_eq!(
            IdempotencyKey::parse(br#""bad\n""#),
            Err(KeyError::BadSfString)
        );
        assert_eq!(
            IdempotencyKey::parse(br#""a"b""#),
            Err(KeyError::BadSfString)
        );
    }

    proptest! {
        #[test]
        fn bare_visible_ascii_round_trips(key in "[!-~]{1,255}") {
            prop_assume!(!key.starts_with('"'));
            let parsed = IdempotencyKey::parse(key.as_bytes()).unwrap();
            prop_assert_eq!(parsed.as_str(), key.as_str());
        }

        #[test]
        fn sf_string_quoting_round_trips(key in "[ -~]{1,200}") {
            let quoted = format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""));
            let parsed = IdempotencyKey::parse(quoted.as_bytes()).unwrap();
            prop_assert_eq!(parsed.as_str(), key.as_str());
        }

        /// Any bytes: no panic; an accepted key is 1–255 printable ASCII characters, and its
        /// sf-string form parses back to it (so a client may always send the quoted form).
        #[test]
        fn accepted_keys_are_bounded_printable_and_quotable(
            quoted in any::<bool>(),
            inner in proptest::collection::vec(prop_oneof![3 => 0x20_u8..=0x7e, 1 => any::<u8>()], 0..300),
        ) {
            // Mostly printable bytes, half of the time between quotes, so many are accepted.
            let raw = if quoted { [&b"\""[..], &inner, b"\""].concat() } else { inner };
            let Ok(key) = IdempotencyKey::parse(&raw) else {
                return Ok(());
            };
            let key = key.as_str();
            prop_assert!((1..=MAX_KEY_LEN).contains(&key.len()));
            prop_assert!(key.bytes().all(|b| (0x20..=0x7e).contains(&b)));
            let quoted = format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""));
            prop_assert_eq!(IdempotencyKey::parse(quoted.as_bytes()).map(|k| k.0), Ok(key.to_owned()));
        }

        /// A bare key (not starting with `"`) is accepted exactly when it is 1–255 visible ASCII
        /// characters, and then unchanged.
        #[test]
        fn bare_keys_are_accepted_exactly_when_visible_ascii(
            raw in proptest::collection::vec(prop_oneof![0x21_u8..=0x7e, any::<u8>()], 0..300),
        ) {
            prop_assume!(raw.first() != Some(&b'"'));
            let valid = (1..=MAX_KEY_LEN).contains(&raw.len())
                && raw.iter().all(|b| (0x21..=0x7e).contains(b));
            let parsed = IdempotencyKey::parse(&raw);
            prop_assert_eq!(parsed.is_ok(), valid, "{:?}", parsed);
            if let Ok(key) = parsed {
                prop_assert_eq!(key.as_str().as_bytes(), &raw[..]);
            }
        }
    }
}
