//! Principals' bearer tokens that expire (`principals[].token`): fetched by their command or
//! their OAuth 2.0 client-credentials grant before first use and again before they expire, held
//! per principal, never shown.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use idemspec_scenarios::profile::{ClientCredentials, Token};

/// How long a token command may run, or a grant take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a token is used where neither the profile (`every`) nor the grant (`expires_in`)
/// says.
const DEFAULT_EVERY: Duration = Duration::from_secs(30 * 60);

/// One token held: its value, when it was fetched, how long it is used.
struct Held {
    value: String,
    fetched: Instant,
    lasts: Duration,
}

/// The tokens held, by principal name.
#[derive(Default)]
pub(crate) struct Tokens {
    held: tokio::sync::Mutex<HashMap<String, Held>>,
}

impl Tokens {
    /// Principal `name`'s token now: the one held while it is younger than it lasts (`every`;
    /// for a grant without it, three quarters of its `expires_in`), else a fresh one from its
    /// command or grant, the grant sent with `client` (one fetch at a time; requests wait).
    ///
    /// # Errors
    /// The command or the grant failed (see [`run_command`], [`grant`]).
    pub(crate) async fn current(
        &self,
        name: &str,
        token: &Token,
        client: &reqwest::Client,
    ) -> Result<String, String> {
        let mut held = self.held.lock().await;
        if let Some(h) = held.get(name).filter(|h| h.fetched.elapsed() < h.lasts) {
            return Ok(h.value.clone());
        }
        let every = token.every.map(|e| e.0);
        let fetched = Instant::now();
        let (value, lasts) = match (&token.command, &token.oauth2_client_credentials) {
            (Some(command), _) => (run_command(name, command).await?, every),
            (None, Some(g)) => {
                let (value, expires_in) = grant(name, g, client).await?;
                (value, every.or(expires_in.map(|e| e * 3 / 4)))
            }
            (None, None) => return Err(format!("principal `{name}`'s `token` names no source")),
        };
        let lasts = lasts.unwrap_or(DEFAULT_EVERY);
        let h = Held {
            value: value.clone(),
            fetched,
            lasts,
        };
        held.insert(name.to_owned(), h);
        Ok(value)
    }
}

/// Runs `command` with `sh -c` and reads the token from its standard output, trimmed.
///
/// # Errors
/// Each naming principal `name` and the field, never the output: the command could not start,
/// ran past [`FETCH_TIMEOUT`], exited non-zero (with the last line of its standard error),
/// printed nothing, or printed what an HTTP header cannot carry (more than one line).
async fn run_command(name: &str, command: &str) -> Result<String, String> {
    let what = format!("principal `{name}`'s `token.command`");
    let run = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
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
    carried(&what, value)
}

/// `value` where `Authorization: Bearer VALUE` can carry it.
///
/// # Errors
/// It holds a line break or a control character (`what` gave it).
fn carried(what: &str, value: String) -> Result<String, String> {
    if http::HeaderValue::from_str(&format!("Bearer {value}")).is_err() || value.contains('\n') {
        return Err(format!(
            "{what} gave more than one line or a control character; it must give only the \
             bearer token"
        ));
    }
    Ok(value)
}

/// Asks `g`'s token endpoint for a token (RFC 6749 §4.4.2: `grant_type=client_credentials`, the
/// client's id and secret form-encoded in HTTP Basic, §2.3.1) and reads `access_token` and
/// `expires_in` from its JSON answer (§5.1).
///
/// # Errors
/// Each naming principal `name` and the token URL, never the secret or the token: no answer,
/// an answer other than 2xx (with its `error` code, §5.2), or no `access_token` in it.
async fn grant(
    name: &str,
    g: &ClientCredentials,
    client: &reqwest::Client,
) -> Result<(String, Option<Duration>), String> {
    let what = format!(
        "principal `{name}`'s `token.oauth2_client_credentials` ({})",
        g.token_url
    );
    let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    // Built whole before the request: the serializer is not `Send`.
    let form = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "client_credentials");
        if let Some(scope) = &g.scope {
            form.append_pair("scope", scope);
        }
        form.finish()
    };
    let answer = client
        .post(&g.token_url)
        .basic_auth(encode(&g.client_id), Some(encode(&g.client_secret)))
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(form)
        .timeout(FETCH_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("{what} got no answer: {e}"))?;
    let status = answer.status();
    let body = answer.bytes().await.unwrap_or_default();
    let json: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
    let field = |n: &str| json.as_ref().and_then(|j| j.get(n)).cloned();
    if !status.is_success() {
        let code = field("error").and_then(|e| e.as_str().map(|e| format!(" (`{e}`)")));
        return Err(format!(
            "{what} answered {status}{}",
            code.unwrap_or_default()
        ));
    }
    let value = field("access_token")
        .and_then(|t| t.as_str().map(str::to_owned))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("{what} answered {status} without an `access_token`"))?;
    let expires_in = field("expires_in")
        .and_then(|e| e.as_u64().or_else(|| e.as_str()?.parse().ok()))
        .map(Duration::from_secs);
    Ok((carried(&what, value)?, expires_in))
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemspec_scenarios::value::HumanDuration;

    fn token(command: &str, every: Duration) -> Token {
        Token {
            command: Some(command.into()),
            oauth2_client_credentials: None,
            every: Some(HumanDuration(every)),
        }
    }

    /// A token is held until `every` passes, then fetched again; a command that fails or prints
    /// nothing is named, its output never shown.
    #[tokio::test]
    async fn a_token_is_held_then_fetched_again_and_a_bad_command_is_named() {
        let tokens = Tokens::default();
        let client = reqwest::Client::new();
        let fresh = token("echo tok-$$", Duration::from_secs(3600));
        let first = tokens.current("a", &fresh, &client).await.unwrap();
        assert!(first.starts_with("tok-"), "{first}");
        assert_eq!(tokens.current("a", &fresh, &client).await.unwrap(), first);
        let stale = token("echo tok-$$", Duration::ZERO);
        let once = tokens.current("z", &stale, &client).await.unwrap();
        assert_ne!(tokens.current("z", &stale, &client).await.unwrap(), once);
        let failed = tokens
            .current(
                "b",
                &token("echo s3cr3t; echo nope >&2; exit 7", Duration::ZERO),
                &client,
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
            .current("c", &token("true", Duration::ZERO), &client)
            .await
            .unwrap_err();
        assert!(empty.contains("printed nothing"), "{empty}");
        let two = tokens
            .current("d", &token("printf 'a\\nb'", Duration::ZERO), &client)
            .await
            .unwrap_err();
        assert!(two.contains("gave more than one line"), "{two}");
    }
}
