//! The target process (a process nemesis, in Jepsen's word): a target idemspec starts itself from
//! its profile's `process`, kills with SIGKILL (its whole process group) where a check crashes it,
//! and starts again on the same address — what `--reference` does for leasebroker, for any API.
//!
//! The child runs `sh -c COMMAND` in a process group of its own, with stdin closed and stdout and
//! stderr appended to a log file; it inherits no other descriptor of idemspec's (every descriptor
//! idemspec opens is close-on-exec). Ready means the readiness URL answers (any status, or a TLS
//! handshake that fails, whose cause the run's preflight names) or the
//! readiness address accepts a connection. A run refuses to start when something answers there
//! before the command was started, and the group dies with idemspec, even by SIGKILL (a lifeline
//! pipe its shell watches): a run never judges a process it did not start.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use idemspec_scenarios::profile::{ProcessSpec, TargetProfile};
use idemspec_scenarios::scenario::HookName;
use tokio::process::{Child, ChildStdin};
use tokio::sync::Mutex;

use crate::hooks::{HookError, HookRunner, ProfileHooks};
use crate::http_client::{client_builder, tls_failure, TlsSettings};
use crate::process_group::{in_own_group, kill_group};

/// How long a target may take to become ready when its profile says nothing.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How often readiness is probed.
const READY_POLL: Duration = Duration::from_millis(50);

/// Why the target could not be started.
#[derive(Debug, thiserror::Error)]
pub enum TargetProcessError {
    /// The log file could not be opened.
    #[error("open the target's log `{}`", path.display())]
    Log {
        /// The log's path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `sh` could not be spawned.
    #[error("start `{command}`")]
    Spawn {
        /// The command.
        command: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Something already answered where readiness is probed before the command was started:
    /// an earlier run's orphan (one killed with SIGKILL before its lifeline existed), or another
    /// service. idemspec judges only a process it started.
    #[error(
        "start `{command}`: {probe} already answers ({what}) before the command was started; \
         stop what runs there (`ss -ltnp` names it) or give the target another address"
    )]
    AlreadyAnswering {
        /// The command.
        command: String,
        /// The readiness URL or address.
        probe: String,
        /// What answered.
        what: String,
    },
    /// The profile's TLS files could not be used for the readiness probe.
    #[error("set up TLS for the readiness probe")]
    Tls(#[source] idemspec_tls::TlsError),
    /// The process exited, or did not become ready in time.
    #[error("wait for `{command}` to be ready: {why}; its log `{}` ends with:\n{tail}", log.display())]
    NotReady {
        /// The command.
        command: String,
        /// What happened.
        why: String,
        /// The log's path.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
}

/// A target idemspec runs.
pub struct TargetProcess {
    spec: ProcessSpec,
    /// Where readiness is probed: the readiness URL, else the first base URL.
    ready_url: Option<String>,
    ready_tcp: Option<String>,
    /// The client readiness is probed with: the profile's trust, no client certificate, 2 s.
    client: reqwest::Client,
    log: PathBuf,
    /// The running shell (the process group's leader) and the write end of its lifeline: when
    /// idemspec dies, even by SIGKILL, the pipe closes and the shell kills its whole group
    /// ([`LIFELINE`]).
    child: Mutex<Option<(Child, Option<ChildStdin>)>>,
}

/// The shell that runs a target's command: it moves its stdin (the lifeline pipe, whose only
/// write end is idemspec's) to descriptor 3, runs the command with stdin closed, and keeps a
/// watcher that reads the pipe until it closes, then kills the whole process group — so no target
/// outlives idemspec, whatever killed it. The shell exits with the command's status.
const LIFELINE: &str = "exec 3<&0 0</dev/null
( while read -r _; do :; done <&3; kill -9 0 ) &
sh -c \"$IDEMSPEC_TARGET_COMMAND\" 3<&- &
wait $!
";

impl TargetProcess {
    /// Starts the target `profile.process` describes and waits until it is ready.
    ///
    /// # Errors
    /// [`TargetProcessError`] when it cannot be started or does not become ready in time (with the end
    /// of its log).
    pub async fn start(profile: &TargetProfile) -> Result<Arc<Self>, TargetProcessError> {
        let spec = profile
            .process
            .clone()
            .expect("only started for a profile with `process`");
        let log = match &spec.log {
            Some(path) => PathBuf::from(path),
            // Kept after the run: the report names it, and a failed run is when it is read.
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("idemspec-target-")
                    .tempdir()
                    .map_err(|source| TargetProcessError::Log {
                        path: std::env::temp_dir(),
                        source,
                    })?;
                dir.keep().join("target.log")
            }
        };
        let ready = spec.ready.as_ref();
        let ready_tcp = ready.and_then(|r| r.tcp.as_ref()).map(|t| t.value.clone());
        let ready_url = match ready.and_then(|r| r.url.as_ref()) {
            Some(url) => Some(url.value.clone()),
            None if ready_tcp.is_none() => profile.base_urls.value.first().cloned(),
            None => None,
        };
        let client = client_builder(&TlsSettings::of_profile(profile), None)
            .map_err(TargetProcessError::Tls)?
            .timeout(Duration::from_secs(2))
            .build()
            .expect("a client from a preconfigured rustls config builds");
        let process = Arc::new(Self {
            spec,
            ready_url,
            ready_tcp,
            client,
            log,
            child: Mutex::new(None),
        });
        if let Some((probe, what)) = process.probe().await {
            return Err(TargetProcessError::AlreadyAnswering {
                command: process.spec.command.clone(),
                probe,
                what,
            });
        }
        process.spawn().await?;
        Ok(process)
    }

    /// Where readiness is probed and what answers there now, if anything does.
    async fn probe(&self) -> Option<(String, String)> {
        match (&self.ready_url, &self.ready_tcp) {
            (Some(url), _) => match self.client.get(url).send().await {
                Ok(response) => Some((url.clone(), format!("HTTP {}", response.status()))),
                Err(e) => tls_failure(&e).map(|why| (url.clone(), why)),
            },
            (None, Some(addr)) => match tokio::net::TcpStream::connect(addr).await {
                Ok(_) => Some((addr.clone(), "it accepts TCP connections".into())),
                Err(_) => None,
            },
            (None, None) => None,
        }
    }

    /// The log file the target's output goes to.
    pub fn log(&self) -> &std::path::Path {
        &self.log
    }

    /// The process id of the running target (its process group's id), if it runs.
    pub async fn pid(&self) -> Option<u32> {
        self.child.lock().await.as_ref().and_then(|(c, _)| c.id())
    }

    async fn spawn(&self) -> Result<(), TargetProcessError> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|source| TargetProcessError::Log {
                path: self.log.clone(),
                source,
            })?;
        let stdio = || {
            log.try_clone()
                .map(Stdio::from)
                .map_err(|source| TargetProcessError::Log {
                    path: self.log.clone(),
                    source,
                })
        };
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(LIFELINE)
            .envs(&self.spec.env)
            .env("IDEMSPEC_TARGET_COMMAND", &self.spec.command)
            .stdin(Stdio::piped())
            .stdout(stdio()?)
            .stderr(stdio()?)
            .kill_on_drop(true);
        if let Some(cwd) = &self.spec.cwd {
            command.current_dir(cwd);
        }
        in_own_group(&mut command);
        let mut child = command
            .spawn()
            .map_err(|source| TargetProcessError::Spawn {
                command: self.spec.command.clone(),
                source,
            })?;
        let lifeline = child.stdin.take();
        *self.child.lock().await = Some((child, lifeline));
        self.wait_ready().await?;
        // Ready, but is it ours? A command that failed to start (its address in use) while
        // something else answers there has exited by now, or does within a moment.
        tokio::time::sleep(READY_POLL).await;
        if let Some(status) = self.exited().await {
            return Err(self.not_ready(format!(
                "it exited with {status} although the readiness probe answered: something else \
                 answers there"
            )));
        }
        Ok(())
    }

    /// The shell's exit status, if it has exited.
    async fn exited(&self) -> Option<std::process::ExitStatus> {
        self.child
            .lock()
            .await
            .as_mut()
            .and_then(|(c, _)| c.try_wait().ok().flatten())
    }

    /// Polls readiness until it holds, the process exits, or the timeout passes.
    async fn wait_ready(&self) -> Result<(), TargetProcessError> {
        let limit = self.spec.ready_timeout.map_or(READY_TIMEOUT, |t| t.0);
        let started = tokio::time::Instant::now();
        loop {
            if let Some(status) = self.exited().await {
                return Err(self.not_ready(format!("it exited with {status}")));
            }
            let ready = match (&self.ready_url, &self.ready_tcp) {
                // A handshake that fails is a listener that answers: the run's preflight
                // names the TLS cause, rather than a readiness timeout hiding it.
                (Some(url), _) => match self.client.get(url).send().await {
                    Ok(_) => true,
                    Err(e) => tls_failure(&e).is_some(),
                },
                (None, Some(addr)) => tokio::net::TcpStream::connect(addr).await.is_ok(),
                (None, None) => true,
            };
            if ready {
                return Ok(());
            }
            if started.elapsed() > limit {
                self.kill().await;
                return Err(self.not_ready(format!(
                    "not ready within {}",
                    humantime::format_duration(limit)
                )));
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    fn not_ready(&self, why: String) -> TargetProcessError {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(8)..]
            .iter()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n");
        TargetProcessError::NotReady {
            command: self.spec.command.clone(),
            why,
            log: self.log.clone(),
            tail,
        }
    }

    /// Kills the target's whole process group with SIGKILL and reaps its shell.
    pub async fn kill(&self) {
        if let Some((mut child, _lifeline)) = self.child.lock().await.take() {
            kill_group(child.id());
            let _ = child.wait().await;
        }
    }

    /// Starts the target again (after a kill) and waits until it is ready.
    ///
    /// # Errors
    /// As [`TargetProcess::start`].
    pub async fn restart(&self) -> Result<(), TargetProcessError> {
        self.kill().await;
        self.spawn().await
    }
}

impl Drop for TargetProcess {
    /// Kills the target's process group (`kill_on_drop` alone would kill only its shell).
    fn drop(&mut self) {
        if let Ok(mut child) = self.child.try_lock() {
            if let Some((child, _)) = child.as_mut() {
                kill_group(child.id());
            }
        }
    }
}

/// The hooks of a target idemspec runs: `crash` kills it (at once: the runner fires it while the
/// next request is in the handler), `restart` starts it again; `fail_next` is the profile's.
pub struct ProcessHooks {
    process: Arc<TargetProcess>,
    profile: ProfileHooks,
}

impl ProcessHooks {
    /// Hooks over `process`, with the profile's other hooks.
    pub fn new(process: Arc<TargetProcess>, profile: ProfileHooks) -> Self {
        Self { process, profile }
    }
}

impl HookRunner for ProcessHooks {
    fn run(&self, hook: HookName) -> BoxFuture<'_, Result<(), HookError>> {
        Box::pin(async move {
            match hook {
                HookName::Crash => {
                    self.process.kill().await;
                    Ok(())
                }
                HookName::Restart => self.process.restart().await.map_err(|e| HookError::Failed {
                    hook: "restart",
                    reason: format!("{:#}", anyhow::Error::new(e)),
                }),
                HookName::FailNext => self.profile.run(hook).await,
            }
        })
    }

    fn has(&self, hook: HookName) -> bool {
        match hook {
            HookName::Crash | HookName::Restart => true,
            HookName::FailNext => self.profile.has(hook),
        }
    }

    fn crash_arms(&self) -> bool {
        false
    }
}
