//! Principals' bearer tokens that expire (`principals[].token`): fetched by their command before
//! first use and again once `every` has passed, held per principal, never shown.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use idemspec_scenarios::profile::Token;

/// How long a token command may run.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The tokens held, by principal name, with when each was fetched.
#[derive(Default)]
pub(crate) struct Tokens {
    held: tokio::sync::Mutex<HashMap<String, (String, Instant)>>,
}

impl Tokens {
    /// Principal `name`'s token now: the one held while it is younger than `token.every`, else
    /// a fresh one from `token.command` (one fetch at a time; requests wait for it).
    ///
    /// # Errors
    /// The command failed (see [`fetch`]).
    pub(crate) async fn current(&self, name: &str, token: &Token) -> Result<String, String> {
        let mut held = self.held.lock().await;
        if let Some((value, at)) = held.get(name) {
            if at.elapsed() < token.every.0 {
                return Ok(value.clone());
            }
        }
        let value = fetch(name, token).await?;
        held.insert(name.to_owned(), (value.clone(), Instant::now()));
        Ok(value)
    }
}

/// Runs `token.command` with `sh -c` and reads the token from its standard output, trimmed.
///
/// # Errors
/// Each naming principal `name` and the field, never the output: the command could not start,
/// ran past [`FETCH_TIMEOUT`], exited non-zero (with the last line of its standard error),
/// printed nothing, or printed what an HTTP header cannot carry (more than one line).
async fn fetch(name: &str, token: &Token) -> Result<String, String> {
    let what = format!("principal `{name}`'s `token.command`");
    let run = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&token.command)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(FETCH_TIMEOUT, run)
        .await
        .map_err(|_| format!("{what} did not finish within {} s", FETCH_TIMEOUT.as_secs()))?
        .map_err(|e| format!("{what} could not start: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last: String = stderr
            .trim()
            .lines()
            .last()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        let said = if last.is_empty() {
            String::new()
        } else {
            format!(": {last}")
        };
        return Err(format!("{what} failed ({}){said}", out.status));
    }
    let value = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if value.is_empty() {
        return Err(format!(
            "{what} printed nothing; it must print the bearer token"
        ));
    }
    if http::HeaderValue::from_str(&format!("Bearer {value}")).is_err() || value.contains('\n') {
        return Err(format!(
            "{what} printed more than one line or a control character; it must print only \
             the bearer token"
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemspec_scenarios::value::HumanDuration;

    fn token(command: &str, every: Duration) -> Token {
        Token {
            command: command.into(),
            every: HumanDuration(every),
        }
    }

    /// A token is held until `every` passes, then fetched again; a command that fails or prints
    /// nothing is named, its output never shown.
    #[tokio::test]
    async fn a_token_is_held_then_fetched_again_and_a_bad_command_is_named() {
        let tokens = Tokens::default();
        let fresh = token("echo tok-$$", Duration::from_secs(3600));
        let first = tokens.current("a", &fresh).await.unwrap();
        assert!(first.starts_with("tok-"), "{first}");
        assert_eq!(tokens.current("a", &fresh).await.unwrap(), first);
        let stale = token("echo tok-$$", Duration::ZERO);
        assert_ne!(tokens.current("a", &stale).await.unwrap(), first);
        let failed = tokens
            .current(
                "b",
                &token("echo s3cr3t; echo nope >&2; exit 7", Duration::ZERO),
            )
            .await
            .unwrap_err();
        assert!(
            failed.contains("principal `b`'s `token.command` failed"),
            "{failed}"
        );
        assert!(
            failed.contains("nope") && !failed.contains("s3cr3t"),
            "{failed}"
        );
        let empty = tokens
            .current("c", &token("true", Duration::ZERO))
            .await
            .unwrap_err();
        assert!(empty.contains("printed nothing"), "{empty}");
        let two = tokens
            .current("d", &token("printf 'a\\nb'", Duration::ZERO))
            .await
            .unwrap_err();
        assert!(two.contains("more than one line"), "{two}");
    }
}
