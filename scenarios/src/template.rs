//! Body and path templates: `{{marker}}`, `{{uuid}}` and `{{variant}}` placeholders, checked at load
//! time so a template that cannot render is a located configuration error, not a run-time surprise.

use serde::{Deserialize, Deserializer, Serialize};

/// The values a template is rendered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateVars<'a> {
    /// Unique per check run (e.g. `m3f9a01c2`), so resources a check created can be counted by label.
    pub marker: &'a str,
    /// The body variant: `1` for the default request, `2` for the one that differs (fingerprint checks).
    pub variant: u32,
}

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Marker,
    Uuid,
    Variant,
}

/// A parsed template. Placeholders: `{{marker}}` (the check's marker), `{{uuid}}` (a fresh v4 UUID per
/// rendering), `{{variant}}` (`1` or `2`). Anything else inside `{{ }}` is rejected at load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    pieces: Vec<Piece>,
}

/// Why a template does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{{name}}` with a name not in the vocabulary.
    #[error("unknown placeholder `{{{{{0}}}}}`; expected one of {{{{marker}}}}, {{{{uuid}}}}, {{{{variant}}}}")]
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
                other => return Err(TemplateError::UnknownPlaceholder(other.to_owned())),
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
        let vars = TemplateVars {
            marker: "m1",
            variant: 2,
        };
        assert_eq!(
            t.render(&vars, || "U".into()),
            r#"{"l":"m1","v":2,"u":"U"}"#
        );
        assert!(t.has_variant());
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
