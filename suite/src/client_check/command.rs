//! Running the user's command: once per situation, with the base URL in `IDEMSPEC_BASE_URL` and
//! in place of `{{base_url}}`, in a process group of its own, with no stdin, its output captured
//! (the last [`KEEP`] bytes of each stream) and a deadline after which the whole group is killed.

use crate::process_group::{in_own_group, kill_group, GroupGuard};
use std::ffi::OsString;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};

/// The environment variable that tells the command where idemspec listens.
pub const BASE_URL_VAR: &str = "IDEMSPEC_BASE_URL";
/// The placeholder in the command line replaced by the base URL.
pub const BASE_URL_PLACEHOLDER: &str = "{{base_url}}";
/// How much of each output stream is kept for the evidence, in bytes (the end: a traceback's last
/// lines say what went wrong).
const KEEP: usize = 2000;
/// How many characters of output a note shows.
const EXCERPT: usize = 300;
/// How long to wait for the output pipes to close once the process group is gone.
const DRAIN: Duration = Duration::from_secs(2);

/// How a run of the command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status code.
    Code(i32),
    /// It was ended by this signal (not by idemspec).
    Signal(i32),
    /// It was still running at the deadline and its process group was killed.
    TimedOut(Duration),
    /// idemspec killed its process group on purpose, after the server did the work and before the
    /// client heard back (a restart).
    Stopped,
    /// idemspec stopped its process group, still running, this long after the operation's first
    /// attempt was answered (a situation's `after_answer` bound).
    AtBound(Duration),
    /// It could not be started at all.
    NotStarted(String),
}

impl Exit {
    /// Whether it exited 0.
    pub fn succeeded(&self) -> bool {
        *self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(127) => f.write_str("exit code 127 (command not found)"),
            Exit::Code(code) => write!(f, "exit code {code}"),
            Exit::Signal(signal) => write!(f, "killed by signal {signal}"),
            Exit::TimedOut(after) => write!(
                f,
                "still running after {}, killed",
                humantime::format_duration(*after)
            ),
            Exit::NotStarted(why) => write!(f, "not started: {why}"),
            Exit::Stopped => f.write_str("killed by idemspec before it heard back"),
            Exit::AtBound(after) => write!(
                f,
                "still running {} after its first answer, stopped",
                humantime::format_duration(*after)
            ),
        }
    }
}

/// What one run of the command did.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// How it ended.
    pub exit: Exit,
    /// When it was started (wall clock, the proxy's events' clock).
    pub started: time::OffsetDateTime,
    /// Its wall time.
    pub elapsed: Duration,
    /// The end of its stdout (lossy UTF-8, at most [`KEEP`] bytes, `…` in front when cut).
    pub stdout: String,
    /// The end of its stderr, likewise.
    pub stderr: String,
}

impl RunOutput {
    /// The output of a run that could not start, for `why`.
    pub fn not_started(why: String) -> Self {
        Self {
            exit: Exit::NotStarted(why),
            started: time::OffsetDateTime::now_utc(),
            elapsed: Duration::ZERO,
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    /// The end of the output (at most [`EXCERPT`] characters: a traceback's last line says what
    /// went wrong) in one line for a note: stderr, else stdout, newlines shown as ` ⏎ `.
    pub fn excerpt(&self) -> Option<String> {
        let text = if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        let text = text.trim();
        let chars: Vec<char> = text.chars().collect();
        let tail: String = chars[chars.len().saturating_sub(EXCERPT)..]
            .iter()
            .collect();
        let cut = if tail.len() < text.len() { "…" } else { "" };
        (!text.is_empty()).then(|| format!("{cut}{}", tail.replace('\n', " ⏎ ").replace('\r', "")))
    }
}

/// `line` with every `{{base_url}}` replaced by `base_url`.
pub fn render(line: &str, base_url: &str) -> String {
    line.replace(BASE_URL_PLACEHOLDER, base_url)
}

/// Runs `line` with `sh -c`, telling it `base_url`, and kills its process group at `timeout`.
/// Strays it left behind (a background child) are killed too when it exits.
pub async fn run(line: &str, base_url: &str, timeout: Duration) -> RunOutput {
    run_until(line, base_url, &[], timeout, std::future::pending()).await
}

/// [`run`] with the variables `env` set too (the CA's file under `--tls`), and kill the process
/// group as soon as `stop` is ready ([`Exit::Stopped`]).
pub async fn run_until(
    line: &str,
    base_url: &str,
    env: &[(&str, OsString)],
    timeout: Duration,
    stop: impl std::future::Future<Output = ()>,
) -> RunOutput {
    let started = Instant::now();
    let started_at = time::OffsetDateTime::now_utc();
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(render(line, base_url))
        .env(BASE_URL_VAR, base_url)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so a deadline kills what the shell started, not only the shell.
    in_own_group(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return RunOutput {
                exit: Exit::NotStarted(format!("`sh -c` could not be spawned: {e}")),
                started: started_at,
                elapsed: started.elapsed(),
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    };
    let stdout = tokio::spawn(tail(child.stdout.take()));
    let stderr = tokio::spawn(tail(child.stderr.take()));
    let pid = child.id();
    // Killed below once the shell has ended, and also when this future is dropped unfinished
    // (Ctrl-C or SIGTERM ends the run).
    let group = GroupGuard(pid);
    let exit = tokio::select! {
        waited = tokio::time::timeout(timeout, child.wait()) => match waited {
            Ok(Ok(status)) => exit_of(status),
            Ok(Err(e)) => Exit::NotStarted(format!("could not wait for it: {e}")),
            Err(_) => {
                kill_group(pid);
                let _ = child.wait().await;
                Exit::TimedOut(timeout)
            }
        },
        () = stop => {
            kill_group(pid);
            let _ = child.wait().await;
            Exit::Stopped
        }
    };
    // What the shell left running must not hold the output pipes open while they are read.
    drop(group);
    let elapsed = started.elapsed();
    let collect = |task: tokio::task::JoinHandle<String>| async move {
        tokio::time::timeout(DRAIN, task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    RunOutput {
        exit,
        started: started_at,
        elapsed,
        stdout: collect(stdout).await,
        stderr: collect(stderr).await,
    }
}

#[cfg(unix)]
fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Code(-1),
    }
}

#[cfg(not(unix))]
fn exit_of(status: std::process::ExitStatus) -> Exit {
    Exit::Code(status.code().unwrap_or(-1))
}

/// Reads `stream` to its end, keeping the last [`KEEP`] bytes.
async fn tail(stream: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut kept: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = stream.read(&mut buf).await {
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > KEEP {
            kept.drain(..kept.len() - KEEP);
            cut = true;
        }
    }
    let text = String::from_utf8_lossy(&kept).into_owned();
    if cut {
        format!("…{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_base_url_reaches_the_command_both_ways() {
        let out = run(
            "echo \"$IDEMSPEC_BASE_URL {{base_url}}\"",
            "http://127.0.0.1:9",
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(out.stdout, "http://127.0.0.1:9 http://127.0.0.1:9\n");
    }

    #[tokio::test]
    async fn an_overrun_kills_the_whole_group_and_is_bounded() {
        let started = Instant::now();
        // The background sleep holds stdout open: only killing the group ends the read.
        let out = run(
            "sleep 30 & echo started; sleep 30",
            "http://x",
            Duration::from_millis(300),
        )
        .await;
        assert_eq!(out.exit, Exit::TimedOut(Duration::from_millis(300)));
        assert_eq!(out.stdout, "started\n");
        assert!(started.elapsed() < Duration::from_secs(10), "bounded");
    }

    #[tokio::test]
    async fn output_keeps_its_end_and_stdin_is_closed() {
        let out = run(
            "cat; yes x | head -c 10000; echo END >&2; exit 3",
            "http://x",
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(out.exit, Exit::Code(3));
        assert!(out.stdout.starts_with('…') && out.stdout.len() <= KEEP + 4);
        assert_eq!(out.excerpt().as_deref(), Some("END"));
        let missing = run(
            "no-such-program-idemspec",
            "http://x",
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(
            missing.exit.to_string(),
            "exit code 127 (command not found)"
        );
    }
}
