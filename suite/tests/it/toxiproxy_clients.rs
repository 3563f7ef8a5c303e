//! Toxiproxy's own clients (toxiproxy-python from PyPI, toxiproxy-node-client from npm) run their
//! documented usage against `idemspec proxy --toxiproxy-api`: the scripts in
//! `proxy/tests/toxiproxy-clients/`, installed by its `install.sh`. Without the clients the test
//! says so and passes, except in CI (`CI=true`), where a missing client fails it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proxy/tests/toxiproxy-clients")
}

/// A TCP upstream that echoes every byte back until the client half-closes.
fn echo_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 || conn.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = conn.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    addr
}

/// `idemspec proxy --toxiproxy-api 127.0.0.1:0`, killed on drop.
struct Server(Child, SocketAddr);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn server() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemspec"))
        .args(["proxy", "--toxiproxy-api", "127.0.0.1:0"])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the idemspec binary runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a first line");
    let addr = line
        .trim()
        .strip_prefix("idemspec-proxy toxiproxy API on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .parse()
        .expect("an address");
    Server(child, addr)
}

/// Whether `path` (under the clients folder) is installed; a missing one fails in CI.
fn installed(path: &str) -> bool {
    let there = clients_dir().join(path).exists();
    if !there {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{path} is missing: run proxy/tests/toxiproxy-clients/install.sh (CI runs it in .ci/run)"
        );
        eprintln!("skipped: {path} is not installed (proxy/tests/toxiproxy-clients/install.sh)");
    }
    there
}

/// Runs a usage script; every line it prints is `PASS …`, and it exits 0.
fn run_script(program: &str, args: &[String]) {
    // A program in the clients folder (the venv's python) or on PATH (node).
    let local = clients_dir().join(program);
    let program_path = if local.exists() {
        local
    } else {
        program.into()
    };
    let out = Command::new(program_path)
        .args(args)
        .current_dir(clients_dir())
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{program}: {}\n{stdout}\n{stderr}",
        out.status
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() >= 10, "the whole usage ran:\n{stdout}");
    assert!(lines.iter().all(|l| l.starts_with("PASS ")), "{stdout}");
}

#[test]
fn toxiproxy_python_runs_its_documented_usage() {
    if !installed("venv/lib") {
        return;
    }
    let server = server();
    let args = [
        "python_usage.py".to_owned(),
        server.1.ip().to_string(),
        server.1.port().to_string(),
        echo_upstream().to_string(),
    ];
    run_script("venv/bin/python", &args);
}

#[test]
fn toxiproxy_node_client_runs_its_documented_usage() {
    if !installed("node_modules/toxiproxy-node-client") {
        return;
    }
    let server = server();
    let args = [
        "node_usage.js".to_owned(),
        format!("http://{}", server.1),
        echo_upstream().to_string(),
    ];
    run_script("node", &args);
}
