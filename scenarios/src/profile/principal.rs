//! The principals a target profile names: who calls the API (`principals:`), the login that opens
//! a principal's session, and whose cookie jar a request uses (`cookies:`), with their rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::check_header;
use super::method::{http_method, json, post};
use super::sign::Sign;
use super::tls::ClientIdentity;
use super::token::Token;
use crate::load::{LoadErrors, Spanned};

/// An authenticated caller.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Principal {
    /// Name used in reports and by scenarios (`principal: alice`); scenarios may also say `A`/`B`
    /// for the first and second principal.
    pub name: String,
    /// Headers sent with every request of this principal (e.g. `Authorization: Bearer …`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Values the profile's templates use as `{{principal.NAME}}` for this principal's requests:
    /// the tenant an API keeps in its paths or bodies (`project: p-alpha`).
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// The request that opens this principal's session, where the API issues one: sent before
    /// the principal's first request (once per cookie jar, see [`CookieScope`]), its answer's
    /// `Set-Cookie` headers fill the jar.
    #[serde(default)]
    pub login: Option<Login>,
    /// How the principal's session opens where the API issues it without a login (see
    /// [`SessionStart`]); with neither, the principal has no session of its own to open.
    #[serde(default)]
    pub session: Option<SessionStart>,
    /// The client certificate this principal presents to an mTLS target, on direct requests and
    /// through the fault proxy alike (the target tells principals apart by it).
    #[serde(default)]
    pub tls: Option<ClientIdentity>,
    /// How each of this principal's requests is signed, last, after its key, body and headers are
    /// final (see [`Sign`]).
    #[serde(default)]
    pub sign: Option<Sign>,
    /// A bearer token that expires, fetched by a command and refreshed (see [`Token`]).
    #[serde(default)]
    pub token: Option<Token>,
}

/// A login request: sent to the first base URL with the principal's headers and its own; a 2xx
/// opens the session.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    /// HTTP method (default `POST`).
    #[serde(default = "post", deserialize_with = "http_method")]
    pub method: String,
    /// Path and query, from `/`.
    pub path: String,
    /// The body, sent as it is.
    #[serde(default)]
    pub body: Option<String>,
    /// The body's media type (default `application/json`).
    #[serde(default = "json")]
    pub content_type: String,
    /// Headers besides the principal's.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// How a principal's session opens where no `login` opens it (`principals[].session`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStart {
    /// The API sets its session cookie on its first answer to a caller without one (a layer that
    /// opens the caller's session as it answers): before the principal's first request of each
    /// cookie jar, its `operations.list` request (as the preflight renders it, `{{marker}}` as
    /// `preflight`) is sent, and its answer's `Set-Cookie` fills the jar, so no check's first
    /// request is the one that opens it.
    FirstAnswer,
}

/// Whose cookie jar a request uses (`cookies:` at the top of a profile): none (`off`, a
/// `Set-Cookie` is neither kept nor sent back), one per principal for the whole run
/// (`per_principal`), or one per principal in each check (`per_check`: a check starts with a
/// fresh session, logged in again, so two checks never share session state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CookieScope {
    /// No jar.
    Off,
    /// One jar per principal for the run.
    PerPrincipal,
    /// One jar per principal and check.
    PerCheck,
}

/// The principals' rules: at least two (cross-tenant checks need two), each name once, and each
/// principal's own ([`Principal::problems`]), every such error pointing at `principals`; then its
/// client certificate's files (relative to `dir`, the profile's directory), each error at its path.
pub(crate) fn check_principals(
    principals: &Spanned<Vec<Principal>>,
    cookies: Option<CookieScope>,
    dir: &std::path::Path,
    errors: &mut LoadErrors,
) {
    let list = &principals.value;
    if list.len() < 2 {
        errors.at(
            &principals.referenced,
            "expected at least two principals (cross-tenant checks need two)",
        );
    }
    for (i, p) in list.iter().enumerate() {
        if list[..i].iter().any(|q| q.name == p.name) {
            errors.at(
                &principals.referenced,
                format!("principal name `{}` is used twice", p.name),
            );
        }
        for m in p.problems(cookies) {
            errors.at(
                &principals.referenced,
                format!("principal `{}`: {m}", p.name),
            );
        }
        if let Some(tls) = &p.tls {
            tls.check(dir, &p.name, errors);
        }
    }
}

impl Principal {
    /// Whether a request of idemspec's opens this principal's session: its `login`, or the
    /// first answer its `session` names.
    pub fn opens_session(&self) -> bool {
        self.login.is_some() || self.session.is_some()
    }

    /// What is wrong with this principal, each in words: a header HTTP cannot carry, then its
    /// login's problems ([`Login::problems`]) under the profile's `cookies`, then its signing's.
    fn problems(&self, cookies: Option<CookieScope>) -> Vec<String> {
        let headers = self
            .headers
            .iter()
            .filter_map(|(name, value)| check_header(name, value).err());
        let login = self.login.iter().flat_map(|l| l.problems(cookies));
        headers
            .chain(login)
            .chain(self.session_problems(cookies))
            .chain(self.sign_problems())
            .chain(self.token_problems())
            .collect()
    }

    /// What is wrong with this principal's `session`: a `login` beside it (two requests would
    /// open one session), or `cookies: off`, under which the session would never be sent.
    fn session_problems(&self, cookies: Option<CookieScope>) -> Vec<String> {
        if self.session.is_none() {
            return Vec::new();
        }
        let mut problems = Vec::new();
        if self.login.is_some() {
            problems.push(
                "has both a `login` and `session: first_answer`, and each would open its session;                  keep the `login` where a request must log in, else `session`"
                    .to_owned(),
            );
        }
        if cookies == Some(CookieScope::Off) {
            problems.push(
                "has `session: first_answer` but the profile says `cookies: off`, so the session                  its first answer opens would never be sent; say `cookies: per_principal` or                  `per_check`, or remove `session`"
                    .to_owned(),
            );
        }
        problems
    }

    /// What is wrong with this principal's `token` ([`Token::problems`], and a `sign` beside it);
    /// none without one.
    fn token_problems(&self) -> Vec<String> {
        let Some(token) = &self.token else {
            return Vec::new();
        };
        let mut problems = token.problems(self.headers.keys());
        if self.sign.is_some() {
            problems.push(
                "has both `token` and `sign`, and both set `Authorization`; keep one".to_owned(),
            );
        }
        problems
    }

    /// What is wrong with this principal's `sign` ([`Sign::problems`]); none without one.
    fn sign_problems(&self) -> Vec<String> {
        self.sign
            .as_ref()
            .map(|s| s.problems(self.headers.keys()))
            .unwrap_or_default()
    }
}

impl Login {
    /// What is wrong with this login, each in words: a header (or its `content_type`) HTTP cannot
    /// carry, a path that does not start with `/`, a `{{…}}` placeholder (a login is sent as
    /// written), or `cookies: off`, under which the session it opens would never be sent.
    fn problems(&self, cookies: Option<CookieScope>) -> Vec<String> {
        let mut problems: Vec<String> = self
            .headers
            .iter()
            .chain([(&"Content-Type".to_owned(), &self.content_type)])
            .filter_map(|(name, value)| check_header(name, value).err())
            .collect();
        if !self.path.starts_with('/') {
            problems.push(format!(
                "login.path `{}` must start with `/` (it follows the base URL)",
                self.path
            ));
        }
        let templated = [Some(&self.path), self.body.as_ref()]
            .into_iter()
            .flatten()
            .any(|text| text.contains("{{"));
        if templated {
            problems.push(
                "login.path and login.body are sent as written: no `{{…}}` placeholder is filled \
                 there (a value per principal comes from the environment, `${VAR}`)"
                    .into(),
            );
        }
        if cookies == Some(CookieScope::Off) {
            problems.push(
                "has a `login` but the profile says `cookies: off`, so the session it opens would \
                 never be sent; say `cookies: per_principal` or `per_check`, or remove the login"
                    .into(),
            );
        }
        problems
    }
}
