//! What the canned upstream answers (`success:`, `routes:`), with the rules every answer it gives
//! keeps: headers and a type HTTP can carry, a body a client can parse as its type.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{ClientProfile, OperationMatch};
use crate::load::Spanned;
use crate::profile::check_header;
use crate::rules::HttpMethod;

/// The response the canned upstream gives every request.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SuccessSpec {
    /// A 2xx status (default 201).
    #[serde(default)]
    pub status: Option<Spanned<u16>>,
    /// Response headers besides `Content-Type` (e.g. `Location`).
    #[serde(default)]
    pub headers: Option<Spanned<BTreeMap<String, String>>>,
    /// The body's type (default `application/json`).
    #[serde(default)]
    pub content_type: Option<Spanned<String>>,
    /// The body, sent as is (default `{}`); a JSON type needs a JSON body, checked at load.
    #[serde(default)]
    pub body: Option<Spanned<String>>,
}

/// A request other than the operation, and what the canned upstream answers it with.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// The method (default `GET`).
    #[serde(default)]
    pub method: Option<HttpMethod>,
    /// The path without the query, exact or with `*` for one segment, as `operation.path`.
    pub path: String,
    /// The status (default 200; any from 100 to 599).
    #[serde(default)]
    pub status: Option<u16>,
    /// Response headers besides `Content-Type`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body's type (default `application/json`).
    #[serde(default)]
    pub content_type: Option<String>,
    /// The body, sent as is (default `{}`); a JSON type needs a JSON body.
    #[serde(default)]
    pub body: Option<String>,
}

impl RouteSpec {
    /// The request it answers.
    pub fn request(&self) -> OperationMatch {
        OperationMatch {
            method: self
                .method
                .clone()
                .unwrap_or_else(|| HttpMethod::new("GET").expect("GET is a method token")),
            path: Some(self.path.clone()),
        }
    }

    /// The status it answers with.
    pub fn status(&self) -> u16 {
        self.status.unwrap_or(200)
    }

    /// The body's type.
    pub fn content_type(&self) -> &str {
        self.content_type.as_deref().unwrap_or("application/json")
    }

    /// The body.
    pub fn body(&self) -> &str {
        self.body.as_deref().unwrap_or("{}")
    }

    /// Why it cannot be answered, each problem in words.
    pub(super) fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.path.starts_with('/') {
            out.push(format!("routes: path `{}` must start with `/`", self.path));
        }
        if !(200..=599).contains(&self.status()) {
            out.push(format!(
                "routes: status {} is not 200 to 599 (a 1xx is not a final answer)",
                self.status()
            ));
        }
        let answer = answer_problems("routes", &self.headers, self.content_type(), self.body());
        out.extend(answer.into_iter().map(|(_, m)| m));
        if self.body().len() > ClientProfile::MAX_BODY {
            out.push(format!(
                "routes: body is {} bytes; at most {}",
                self.body().len(),
                ClientProfile::MAX_BODY
            ));
        }
        out
    }
}

/// The part of an answer a problem is in.
pub(super) enum AnswerPart {
    /// Its headers.
    Headers,
    /// Its `content_type`.
    ContentType,
    /// Its body.
    Body,
}

/// What is wrong with an answer the canned upstream gives (the success, a route's), each in
/// words that start with `what`: a header HTTP cannot carry (or `Content-Type`, which is
/// `content_type`'s), a type HTTP cannot carry, a body a client could not parse as its JSON type.
pub(super) fn answer_problems(
    what: &str,
    headers: &BTreeMap<String, String>,
    content_type: &str,
    body: &str,
) -> Vec<(AnswerPart, String)> {
    let mut out = Vec::new();
    // The rule of a synthetic answer's headers: one place for the proxy's and the upstream's.
    if let Err(m) = crate::rules::ResponseHeaders::new(headers.clone()) {
        out.push((AnswerPart::Headers, format!("{what}.headers: {m}")));
    }
    if let Err(m) = check_header("Content-Type", content_type) {
        out.push((AnswerPart::ContentType, format!("{what}.content_type: {m}")));
    }
    if content_type.contains("json") {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(body) {
            out.push((
                AnswerPart::Body,
                format!(
                    "{what}.body is not JSON ({e}), but its type is `{content_type}`; a client \
                     could not parse it"
                ),
            ));
        }
    }
    out
}
