//! The path of one resource (`get.path`, `delete.path`, `action.path`): a [`Template`] with the
//! resource's id in it as an RFC 6570 expression, `{id}` (simple expansion: the id as one path
//! segment, every byte but the unreserved ones percent-encoded, as OpenAPI sends a path parameter)
//! or `{+id}` (reserved expansion, narrowed to a path: `/` and the other characters a path segment
//! may hold kept, for an id that is a resource name such as `projects/p1/machines/m2`; `?`, `#`, `[`
//! and `]`, which RFC 6570 keeps, are encoded, since they would end the path).

use serde::{Deserialize, Deserializer, Serialize};

use crate::template::{Template, TemplateVars};

/// A resource path as written in a profile; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ResourcePath(Template);

/// `{id}`: RFC 6570 simple string expansion.
const SIMPLE: &str = "{id}";
/// `{+id}`: RFC 6570 reserved expansion.
const RESERVED: &str = "{+id}";

impl ResourcePath {
    /// The path as written.
    pub fn source(&self) -> &str {
        self.0.source()
    }

    /// The template under the id's expansion (its placeholders).
    pub fn template(&self) -> &Template {
        &self.0
    }

    /// Whether the path names the id (`{id}` or `{+id}`); a profile's loader refuses one that
    /// does not.
    pub fn has_id(&self) -> bool {
        self.source().contains(SIMPLE) || self.source().contains(RESERVED)
    }

    /// The path for the resource `id`: the template rendered with `vars` (its `{{marker}}` and
    /// the rest), then each `{id}` and `{+id}` expanded (RFC 6570 §3.2.2, and §3.2.3 narrowed to
    /// RFC 3986's path characters). Characters of the template itself are left as written.
    pub fn render(
        &self,
        vars: &TemplateVars<'_>,
        uuid: impl FnMut() -> String,
        id: &str,
    ) -> String {
        self.0
            .render(vars, uuid)
            .replace(RESERVED, &expand(id, true))
            .replace(SIMPLE, &expand(id, false))
    }
}

impl<'de> Deserialize<'de> for ResourcePath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::template::path(deserializer).map(Self)
    }
}

/// `id` percent-encoded as RFC 6570 expands a value: unreserved characters (`A-Z a-z 0-9 - . _
/// ~`) as they are, and with `reserved` also the others a path may hold (RFC 3986 `pchar` and `/`:
/// `: @ ! $ & ' ( ) * + , ; = /`) and `%XX` triplets already encoded; every other byte of its UTF-8
/// as `%XX`.
fn expand(id: &str, reserved: bool) -> String {
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(id.len());
    for (i, &b) in bytes.iter().enumerate() {
        let unreserved = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
        let kept_reserved = reserved
            && (b":/@!$&'()*+,;=".contains(&b)
                || (b == b'%'
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)));
        if unreserved || kept_reserved {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(source: &str) -> ResourcePath {
        ResourcePath(Template::parse(source).expect("a template"))
    }

    fn render(source: &str, id: &str) -> String {
        let vars = TemplateVars::new("m0123456789", 1);
        path(source).render(&vars, || "u".into(), id)
    }

    #[test]
    fn a_simple_id_is_one_segment() {
        assert_eq!(render("/v1/w/{id}", "w-1.a_b~"), "/v1/w/w-1.a_b~");
        assert_eq!(
            render("/v1/w/{id}/reboot", "a/b?c#d e%41é"),
            "/v1/w/a%2Fb%3Fc%23d%20e%2541%C3%A9/reboot"
        );
        assert_eq!(render("/v1/w/{id}", ".."), "/v1/w/..");
    }

    #[test]
    fn a_reserved_id_keeps_its_slashes_and_its_encoded_triplets() {
        assert_eq!(
            render("/v1/{+id}", "projects/p1/machines/m 2%41%zz"),
            "/v1/projects/p1/machines/m%202%41%25zz"
        );
    }

    #[test]
    fn a_reserved_id_cannot_end_the_path() {
        assert_eq!(
            render("/v1/{+id}/restart", "p/2?q#frag[0]"),
            "/v1/p/2%3Fq%23frag%5B0%5D/restart"
        );
    }

    #[test]
    fn placeholders_are_rendered_and_the_template_is_kept_as_written() {
        assert_eq!(
            render("/t/{{marker}}/m/{id}?x=%20", "a b"),
            "/t/m0123456789/m/a%20b?x=%20"
        );
        assert!(path("/t/{+id}").has_id() && path("/t/{id}").has_id());
        assert!(!path("/t/{ id }").has_id());
    }
}
