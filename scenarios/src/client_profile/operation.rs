//! The operation under test in a client profile (`operation:`): which of the client's requests
//! are judged, as written and resolved.

use serde::{Deserialize, Serialize};

use crate::load::{LoadErrors, Spanned};
use crate::rules::HttpMethod;

/// The requests that are the operation under test.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OperationSpec {
    /// The method (default `POST`).
    #[serde(default)]
    pub method: Option<HttpMethod>,
    /// The path without the query, exact (`/v1/customers`) or a glob where `*` stands for one
    /// segment (`/v1/servers/*/actions`); omitted, any path.
    #[serde(default)]
    pub path: Option<Spanned<String>>,
}

impl OperationSpec {
    /// A path, where given, that starts with `/`.
    pub(super) fn check(&self, errors: &mut LoadErrors) {
        if let Some(path) = &self.path {
            if !path.value.starts_with('/') {
                errors.at(
                    &path.referenced,
                    format!("operation.path `{}` must start with `/`", path.value),
                );
            }
        }
    }
}

/// The operation's method and path pattern, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationMatch {
    /// The method, e.g. `POST`.
    pub method: HttpMethod,
    /// The path pattern; `None` for any path.
    pub path: Option<String>,
}

impl OperationMatch {
    /// Whether `path` (without its query) is a glob (`*` in it) rather than an exact path.
    pub fn is_glob(&self) -> bool {
        self.path.as_deref().is_some_and(|p| p.contains('*'))
    }
}
