//! Spawning, watching, killing and respawning the leasebroker child.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use idemspec_scenarios::catalogue;
use idemspec_scenarios::profile::TargetProfile;
use idemspec_scenarios::LoadError;
use leasebroker::fleet::CreateMode;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::Mutex;

use super::tls::ReferencePki;
use super::{ReferenceError, ReferenceHooks, ReferenceOptions};
use crate::process_group::LIFELINE_ENV;

/// How long the child may take to print its listening lines.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The two principals' tokens (the tokens file maps token → principal); with `--tls`, the
/// principals' names are their client certificates' common names.
const TOKENS: [(&str, &str); 2] = [
    ("idemspec-alice-token", "alice"),
    ("idemspec-bob-token", "bob"),
];

/// The temporary directories' prefix, in the system's temporary directory.
const DIR_PREFIX: &str = "idemspec-reference-";
/// The file in each that names the idemspec process that made it.
const OWNER_FILE: &str = "owner.pid";

/// Removes the temporary directories of reference servers whose idemspec is gone (killed with
/// SIGKILL, which leaves no chance to remove them): each names its owner in [`OWNER_FILE`]; one
/// without that file, or whose owner still runs, is left alone.
fn remove_orphaned_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(DIR_PREFIX));
        if !ours {
            continue;
        }
        let owner = std::fs::read_to_string(path.join(OWNER_FILE))
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok());
        if owner.is_some_and(|pid| !crate::process_group::is_running(pid)) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// How leasebroker is told who the two principals are, written into `dir`: a tokens file
/// (`--tokens`), or with `tls` a throwaway CA and a client certificate per principal.
fn principals(
    tls: bool,
    dir: &std::path::Path,
) -> Result<(Vec<String>, Option<ReferencePki>), ReferenceError> {
    if tls {
        let names = TOKENS.map(|(_, principal)| principal);
        let pki = ReferencePki::write(dir, &names).map_err(ReferenceError::Certificates)?;
        return Ok((pki.leasebroker_args(), Some(pki)));
    }
    let tokens = dir.join("tokens.yaml");
    let text: String = std::iter::once("tokens:\n".to_owned())
        .chain(TOKENS.iter().map(|(t, p)| format!("  {t}: {p}\n")))
        .collect();
    std::fs::write(&tokens, text).map_err(ReferenceError::Files)?;
    Ok((vec!["--tokens".into(), tokens.display().to_string()], None))
}

/// A running reference server.
pub struct ReferenceServer {
    program: PathBuf,
    /// Every argument but `--listen`/`--admin-listen`, which are fixed after the first start.
    args: Vec<String>,
    in_flight_ttl: Duration,
    /// How its creates answer, which picks its profile.
    creates: CreateMode,
    show_log: bool,
    /// Holds the SQLite file, the tokens file (or the certificates) and the child's log; removed
    /// on drop.
    dir: tempfile::TempDir,
    /// The throwaway certificates of a mutual TLS run (`--tls`).
    pki: Option<ReferencePki>,
    /// The child, and the write end of its lifeline ([`LIFELINE_ENV`]).
    child: Mutex<Option<(Child, ChildStdin)>>,
    addrs: std::sync::Mutex<(String, String)>,
}

impl ReferenceServer {
    /// Starts leasebroker with a temporary SQLite file (or `opts.database_url`), an admin listener,
    /// two principals, the given flaws and in-flight TTL.
    ///
    /// # Errors
    /// [`ReferenceError`] when files cannot be written, the child cannot be spawned, or it does not
    /// print its listening lines within 30 s.
    pub async fn start(opts: &ReferenceOptions) -> Result<Arc<Self>, ReferenceError> {
        remove_orphaned_dirs();
        let dir = tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .tempdir()
            .map_err(ReferenceError::Files)?;
        std::fs::write(dir.path().join(OWNER_FILE), std::process::id().to_string())
            .map_err(ReferenceError::Files)?;
        let (principal_args, pki) = principals(opts.tls, dir.path())?;
        let database_url = opts.database_url.clone().unwrap_or_else(|| {
            format!(
                "sqlite://{}?mode=rwc",
                dir.path().join("leasebroker.db").display()
            )
        });
        let program = match &opts.program {
            Some(p) => p.clone(),
            None => std::env::current_exe().map_err(|source| ReferenceError::Spawn {
                program: "current executable".into(),
                source,
            })?,
        };
        let mut args: Vec<String> = opts.subcommand.clone();
        args.extend([
            "--database-url".into(),
            database_url,
            "--in-flight-ttl".into(),
            humantime::format_duration(opts.in_flight_ttl).to_string(),
            "--pool-size".into(),
            "100000".into(),
            // Long enough that a retry 100 ms after a create finds it still in flight.
            "--boot-latency".into(),
            "300ms".into(),
        ]);
        args.extend(principal_args);
        for flaw in &opts.flaws {
            args.extend(["--flaw".into(), flaw.clone()]);
        }
        if opts.creates == CreateMode::Async {
            args.extend(["--creates".into(), "async".into()]);
        }
        let server = Arc::new(Self {
            program,
            args,
            in_flight_ttl: opts.in_flight_ttl,
            creates: opts.creates,
            show_log: opts.show_log || std::env::var_os("IDEMSPEC_REFERENCE_LOG").is_some(),
            dir,
            pki,
            child: Mutex::new(None),
            addrs: std::sync::Mutex::new(("127.0.0.1:0".into(), "127.0.0.1:0".into())),
        });
        server.spawn().await?;
        Ok(server)
    }

    /// Spawns the child on the remembered addresses and waits for its listening lines.
    async fn spawn(&self) -> Result<(), ReferenceError> {
        let (listen, admin) = self.addrs();
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .args(["--listen", &listen, "--admin-listen", &admin])
            .env(LIFELINE_ENV, "stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(self.log_sink())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| ReferenceError::Spawn {
            program: self.program.display().to_string(),
            source,
        })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let lifeline = child.stdin.take().expect("stdin is piped");
        let mut lines = BufReader::new(stdout).lines();
        let read = async {
            let (mut api, mut adm) = (None, None);
            while api.is_none() || adm.is_none() {
                let Some(line) = lines.next_line().await.ok().flatten() else {
                    return Err("the process exited before listening".to_owned());
                };
                if let Some(a) = line.strip_prefix("leasebroker admin listening on http://") {
                    adm = Some(a.trim().to_owned());
                } else if let Some((_, a)) = line
                    .strip_prefix("leasebroker listening on ")
                    .and_then(|url| url.split_once("://"))
                {
                    api = Some(a.trim().to_owned());
                }
            }
            Ok((api.unwrap_or_default(), adm.unwrap_or_default()))
        };
        let started = tokio::time::timeout(START_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| Err(format!("no listening lines in {START_TIMEOUT:?}")));
        let (api, adm) = match started {
            Ok(addrs) => addrs,
            Err(why) => {
                let _ = child.start_kill();
                return Err(ReferenceError::NotListening(format!(
                    "{why}{}",
                    self.log_tail()
                )));
            }
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        *self.addrs.lock().expect("address lock is never poisoned") = (api, adm);
        *self.child.lock().await = Some((child, lifeline));
        Ok(())
    }

    /// Where the child's stderr goes: this process's stderr with `show_log`, otherwise
    /// `leasebroker.log` in the temporary directory (appended across restarts).
    fn log_sink(&self) -> Stdio {
        if self.show_log {
            return Stdio::inherit();
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("leasebroker.log"))
            .map_or_else(|_| Stdio::null(), Stdio::from)
    }

    /// The last lines the child wrote to stderr, for an error message.
    fn log_tail(&self) -> String {
        let text =
            std::fs::read_to_string(self.dir.path().join("leasebroker.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = &lines[lines.len().saturating_sub(8)..];
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its last output:\n  {}", tail.join("\n  "))
        }
    }

    fn addrs(&self) -> (String, String) {
        self.addrs
            .lock()
            .expect("address lock is never poisoned")
            .clone()
    }

    /// The API's base URL, `http://127.0.0.1:PORT` (`https://` with `--tls`).
    pub fn base_url(&self) -> String {
        let scheme = if self.pki.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addrs().0)
    }

    /// The admin listener's base URL.
    pub fn admin_url(&self) -> String {
        format!("http://{}", self.addrs().1)
    }

    /// The bundled profile of its create mode (`scenarios/targets/leasebroker.yaml`, or
    /// `leasebroker-async.yaml`) filled in with this server's addresses, tokens and in-flight TTL;
    /// with `--tls`, trusting the run's CA and naming principals by their client certificates.
    ///
    /// # Errors
    /// A [`LoadError`] if the embedded profile does not load (a build defect).
    pub fn profile(&self) -> Result<TargetProfile, LoadError> {
        let vars: BTreeMap<&str, String> = BTreeMap::from([
            ("LEASEBROKER_URL", self.base_url()),
            ("LEASEBROKER_ADMIN_URL", self.admin_url()),
            ("LEASEBROKER_TOKEN_A", TOKENS[0].0.to_owned()),
            ("LEASEBROKER_TOKEN_B", TOKENS[1].0.to_owned()),
            (
                "LEASEBROKER_IN_FLIGHT_TTL",
                humantime::format_duration(self.in_flight_ttl).to_string(),
            ),
            // The slow variant's handler outlives the in-flight TTL by 2 s.
            (
                "LEASEBROKER_SLOW_BOOT_MS",
                (self.in_flight_ttl + Duration::from_secs(2))
                    .as_millis()
                    .to_string(),
            ),
        ]);
        let (file, text) = match self.creates {
            CreateMode::Sync => (
                catalogue::LEASEBROKER_PROFILE_FILE,
                catalogue::LEASEBROKER_PROFILE,
            ),
            CreateMode::Async => (
                catalogue::LEASEBROKER_ASYNC_PROFILE_FILE,
                catalogue::LEASEBROKER_ASYNC_PROFILE,
            ),
        };
        let env = |name: &str| vars.get(name).cloned();
        let Some(pki) = &self.pki else {
            return TargetProfile::load(file, text, &env);
        };
        let parsed = idemspec_scenarios::from_yaml(file, text)?;
        let text = serde_json::to_string_pretty(&pki.mutual_tls_profile(parsed))
            .expect("a JSON value always serialises");
        TargetProfile::load(file, &text, &env)
    }

    /// Hooks for this server: the profile's (crash armed via the admin API, fail_next) plus a real
    /// restart.
    pub fn hooks(self: &Arc<Self>) -> Arc<ReferenceHooks> {
        Arc::new(ReferenceHooks::new(self.clone()))
    }

    /// Kills the child if it still runs (SIGKILL) and reaps it.
    pub async fn kill(&self) {
        if let Some((mut child, _lifeline)) = self.child.lock().await.take() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// Waits up to `grace` for the child to die by itself (an armed crash), then kills it, and
    /// starts it again on the same addresses and database.
    ///
    /// # Errors
    /// [`ReferenceError`] when the new child does not come up.
    pub async fn restart(&self, grace: Duration) -> Result<(), ReferenceError> {
        if let Some((mut child, _lifeline)) = self.child.lock().await.take() {
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
        let mut last = None;
        // The port was just released; binding it again may need a moment on a loaded machine.
        for _ in 0..20 {
            match self.spawn().await {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(last.expect("the loop ran at least once"))
    }

    /// Stops the child.
    pub async fn shutdown(&self) {
        self.kill().await;
    }
}
