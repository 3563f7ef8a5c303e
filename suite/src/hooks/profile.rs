//! Hooks as the target profile declares them: `sh -c COMMAND` or an HTTP request.

use std::time::Duration;

use futures::future::BoxFuture;
use idemspec_scenarios::profile::{HookSpec, Hooks};
use idemspec_scenarios::scenario::HookName;

use super::{hook_name, HookError, HookRunner};
use crate::http_client::{client_builder, tls_failure, TlsSettings};

/// How long a hook may take before it counts as failed.
const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The profile's hooks.
#[derive(Debug, Clone)]
pub struct ProfileHooks {
    hooks: Hooks,
    client: reqwest::Client,
    /// How long a command hook may run ([`HOOK_TIMEOUT`]).
    timeout: Duration,
}

impl ProfileHooks {
    /// Hooks from a profile's `hooks:` block, an `https://` hook trusting the platform's roots.
    ///
    /// # Panics
    /// If rustls cannot be set up with the platform's roots alone, which does not happen on a
    /// working system.
    pub fn new(hooks: Hooks) -> Self {
        Self::with_tls(hooks, &TlsSettings::default()).expect("a client without TLS files builds")
    }

    /// Hooks from a profile's `hooks:` block, an `https://` hook trusted as the profile's `tls`
    /// says (a hook presents no client certificate).
    ///
    /// # Errors
    /// A [`idemspec_tls::TlsError`] naming the CA file that cannot be read or used.
    pub fn with_tls(hooks: Hooks, tls: &TlsSettings) -> Result<Self, idemspec_tls::TlsError> {
        let client = client_builder(tls, None)?
            .timeout(HOOK_TIMEOUT)
            .build()
            .expect("a client from a preconfigured rustls config builds");
        Ok(Self {
            hooks,
            client,
            timeout: HOOK_TIMEOUT,
        })
    }

    fn spec(&self, hook: HookName) -> Option<&HookSpec> {
        match hook {
            HookName::Crash => self.hooks.crash.as_ref(),
            HookName::Restart => self.hooks.restart.as_ref(),
            HookName::FailNext => self.hooks.fail_next.as_ref(),
        }
    }

    async fn run_spec(&self, name: &'static str, spec: &HookSpec) -> Result<(), HookError> {
        let failed = |reason: String| HookError::Failed { hook: name, reason };
        if let Some(command) = &spec.command {
            return run_command(command, self.timeout).await.map_err(failed);
        }
        let Some(req) = &spec.request else {
            return Err(failed("neither `command` nor `request` is set".into()));
        };
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| failed(format!("invalid method `{}`", req.method)))?;
        let mut builder = self.client.request(method, &req.url.value);
        for (n, v) in &req.headers {
            builder = builder.header(n, v);
        }
        if let Some(body) = &req.body {
            builder = builder
                .header("content-type", "application/json")
                .body(body.clone());
        }
        let resp = builder.send().await.map_err(|e| {
            let why = tls_failure(&e).unwrap_or_else(|| e.to_string());
            failed(format!("{} {}: {why}", req.method, req.url.value))
        })?;
        if !resp.status().is_success() {
            return Err(failed(format!(
                "{} {} answered {}",
                req.method,
                req.url.value,
                resp.status()
            )));
        }
        Ok(())
    }
}

/// Runs `sh -c command` and waits for the shell's exit, at most `timeout`.
///
/// The hook's output goes to a temporary file, not a pipe: a hook that starts something in the
/// background (`restart: {command: "./my-api &"}`) returns as soon as the shell exits, instead of
/// waiting for every process holding a pipe open to close it. The shell runs in a process group of
/// its own, and a hook that overruns is killed with everything it started (on Unix), so a timed-out
/// hook leaves no process behind.
///
/// # Errors
/// Why the hook failed: it could not start, exited non-zero (with its output), or overran.
async fn run_command(command: &str, timeout: Duration) -> Result<(), String> {
    let output = tempfile::tempfile().map_err(|e| format!("could not run `{command}`: {e}"))?;
    let stdio = || {
        output
            .try_clone()
            .map(std::process::Stdio::from)
            .map_err(|e| format!("could not run `{command}`: {e}"))
    };
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(stdio()?)
        .stderr(stdio()?)
        .kill_on_drop(true);
    crate::process_group::in_own_group(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not run `{command}`: {e}"))?;
    // Killed on a timeout, and when the run is interrupted while the hook runs; a hook that
    // ended on its own keeps what it started (a restarted target).
    let group = crate::process_group::GroupGuard(child.id());
    let status = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => status.map_err(|e| format!("could not run `{command}`: {e}"))?,
        Err(_) => {
            drop(group);
            return Err(format!("`{command}` took longer than {timeout:?}"));
        }
    };
    group.release();
    if status.success() {
        return Ok(());
    }
    let mut text = String::new();
    let mut file = output;
    let _ = std::io::Seek::rewind(&mut file);
    let _ = std::io::Read::read_to_string(&mut std::io::Read::take(&mut file, 4096), &mut text);
    Err(format!("`{command}` exited with {status}: {}", text.trim()))
}

impl HookRunner for ProfileHooks {
    fn run(&self, hook: HookName) -> BoxFuture<'_, Result<(), HookError>> {
        Box::pin(async move {
            let name = hook_name(hook);
            let spec = self.spec(hook).ok_or(HookError::Missing(name))?;
            self.run_spec(name, spec).await
        })
    }

    fn has(&self, hook: HookName) -> bool {
        self.spec(hook).is_some()
    }

    fn crash_arms(&self) -> bool {
        self.hooks.crash.as_ref().is_some_and(|c| c.arms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn a_hook_that_starts_a_background_process_returns_when_its_shell_exits() {
        let started = Instant::now();
        run_command("sleep 5 &", Duration::from_secs(3))
            .await
            .expect("the shell exits at once");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_failing_hook_says_what_it_printed() {
        let err = run_command("echo boom >&2; exit 3", Duration::from_secs(10))
            .await
            .expect_err("exit 3");
        assert!(err.contains("boom") && err.contains('3'), "{err}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_hook_that_overruns_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pid_file = dir.path().join("pid");
        let command = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
        let err = run_command(&command, Duration::from_millis(500))
            .await
            .expect_err("overruns");
        assert!(err.contains("took longer"), "{err}");
        let pid = std::fs::read_to_string(&pid_file).expect("the hook wrote its child's pid");
        let stat = std::path::PathBuf::from(format!("/proc/{}/stat", pid.trim()));
        let deadline = Instant::now() + Duration::from_secs(10);
        // Gone, or a zombie waiting for a reaper: either way no longer running.
        while std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z ")) {
            assert!(
                Instant::now() < deadline,
                "the hook's `sleep 60` survived its timeout"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
