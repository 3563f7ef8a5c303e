//! A principal's bearer token that expires (`principals[].token`): a command whose output is the
//! token, run before the principal's first request and again every `every`, with its rules.

use serde::{Deserialize, Serialize};

use crate::value::HumanDuration;

/// The shortest `every`: a token refreshed more often than this would run its command for nearly
/// every request.
pub const MIN_TOKEN_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Where a principal's bearer token comes from: `command`'s standard output, trimmed (what
/// `gcloud auth print-access-token` and most internal CLIs print). It is fetched before the
/// principal's first request and fetched again once `every` has passed since, and sent as
/// `Authorization: Bearer TOKEN`; it is never shown.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    /// A shell command line (`sh -c`), run in the directory idemspec runs in.
    pub command: String,
    /// How long a token is used before the command is run again (default 30 minutes): shorter
    /// than the token's lifetime, so no request carries an expired one.
    #[serde(default = "thirty_minutes")]
    pub every: HumanDuration,
}

fn thirty_minutes() -> HumanDuration {
    HumanDuration(std::time::Duration::from_secs(30 * 60))
}

impl Token {
    /// What is wrong with this token, each in words: an empty command, an `every` under
    /// [`MIN_TOKEN_EVERY`], or the principal's own `Authorization` header, which the token
    /// would replace.
    pub(crate) fn problems<'a>(
        &self,
        mut header_names: impl Iterator<Item = &'a String>,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        if self.command.trim().is_empty() {
            problems.push("`token.command` is empty".to_owned());
        }
        if self.every.0 < MIN_TOKEN_EVERY {
            problems.push(format!(
                "`token.every` is {}, under the shortest, 1s",
                humantime::format_duration(self.every.0)
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
            command: command.into(),
            every: HumanDuration(std::time::Duration::from_millis(every_ms)),
        };
        let none: Vec<String> = Vec::new();
        assert!(token("print-token", 1000).problems(none.iter()).is_empty());
        let problems = token(" ", 500).problems(none.iter());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("`token.command` is empty"));
        assert!(problems[1].contains("`token.every` is 500ms"));
        let own = ["authorization".to_owned()];
        let problems = token("print-token", 1000).problems(own.iter());
        assert!(
            problems[0].contains("header `Authorization`"),
            "{problems:?}"
        );
    }
}
