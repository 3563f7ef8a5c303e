//! Authentication: who a request is made as, its [`Principal`], named one of three ways.
//!
//! - A bearer token (`Authorization: Bearer TOKEN`) mapped to a principal by `--tokens FILE`
//!   (YAML `tokens: {TOKEN: PRINCIPAL}`);
//! - with `--dev`, any bearer token is its own principal;
//! - on a TLS listener with `--tls-client-ca`, a request without a bearer token is made as the
//!   subject common name (CN) of the client certificate its connection's handshake verified.
//!
//! A bearer token, when sent, decides (an unknown one is 401 even with a certificate). A request
//! with neither a token nor a certificate that names a principal is 401.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header;

use crate::edge::{ApiError, ClientCertificate};

/// The longest bearer token, principal and client certificate common name accepted, in bytes. The
/// principal is part of the idempotency record's primary key (and under `--dev` it is the token):
/// PostgreSQL refuses index rows over 2704 bytes, so an unbounded token would be a 500 instead of
/// a 401.
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

/// Middleware: puts the request's [`Principal`] in its extensions, from its bearer token (at most
/// [`MAX_TOKEN_LEN`] bytes) or else its connection's verified [`ClientCertificate`], or answers 401.
/// Two `Authorization` headers are refused: a proxy in front may check one while this server would
/// use the other.
pub async fn authenticate(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let principal = match bearer_token(req.headers()) {
        Err(refusal) => Err(refusal),
        Ok(Some(token)) => auth
            .principal(token)
            .ok_or(ApiError::Unauthorized("unknown bearer token")),
        Ok(None) => certified(req.extensions().get::<ClientCertificate>()),
    };
    match principal {
        Ok(principal) => {
            req.extensions_mut().insert(principal);
            next.run(req).await
        }
        Err(refusal) => refusal.into_response(),
    }
}

/// The bearer token of `headers`, `None` when there is none; an error for two `Authorization`
/// headers or a token over [`MAX_TOKEN_LEN`] bytes.
fn bearer_token(headers: &http::HeaderMap) -> Result<Option<&str>, ApiError> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let (first, second) = (values.next(), values.next());
    if second.is_some() {
        return Err(ApiError::Unauthorized(
            "the Authorization header was sent more than once",
        ));
    }
    let token = first
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .filter(|t| !t.is_empty());
    match token {
        Some(token) if token.len() > MAX_TOKEN_LEN => Err(ApiError::Unauthorized(
            "the bearer token is longer than 1024 bytes",
        )),
        token => Ok(token),
    }
}

/// The principal a verified client certificate names (its subject CN, at most [`MAX_TOKEN_LEN`]
/// bytes); without one, the 401 of a request that named nobody.
fn certified(cert: Option<&ClientCertificate>) -> Result<Principal, ApiError> {
    match cert {
        None => Err(ApiError::Unauthorized("missing bearer token")),
        Some(ClientCertificate::Unnamed(why)) => Err(ApiError::Unauthorized(why)),
        Some(ClientCertificate::Named(cn)) if cn.len() > MAX_TOKEN_LEN => {
            Err(ApiError::Unauthorized(
                "the client certificate's common name is longer than 1024 bytes",
            ))
        }
        Some(ClientCertificate::Named(cn)) => Ok(Principal(cn.clone())),
    }
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
