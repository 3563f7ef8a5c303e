//! A principal's bearer token that expires (`principals[].token`): a command whose output is the
//! token, or an OAuth 2.0 client-credentials grant, fetched before the principal's first request
//! and again before it expires, with its rules.

use serde::{Deserialize, Serialize};

use crate::value::HumanDuration;

/// The shortest `every`: a token refreshed more often than this would run its command for nearly
/// every request.
pub const MIN_TOKEN_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Where a principal's bearer token comes from, one of: `command`'s standard output, trimmed
/// (what `gcloud auth print-access-token` and most internal CLIs print), or an OAuth 2.0
/// client-credentials grant (RFC 6749 §4.4). It is fetched before the principal's first request
/// and fetched again once `every` has passed since (for a grant without `every`: three quarters
/// of its `expires_in`), and sent as `Authorization: Bearer TOKEN`; it is never shown.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    /// A shell command line (`sh -c`), run in the directory idemspec runs in.
    #[serde(default)]
    pub command: Option<String>,
    /// The client-credentials grant that issues the token.
    #[serde(default)]
    pub oauth2_client_credentials: Option<ClientCredentials>,
    /// How long a token is used before it is fetched again: shorter than the token's lifetime,
    /// so no request carries an expired one. Default: 30 minutes for a command; for a grant,
    /// three quarters of the `expires_in` it answers (30 minutes where it gives none).
    #[serde(default)]
    pub every: Option<HumanDuration>,
}

/// An OAuth 2.0 client-credentials grant (RFC 6749 §4.4): `POST token_url` with
/// `grant_type=client_credentials` (and `scope`), the client authenticated with HTTP Basic
/// (§2.3.1); the answer's `access_token` is the token, its `expires_in` (seconds) its lifetime.
/// Its `Debug` hides the secret.
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCredentials {
    /// The token endpoint, `http://` or `https://`.
    pub token_url: String,
    /// The client's id.
    pub client_id: String,
    /// The client's secret; never shown.
    pub client_secret: String,
    /// The scope asked for (space-separated), if any.
    #[serde(default)]
    pub scope: Option<String>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<hidden>")
            .field("scope", &self.scope)
            .finish()
    }
}

impl Token {
    /// What is wrong with this token, each in words: not exactly one of `command` and
    /// `oauth2_client_credentials`, an empty command, a token URL HTTP cannot reach, an `every`
    /// under [`MIN_TOKEN_EVERY`], or the principal's own `Authorization` header, which the token
    /// would replace.
    pub(crate) fn problems<'a>(
        &self,
        mut header_names: impl Iterator<Item = &'a String>,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        match (&self.command, &self.oauth2_client_credentials) {
            (Some(command), None) if command.trim().is_empty() => {
                problems.push("`token.command` is empty".to_owned());
            }
            (Some(_), None) => {}
            (None, Some(grant)) => problems.extend(super::check_url(&grant.token_url).err()),
            _ => problems.push(
                "`token` needs exactly one of `command` and `oauth2_client_credentials`".to_owned(),
            ),
        }
        if let Some(every) = self.every.filter(|e| e.0 < MIN_TOKEN_EVERY) {
            problems.push(format!(
                "`token.every` is {}, under the shortest, 1s",
                humantime::format_duration(every.0)
            ));
        }
        if header_names.any(|n| n.eq_ignore_ascii_case("authorization")) {
            problems.push(
                "has header `Authorization` and `token`, which sets it on every request; remove \
                 the header"
                    .to_owned(),
            );
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_command_a_short_every_and_an_own_authorization_are_named() {
        let token = |command: &str, every_ms: u64| Token {
            command: Some(command.into()),
            oauth2_client_credentials: None,
            every: Some(HumanDuration(std::time::Duration::from_millis(every_ms))),
        };
        let none: Vec<String> = Vec::new();
        assert!(token("print-token", 1000).problems(none.iter()).is_empty());
        let problems = token(" ", 500).problems(none.iter());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("`token.command` is empty"));
        assert!(problems[1].contains("`token.every` is 500ms"));
        let neither = Token {
            command: None,
            oauth2_client_credentials: None,
            every: None,
        };
        assert!(neither.problems(none.iter())[0].contains("exactly one of"));
        let own = ["authorization".to_owned()];
        let problems = token("print-token", 1000).problems(own.iter());
        assert!(
            problems[0].contains("header `Authorization`"),
            "{problems:?}"
        );
    }
}
