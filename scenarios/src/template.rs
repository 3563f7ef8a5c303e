//! Body and path templates: `{{marker}}`, `{{uuid}}`, `{{variant}}`, `{{key_name}}` and
//! `{{principal.NAME}}` placeholders, checked at load time so a template that cannot render is a
//! located configuration error, not a run-time surprise.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest, Sha256};

/// No principal variables.
static NO_VARS: BTreeMap<String, String> = BTreeMap::new();

/// The values a template is rendered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateVars<'a> {
    /// Unique per check run (e.g. `m3f9a01c2`), so resources a check created can be counted by label.
    pub marker: &'a str,
    /// The body variant: `1` for the default request, `2` for the one that differs (fingerprint checks).
    pub variant: u32,
    /// The variables of the principal the request is sent as (`{{principal.NAME}}`).
    pub principal: &'a BTreeMap<String, String>,
    /// The request's idempotency key, if it carries one (`{{key_name}}`).
    pub key: Option<&'a str>,
}

impl<'a> TemplateVars<'a> {
    /// `marker` and `variant`, as no principal in particular and without a key.
    pub fn new(marker: &'a str, variant: u32) -> Self {
        Self {
            marker,
            variant,
            principal: &NO_VARS,
            key: None,
        }
    }

    /// As the principal whose variables are `vars`.
    pub fn as_principal(mut self, vars: &'a BTreeMap<String, String>) -> Self {
        self.principal = vars;
        self
    }

    /// For a request carrying `key`.
    pub fn with_key(mut self, key: Option<&'a str>) -> Self {
        self.key = key;
        self
    }
}

/// The resource name `{{key_name}}` stands for: `r` and 20 hex digits of the SHA-256 of `key`, so
/// a retry (same key) names the same resource and two keys never one, in the characters every
/// naming rule accepts (Google Cloud's `[a-z]([-a-z0-9]*[a-z0-9])?`, DNS labels).
pub fn key_name(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    format!("r{}", &hex_of(&digest)[..20])
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Marker,
    Uuid,
    Variant,
    KeyName,
    Principal(String),
}

/// A parsed template. Placeholders: `{{marker}}` (the check's marker), `{{uuid}}` (a fresh v4 UUID per
/// rendering), `{{variant}}` (`1` or `2`), `{{key_name}}` (a resource name derived from the
/// request's key: the same across its retries, different for another key; a fresh one for a
/// request without a key), `{{principal.NAME}}` (a variable of the principal the request is sent
/// as, such as its project; the profile's loader checks every principal defines it). Anything else
/// inside `{{ }}` is rejected at load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    pieces: Vec<Piece>,
}

/// Why a template does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{{name}}` with a name not in the vocabulary.
    #[error("unknown placeholder `{{{{{0}}}}}`; expected one of {{{{marker}}}}, {{{{uuid}}}}, {{{{variant}}}}, {{{{key_name}}}}, {{{{principal.NAME}}}}")]
    UnknownPlaceholder(String),
    /// `{{` without its `}}`.
    #[error("unclosed placeholder: `{{{{` without `}}}}`")]
    Unclosed,
}

impl Template {
    /// Parses a template string.
    ///
    /// # Errors
    /// [`TemplateError`] for an unknown placeholder or an unclosed `{{`.
    pub fn parse(source: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut rest = source;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                pieces.push(Piece::Text(rest[..start].to_owned()));
            }
            let after = &rest[start + 2..];
            let end = after.find("}}").ok_or(TemplateError::Unclosed)?;
            let name = after[..end].trim();
            pieces.push(match name {
                "marker" => Piece::Marker,
                "uuid" => Piece::Uuid,
                "variant" => Piece::Variant,
                "key_name" => Piece::KeyName,
                other => match other.strip_prefix("principal.") {
                    Some(var)
                        if !var.is_empty()
                            && var
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
                    {
                        Piece::Principal(var.to_owned())
                    }
                    _ => return Err(TemplateError::UnknownPlaceholder(other.to_owned())),
                },
            });
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Self {
            source: source.to_owned(),
            pieces,
        })
    }

    /// The template as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The principal variables the template uses (`{{principal.NAME}}`), each once.
    pub fn principal_vars(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for piece in &self.pieces {
            if let Piece::Principal(name) = piece {
                if !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// Whether the template uses `{{key_name}}` (it names what it creates after the key).
    pub fn has_key_name(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::KeyName))
    }

    /// Whether the template uses `{{variant}}` (so a differing body can be rendered).
    pub fn has_variant(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Variant))
    }

    /// Renders the template; `uuid` supplies a fresh UUID string for each `{{uuid}}`.
    pub fn render(&self, vars: &TemplateVars<'_>, mut uuid: impl FnMut() -> String) -> String {
        let mut out = String::with_capacity(self.source.len() + 16);
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Marker => out.push_str(vars.marker),
                Piece::Uuid => out.push_str(&uuid()),
                Piece::Variant => out.push_str(&vars.variant.to_string()),
                // The marker too, so a key that is the same in every run (the empty key, a raw
                // one) names a resource of this run only.
                Piece::KeyName => match vars.key {
                    Some(key) => out.push_str(&key_name(&format!("{}\n{key}", vars.marker))),
                    None => out.push_str(&key_name(&uuid())),
                },
                Piece::Principal(name) => {
                    out.push_str(vars.principal.get(name).map_or("", String::as_str));
                }
            }
        }
        out
    }
}

impl<'de> Deserialize<'de> for Template {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Template::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Template {
    /// Parses a request path template, which is appended to each base URL and so must start with
    /// `/`.
    ///
    /// # Errors
    /// As [`Template::parse`], and a path that does not start with `/`.
    pub fn parse_path(source: &str) -> Result<Self, String> {
        if !source.starts_with('/') {
            return Err(format!(
                "path `{source}` must start with `/` (it is appended to each base URL)"
            ));
        }
        Template::parse(source).map_err(|e| e.to_string())
    }
}

/// Deserializes a request path template ([`Template::parse_path`]); for `#[serde(deserialize_with)]`.
///
/// # Errors
/// The parse error, located by the loader.
pub fn path<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Template, D::Error> {
    let text = String::deserialize(deserializer)?;
    Template::parse_path(&text).map_err(serde::de::Error::custom)
}

/// As [`path`], for an optional one.
///
/// # Errors
/// The parse error, located by the loader.
pub fn optional_path<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Template>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| Template::parse_path(&text).map_err(serde::de::Error::custom))
        .transpose()
}

impl Serialize for Template {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_all_placeholders() {
        let t = Template::parse(r#"{"l":"{{marker}}","v":{{variant}},"u":"{{ uuid }}"}"#).unwrap();
        let vars = TemplateVars::new("m1", 2);
        assert_eq!(
            t.render(&vars, || "U".into()),
            r#"{"l":"m1","v":2,"u":"U"}"#
        );
        assert!(t.has_variant());
    }

    #[test]
    fn a_principal_s_variables_and_a_key_s_name_render_per_request() {
        let t =
            Template::parse("/projects/{{principal.project}}/instances?n={{key_name}}").unwrap();
        assert_eq!(t.principal_vars(), ["project"]);
        let vars: BTreeMap<String, String> = [("project".to_owned(), "p-1".to_owned())].into();
        let render = |key| {
            t.render(
                &TemplateVars::new("m", 1).as_principal(&vars).with_key(key),
                || "fresh".into(),
            )
        };
        let (a, again, b) = (render(Some("k1")), render(Some("k1")), render(Some("k2")));
        assert!(a.starts_with("/projects/p-1/instances?n=r"), "{a}");
        assert_eq!(a, again, "a retry names the same resource");
        assert_ne!(a, b, "another key names another");
        assert_eq!(
            render(None),
            format!("/projects/p-1/instances?n={}", key_name("fresh"))
        );
        for bad in ["{{principal.}}", "{{principal.a b}}", "{{principal}}"] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_unknown_and_unclosed() {
        assert_eq!(
            Template::parse("{{markr}}").unwrap_err(),
            TemplateError::UnknownPlaceholder("markr".into())
        );
        assert_eq!(
            Template::parse("a {{marker").unwrap_err(),
            TemplateError::Unclosed
        );
        assert!(TemplateError::UnknownPlaceholder("x".into())
            .to_string()
            .contains("`{{x}}`"));
    }
}
