//! Bearer-token authentication: `Authorization: Bearer TOKEN` → [`Principal`].
//!
//! Tokens map to principals from `--tokens FILE` (YAML `tokens: {TOKEN: PRINCIPAL}`); with `--dev` any
//! token is its own principal. A missing or unknown token is 401.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header;

use crate::edge::ApiError;

/// The longest bearer token and principal accepted, in bytes. The principal is part of the idempotency
/// record's primary key (and under `--dev` it is the token): PostgreSQL refuses index rows over
/// 2704 bytes, so an unbounded token would be a 500 instead of a 401.
pub const MAX_TOKEN_LEN: usize = 1024;

/// The authenticated caller; idempotency records and workers are scoped to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

/// How tokens are checked.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Any bearer token is its own principal (`--dev`; never in production).
    Dev,
    /// Only these tokens, each mapped to a principal.
    Tokens(BTreeMap<String, String>),
}

/// The `--tokens` file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    tokens: BTreeMap<String, String>,
}

/// A `--tokens` file that could not be used; displayed as `FILE:LINE:COLUMN: message`.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// The file could not be read.
    #[error("read {file}")]
    Read {
        /// The path.
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The YAML is malformed or has the wrong shape.
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        /// The path.
        file: String,
        /// 1-based line (0 when unknown).
        line: u64,
        /// 1-based column (0 when unknown).
        column: u64,
        /// What was wrong.
        message: String,
    },
    /// A token or principal is empty.
    #[error("{file}: tokens and principals must be non-empty")]
    Empty {
        /// The path.
        file: String,
    },
    /// A token or principal is longer than [`MAX_TOKEN_LEN`].
    #[error("{file}: tokens and principals must be at most {MAX_TOKEN_LEN} bytes")]
    TooLong {
        /// The path.
        file: String,
    },
}

impl Auth {
    /// Loads a tokens file.
    pub fn from_file(path: &Path) -> Result<Self, TokensError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TokensError::Read {
            file: file.clone(),
            source,
        })?;
        Self::from_yaml(&file, &text)
    }

    /// Parses tokens YAML (`file` names it in errors).
    pub fn from_yaml(file: &str, text: &str) -> Result<Self, TokensError> {
        let parsed: TokensFile = serde_saphyr::from_str(text).map_err(|err| {
            let (line, column) = err
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            let rendered = err.to_string();
            let first = rendered.lines().next().unwrap_or_default();
            // serde-saphyr renders "error: line L column C: MESSAGE"; keep MESSAGE.
            let message = first
                .split_once(": ")
                .and_then(|(_, rest)| rest.split_once(": ").map(|(_, m)| m))
                .unwrap_or(first)
                .to_owned();
            TokensError::Parse {
                file: file.to_owned(),
                line,
                column,
                message,
            }
        })?;
        if parsed
            .tokens
            .iter()
            .any(|(t, p)| t.is_empty() || p.is_empty())
        {
            return Err(TokensError::Empty {
                file: file.to_owned(),
            });
        }
        if parsed
            .tokens
            .iter()
            .any(|(t, p)| t.len() > MAX_TOKEN_LEN || p.len() > MAX_TOKEN_LEN)
        {
            return Err(TokensError::TooLong {
                file: file.to_owned(),
            });
        }
        Ok(Self::Tokens(parsed.tokens))
    }

    /// The principal for a bearer `token`, if accepted.
    pub fn principal(&self, token: &str) -> Option<Principal> {
        match self {
            Self::Dev => Some(Principal(token.to_owned())),
            Self::Tokens(map) => map.get(token).cloned().map(Principal),
        }
    }
}

/// Middleware: resolves the bearer token (at most [`MAX_TOKEN_LEN`] bytes) to a [`Principal`] in request
/// extensions, or answers 401.
/// Two `Authorization` headers are refused: a proxy in front may check one while this server would
/// use the other.
pub async fn authenticate(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let mut values = req.headers().get_all(header::AUTHORIZATION).iter();
    let (first, second) = (values.next(), values.next());
    if second.is_some() {
        return ApiError::Unauthorized("the Authorization header was sent more than once")
            .into_response();
    }
    let token = first
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return ApiError::Unauthorized("missing bearer token").into_response();
    };
    if token.len() > MAX_TOKEN_LEN {
        return ApiError::Unauthorized("the bearer token is longer than 1024 bytes")
            .into_response();
    }
    let Some(principal) = auth.principal(token) else {
        return ApiError::Unauthorized("unknown bearer token").into_response();
    };
    req.extensions_mut().insert(principal);
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_file_errors_are_located() {
        let err = Auth::from_yaml("t.yaml", "tokens:\n  a: alice\ntokns: {}\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("t.yaml:3:1: "), "{msg}");
        assert!(msg.contains("unknown field"), "{msg}");
        let Auth::Tokens(map) = Auth::from_yaml("t.yaml", "tokens:\n  tok-a: alice\n").unwrap()
        else {
            panic!("expected tokens");
        };
        assert_eq!(map["tok-a"], "alice");
    }
}
