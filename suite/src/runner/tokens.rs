//! Principals' bearer tokens that expire (`principals[].token`): fetched by their command or
//! their OAuth 2.0 client-credentials grant before first use and again before they expire, held
//! per principal, never shown.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use idemspec_scenarios::profile::{ClientCredentials, Token, MIN_TOKEN_EVERY};
use tokio::io::AsyncReadExt;

use crate::http_client::tls_failure;

/// How long a token command may run, or a grant take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest token taken, in bytes: a bearer token is a few hundred bytes to a few KiB (a JWT
/// with claims); more is a command or endpoint printing something else, which as a header would
/// get 431 from the target and read as the profile's fault.
const MAX_TOKEN_BYTES: usize = 16 << 10;

/// The most of a token endpoint's answer read, in bytes.
const MAX_GRANT_ANSWER: usize = 64 << 10;

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
                // `expires_in: 0` would refetch before every request: at least MIN_TOKEN_EVERY.
                let lasts = expires_in.map(|e| (e * 3 / 4).max(MIN_TOKEN_EVERY));
                (value, every.or(lasts))
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
/// printed nothing, more than [`MAX_TOKEN_BYTES`], or what an HTTP header cannot carry (more
/// than one line). Whatever it left running is killed when it exits.
async fn run_command(name: &str, command: &str) -> Result<String, String> {
    let what = format!("principal `{name}`'s `token.command`");
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // In a group of its own, so whatever it leaves running (`sleep 1000 &`) goes with it.
    crate::process_group::in_own_group(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{what} could not start: {e}"))?;
    // Also killed when the run is interrupted while the command runs.
    let group = crate::process_group::GroupGuard(child.id());
    let stdout = tokio::spawn(read_at_most(child.stdout.take(), MAX_TOKEN_BYTES + 1));
    let stderr = tokio::spawn(read_at_most(child.stderr.take(), 64 << 10));
    let waited = tokio::time::timeout(FETCH_TIMEOUT, child.wait()).await;
    drop(group);
    let status = waited
        .map_err(|_| format!("{what} did not finish within {} s", FETCH_TIMEOUT.as_secs()))?
        .map_err(|e| format!("{what} could not start: {e}"))?;
    // Its group is gone; a pipe a process outside it still holds is not waited for.
    let collect = |task: tokio::task::JoinHandle<Vec<u8>>| async move {
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    let out = CommandOutput {
        status,
        stdout: collect(stdout).await,
        stderr: collect(stderr).await,
    };
    if out.stdout.len() > MAX_TOKEN_BYTES {
        return Err(format!(
            "{what} printed more than {} KiB; it must print only the bearer token",
            MAX_TOKEN_BYTES >> 10
        ));
    }
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

/// What a token command left: its exit status and what it printed (each read up to a bound).
struct CommandOutput {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Up to `limit` bytes of `pipe`, until it closes (a read error ends it too).
async fn read_at_most<R: tokio::io::AsyncRead + Unpin>(pipe: Option<R>, limit: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.take(limit as u64).read_to_end(&mut buf).await;
    }
    buf
}

/// `value` where `Authorization: Bearer VALUE` can carry it.
///
/// # Errors
/// It holds a line break or a control character (`what` gave it).
fn carried(what: &str, value: String) -> Result<String, String> {
    if value.len() > MAX_TOKEN_BYTES {
        return Err(format!(
            "{what} gave a token of more than {} KiB; a bearer token is shorter",
            MAX_TOKEN_BYTES >> 10
        ));
    }
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
        .map_err(|e| match tls_failure(&e) {
            Some(tls) => format!("{what}: {tls}"),
            None => format!("{what} got no answer: {e}"),
        })?;
    let status = answer.status();
    let body = read_answer(answer).await;
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

/// Up to [`MAX_GRANT_ANSWER`] bytes of a token endpoint's answer (a longer one is cut, and reads
/// as no JSON).
async fn read_answer(mut answer: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = answer.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_GRANT_ANSWER {
            break;
        }
    }
    body
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

    /// A command's token is taken when the command exits, and whatever it left running goes with
    /// it; a command printing more than a token is refused by size, not sent as a header.
    #[tokio::test]
    async fn a_token_command_leaves_nothing_running_and_prints_a_bounded_token() {
        let tokens = Tokens::default();
        let client = reqwest::Client::new();
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let lingering = format!("sleep 1000 & echo $! > '{}'; echo tok", pid_file.display());
        let started = Instant::now();
        let got = tokens
            .current("a", &token(&lingering, Duration::ZERO), &client)
            .await
            .unwrap();
        assert_eq!(got, "tok");
        assert!(
            started.elapsed() < FETCH_TIMEOUT,
            "not held by the sleep's pipe"
        );
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        // Killed: gone, or a zombie until init reaps it. SIGKILL lands asynchronously, so the
        // state is read until it shows (at most 5 s; the sleep alone would last 1000 s).
        let alive = || {
            std::fs::read_to_string(&stat)
                .is_ok_and(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(), "the background sleep {pid} still runs");
        let wide = tokens
            .current(
                "b",
                &token("head -c 100000 /dev/zero | tr '\\0' a", Duration::ZERO),
                &client,
            )
            .await
            .unwrap_err();
        assert!(wide.contains("more than 16 KiB"), "{wide}");
    }
}
