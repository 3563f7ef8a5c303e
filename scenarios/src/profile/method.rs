//! HTTP methods and media types as a profile writes them: the method read as it is sent, and the
//! defaults of the fields that take one.

use serde::Deserialize;

/// Reads an HTTP method as it is sent: a token of upper-case letters (and `-`), such as `POST`
/// or `PURGE`; methods are case-sensitive (RFC 9110 §9.1) and the standard ones upper case, so
/// `post` would be sent as another method.
///
/// # Errors
/// A message naming the value: empty, lower case, or with a character no method has.
pub(super) fn http_method<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let m = String::deserialize(d)?;
    if m.is_empty() {
        return Err(serde::de::Error::custom(
            "an empty method: give one such as `POST`",
        ));
    }
    if m.len() > 32 || !m.bytes().all(|b| b.is_ascii_uppercase() || b == b'-') {
        let hint = if m.bytes().any(|b| b.is_ascii_lowercase()) {
            format!(
                ": methods are case-sensitive, the standard ones upper case (`{}`)",
                m.to_ascii_uppercase()
            )
        } else {
            String::new()
        };
        return Err(serde::de::Error::custom(format!(
            "`{m}` is no HTTP method as sent{hint}; give one such as `POST`"
        )));
    }
    Ok(m)
}

/// `POST`, a field's default.
pub(super) fn post() -> String {
    "POST".into()
}
/// `GET`, a field's default.
pub(super) fn get() -> String {
    "GET".into()
}
/// `DELETE`, a field's default.
pub(super) fn delete() -> String {
    "DELETE".into()
}
/// `application/json`, a field's default.
pub(super) fn json() -> String {
    "application/json".into()
}

/// A media type's essence (RFC 9110 §8.3.1): its type and subtype in lower case, without
/// parameters (`application/json; charset=utf-8` is `application/json`).
pub(super) fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}
