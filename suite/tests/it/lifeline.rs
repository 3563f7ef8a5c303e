//! No verdict on a process idemspec did not start: a target idemspec starts dies with it, even when
//! idemspec itself is killed with SIGKILL (what a CI runner does after its cancel grace period),
//! and a run whose target address already answers before the command was started refuses to
//! start (exit 2) instead of judging whatever answers there.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use idemspec::target_process::{TargetProcess, TargetProcessError};
use idemspec_scenarios::profile::TargetProfile;

/// The processes whose parent is `pid`, with their command lines.
fn children_of(pid: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the command may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push((child, cmdline));
        }
    }
    found
}

/// Whether `pid` has a listening TCP socket (its descriptors' socket inodes among
/// `/proc/net/tcp`'s entries in state `0A`, LISTEN).
fn listens(pid: u32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let inodes: Vec<String> = fds
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            link.strip_prefix("socket:[")?
                .strip_suffix(']')
                .map(str::to_owned)
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(3) == Some(&"0A") && fields.get(9).is_some_and(|i| inodes.iter().any(|n| n == i))
    })
}

/// Whether `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
    })
}

/// Polls `probe` every 50 ms until it returns something, for at most `limit`.
fn wait_for<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `idemspec run --reference` killed with SIGKILL mid-run: its leasebroker child exits within
/// seconds (its lifeline closed), and the next reference server's start removes the temporary
/// directory the killed run could not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_reference_run_leaves_no_server_and_no_files_behind() {
    let mut idemspec = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["run", "--reference", "--only", "slow-handler-outlives-ttl"])
        .args(["--color", "never"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("idemspec starts");
    let parent = idemspec.id();
    // Listening, so past its start-up (a child killed before it printed its listening lines to
    // the dead run would die of the broken pipe, lifeline or not).
    let server = wait_for(Duration::from_secs(30), || {
        children_of(parent)
            .into_iter()
            .find(|(pid, cmd)| cmd.contains("__leasebroker") && listens(*pid))
            .map(|(pid, _)| pid)
    })
    .expect("the run starts its leasebroker child");
    std::thread::sleep(Duration::from_millis(300));
    let dir = wait_for(Duration::from_secs(10), || {
        std::fs::read_dir(std::env::temp_dir())
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                std::fs::read_to_string(p.join("owner.pid"))
                    .is_ok_and(|owner| owner.trim() == parent.to_string())
            })
    })
    .expect("the run's temporary directory names its owner");
    idemspec.kill().expect("SIGKILL");
    idemspec.wait().expect("reaped");
    let gone = wait_for(Duration::from_secs(10), || (!alive(server)).then_some(()));
    assert!(
        gone.is_some(),
        "leasebroker (pid {server}) outlived the idemspec that started it"
    );
    assert!(dir.exists(), "a SIGKILLed run cannot remove its own files");
    let next = idemspec::reference::ReferenceServer::start(&crate::support::reference::reference(
        &[],
        None,
    ))
    .await
    .expect("the next reference starts");
    assert!(
        !dir.exists(),
        "the next start removes {} (its owner is gone)",
        dir.display()
    );
    next.shutdown().await;
}

/// A profile whose `process` runs leasebroker on `port`, with `/healthz` as its readiness URL.
fn process_profile_text(port: u16, db: &std::path::Path) -> String {
    let text = idemspec_scenarios::catalogue::LEASEBROKER_PROFILE;
    let start = text.find("hooks:").expect("the bundled profile has hooks");
    let command = format!(
        "exec {bin} __leasebroker --dev --listen 127.0.0.1:{port} --database-url \
         sqlite://{db}?mode=rwc --in-flight-ttl 2s --boot-latency 100ms",
        bin = env!("CARGO_BIN_EXE_idemspec"),
        db = db.display(),
    );
    format!(
        "{}process:\n  command: {command:?}\n  ready: {{url: \"http://127.0.0.1:{port}/healthz\"}}\n",
        &text[..start]
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `idemspec run` with a profile's `process`, killed with SIGKILL mid-run: the target's whole
/// process group exits, the port is free again, and the next run starts its own target cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_run_leaves_no_target_behind_and_the_next_run_starts_cleanly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let profile = dir.path().join("lb.yaml");
    std::fs::write(
        &profile,
        process_profile_text(port, &dir.path().join("lb.db")),
    )
    .expect("profile written");
    let url = format!("http://127.0.0.1:{port}");
    let run = |only: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_idemspec"));
        command
            .arg("run")
            .arg("--target")
            .arg(&profile)
            .args(["--only", only, "--color", "never"])
            .env("LEASEBROKER_URL", &url)
            .env("LEASEBROKER_IN_FLIGHT_TTL", "2s")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };
    let mut idemspec = run("slow-handler-outlives-ttl")
        .spawn()
        .expect("idemspec starts");
    let parent = idemspec.id();
    let shell = wait_for(Duration::from_secs(30), || {
        children_of(parent).first().map(|(pid, _)| *pid)
    })
    .expect("the run starts its target");
    let server = wait_for(Duration::from_secs(30), || {
        let found = children_of(shell)
            .into_iter()
            .find(|(_, cmd)| cmd.contains("__leasebroker"))
            .map(|(pid, _)| pid);
        // Listening, so the run is under way.
        found.filter(|_| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok())
    })
    .expect("the target's shell runs leasebroker");
    idemspec.kill().expect("SIGKILL");
    idemspec.wait().expect("reaped");
    let gone = wait_for(Duration::from_secs(10), || {
        (!alive(server) && !alive(shell)).then_some(())
    });
    assert!(
        gone.is_some(),
        "the target (shell {shell}, leasebroker {server}) outlived the idemspec that started it"
    );
    let refused = wait_for(Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port))
            .is_err()
            .then_some(())
    });
    assert!(refused.is_some(), "the port is still served");
    let next = run("lost-response").output().expect("the next run");
    let stdout = String::from_utf8_lossy(&next.stdout);
    assert_eq!(
        next.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&next.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// Something already answers at the target's readiness URL before its command was started (an
/// earlier run's orphan, another service): the start is refused naming the URL and the answer,
/// and the command never runs; through the CLI that is exit 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_address_that_already_answers_is_refused() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut head = [0u8; 1024];
                let _ = stream.read(&mut head).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = dir.path().join("started");
    let text = process_profile_text(port, &dir.path().join("lb.db")).replace(
        "command: \"exec ",
        &format!("command: \"touch {} && exec ", marker.display()),
    );
    let url = format!("http://127.0.0.1:{port}");
    let vars = [("LEASEBROKER_URL", url.clone())];
    let profile = TargetProfile::load("lb.yaml", &text, &|var| {
        vars.iter().find(|(k, _)| *k == var).map(|(_, v)| v.clone())
    })
    .expect("profile loads");
    let Err(err) = TargetProcess::start(&profile).await else {
        panic!("a start beside something that already answers must be refused");
    };
    assert!(
        matches!(err, TargetProcessError::AlreadyAnswering { .. }),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("{url}/healthz already answers (HTTP 200 OK)")),
        "{message}"
    );
    assert!(!marker.exists(), "the command must not have been started");

    let file = dir.path().join("lb.yaml");
    std::fs::write(&file, &text).expect("profile written");
    let out = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .arg("run")
        .arg("--target")
        .arg(&file)
        .args(["--color", "never"])
        .env("LEASEBROKER_URL", &url)
        .stdin(Stdio::null())
        .output()
        .expect("idemspec runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("already answers"), "{stderr}");
    assert!(!marker.exists(), "the command must not have been started");
}
