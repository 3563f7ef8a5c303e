//! Pass-through benchmark, measured as a new user would: an nginx upstream (one worker, a
//! 200-byte JSON body), `wrk -t1` at 1 and 64 connections, direct, through haproxy (`nbthread N`,
//! keep-alive on both sides) and through `idemspec proxy --threads N` (the installed binary, or
//! any build of it), for each N, every target once per round, rounds interleaved.
//!
//! ```text
//! apt-get install -y nginx-light haproxy wrk
//! cargo install --path suite
//! cargo run --release -p idemspec-proxy --example proxy_bench -- \
//!     [--rounds 5] [--seconds 4] [--threads 1,2] [--proxy idemspec=$(which idemspec)]...
//! ```
//!
//! `--proxy LABEL=PATH` may be given more than once (say a build before and after a change): each
//! binary is run as `PATH proxy --listen 127.0.0.1:0 --upstream http://NGINX --threads N`, with
//! its event log on as always. `--proxy "LABEL=PATH ARG..."` adds the words after the path to its
//! `proxy` arguments (`--scenario rules.yaml`: the same binary with rules in force; the flag's
//! `--upstream` wins over the file's). Every server listens on 127.0.0.1 (nginx and haproxy on a free
//! port picked by binding port 0). Per round and per target, stderr gets one line with req/s,
//! p50, p99, the server's CPU time per request (user + system of its process, µs) and the load
//! average; stdout gets the Markdown table of medians (and min–max) and the ratios the issue
//! asks for: req/s against haproxy's at 64 connections, added p50 and p99 at 1 connection
//! (through the proxy minus direct, medians of the rounds) against haproxy's.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};

/// Connection counts measured (wrk `-c`).
const CONNS: [u32; 2] = [1, 64];

/// One wrk measurement.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rps: f64,
    /// CPU time the server process spent per request (µs); 0 for the direct target.
    cpu_us: f64,
    p50_us: f64,
    p99_us: f64,
}

/// An `idemspec proxy` binary to measure (`--proxy "LABEL=PATH ARG..."`).
struct Proxy {
    label: String,
    path: PathBuf,
    /// More `proxy` arguments (`--scenario FILE`).
    args: Vec<String>,
}

/// One thing wrk is pointed at.
struct Target {
    /// `direct`, `haproxy`, or a `--proxy` label.
    name: String,
    /// Threads it serves with (0 for direct).
    threads: usize,
    addr: SocketAddr,
    /// The process whose CPU time is counted (none for direct: nginx is shared by all).
    pid: Option<u32>,
    /// `samples[c]`: one per round at `CONNS[c]`.
    samples: [Vec<Sample>; 2],
}

/// Child processes, stopped when the run ends (also on an error): SIGTERM first, so that nginx's
/// master stops its worker (a SIGKILLed master leaves the worker running, orphaned), then SIGKILL
/// for whatever has not exited within 2 s.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        for child in &mut self.0 {
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| -> Vec<&str> {
        args.windows(2)
            .filter(|w| w[0] == name)
            .map(|w| w[1].as_str())
            .collect()
    };
    let number = |name: &str, default: u64| -> anyhow::Result<u64> {
        match value(name).last() {
            Some(v) => v
                .parse()
                .with_context(|| format!("{name} {v}: not a number")),
            None => Ok(default),
        }
    };
    let rounds = number("--rounds", 5)?.clamp(1, 50);
    let seconds = number("--seconds", 4)?.clamp(1, 60);
    let threads: Vec<usize> = match value("--threads").last() {
        Some(list) => list
            .split(',')
            .map(|t| t.parse().context("--threads: a list like 1,2"))
            .collect::<anyhow::Result<_>>()?,
        None => vec![1, 2],
    };
    let mut proxies: Vec<Proxy> = value("--proxy")
        .iter()
        .map(|spec| {
            let (label, command) = spec
                .split_once('=')
                .context("--proxy LABEL=PATH (e.g. idemspec=/root/.cargo/bin/idemspec)")?;
            let mut words = command.split_whitespace();
            let path = words.next().context("--proxy LABEL=PATH: no path")?;
            Ok(Proxy {
                label: label.to_owned(),
                path: PathBuf::from(path),
                args: words.map(str::to_owned).collect(),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    if proxies.is_empty() {
        proxies.push(Proxy {
            label: "idemspec".into(),
            path: PathBuf::from("idemspec"),
            args: Vec::new(),
        });
    }
    for tool in ["wrk", "haproxy", "nginx"] {
        if Command::new(tool).arg("-v").output().is_err() {
            bail!("`{tool}` not found\nhint: apt-get install -y nginx-light haproxy wrk");
        }
    }

    let dir = tempfile_dir()?;
    let mut children = Children(Vec::new());
    let upstream = spawn_nginx(&dir, &mut children)?;
    let mut targets = vec![Target::new("direct", 0, upstream, None)];
    for &n in &threads {
        let (addr, pid) = spawn_haproxy(&dir, upstream, n, &mut children)?;
        targets.push(Target::new("haproxy", n, addr, Some(pid)));
        for proxy in &proxies {
            let (addr, pid) = spawn_proxy(proxy, upstream, n, &mut children)?;
            targets.push(Target::new(&proxy.label, n, addr, Some(pid)));
        }
    }
    for t in &targets {
        wrk(t.addr, 8, 1)?; // warm-up: connections, caches, the CPU's frequency
    }
    for round in 1..=rounds {
        for (c, &conns) in CONNS.iter().enumerate() {
            for t in &mut targets {
                let before = t.pid.map(cpu_ticks).transpose()?;
                let mut s = wrk(t.addr, conns, seconds)?;
                if let (Some(pid), Some(before)) = (t.pid, before) {
                    let ticks = cpu_ticks(pid)? - before;
                    s.cpu_us = ticks as f64 * 1e4 / (s.rps * seconds as f64);
                }
                eprintln!(
                    "round {round} conns {conns:>2} {:<14} {:>9.0} req/s  p50 {:>6.0} us  p99 {:>6.0} us  cpu {:>5.1} us/req  load {}",
                    t.label(), s.rps, s.p50_us, s.p99_us, s.cpu_us, loadavg()
                );
                t.samples[c].push(s);
            }
        }
    }
    drop(children);
    let _ = std::fs::remove_dir_all(&dir);
    report(&targets, &proxies, &threads);
    Ok(())
}

impl Target {
    fn new(name: &str, threads: usize, addr: SocketAddr, pid: Option<u32>) -> Self {
        Self {
            name: name.to_owned(),
            threads,
            addr,
            pid,
            samples: [Vec::new(), Vec::new()],
        }
    }

    fn label(&self) -> String {
        if self.threads == 0 {
            self.name.clone()
        } else {
            format!("{} t{}", self.name, self.threads)
        }
    }

    /// (median, min, max) of one figure at `CONNS[c]`.
    fn stat(&self, c: usize, f: impl Fn(&Sample) -> f64) -> (f64, f64, f64) {
        let mut v: Vec<f64> = self.samples[c].iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0], v[v.len() - 1])
    }
}

/// Prints the table of medians and, per proxy and thread count, the figures against haproxy's.
fn report(targets: &[Target], proxies: &[Proxy], threads: &[usize]) {
    println!("| target | conns | req/s median (min–max) | p50 µs median (min–max) | p99 µs median (min–max) | server CPU µs/req |");
    println!("|---|---|---|---|---|---|");
    for (c, conns) in CONNS.iter().enumerate() {
        for t in targets {
            let (rps, rps_lo, rps_hi) = t.stat(c, |s| s.rps);
            let (p50, p50_lo, p50_hi) = t.stat(c, |s| s.p50_us);
            let (p99, p99_lo, p99_hi) = t.stat(c, |s| s.p99_us);
            let cpu = match t.pid {
                Some(_) => format!("{:.1}", t.stat(c, |s| s.cpu_us).0),
                None => "–".into(),
            };
            println!(
                "| {} | {conns} | {rps:.0} ({rps_lo:.0}–{rps_hi:.0}) | {p50:.0} ({p50_lo:.0}–{p50_hi:.0}) | {p99:.0} ({p99_lo:.0}–{p99_hi:.0}) | {cpu} |",
                t.label()
            );
        }
    }
    println!();
    let find = |name: &str, n: usize| targets.iter().find(|t| t.name == name && t.threads == n);
    let direct = &targets[0];
    let (d50, d99) = (
        direct.stat(0, |s| s.p50_us).0,
        direct.stat(0, |s| s.p99_us).0,
    );
    for &n in threads {
        let Some(ha) = find("haproxy", n) else {
            continue;
        };
        for Proxy { label, .. } in proxies {
            let Some(ours) = find(label, n) else { continue };
            let per_round: Vec<String> = ours.samples[1]
                .iter()
                .zip(&ha.samples[1])
                .map(|(o, h)| format!("{:.2}", o.rps / h.rps))
                .collect();
            println!(
                "- {label} t{n}: req/s at 64 conns {:.2}× haproxy's (target ≥ 1.1; per round {}); CPU per request {:.1} vs {:.1} µs",
                ours.stat(1, |s| s.rps).0 / ha.stat(1, |s| s.rps).0,
                per_round.join(", "),
                ours.stat(1, |s| s.cpu_us).0,
                ha.stat(1, |s| s.cpu_us).0,
            );
            let (o50, h50) = (
                ours.stat(0, |s| s.p50_us).0 - d50,
                ha.stat(0, |s| s.p50_us).0 - d50,
            );
            let (o99, h99) = (
                ours.stat(0, |s| s.p99_us).0 - d99,
                ha.stat(0, |s| s.p99_us).0 - d99,
            );
            println!(
                "  added at 1 conn: p50 {o50:.0} vs haproxy's {h50:.0} µs ({:.2}×, target ≤ 0.9), p99 {o99:.0} vs {h99:.0} µs (target ≤ haproxy's)",
                o50 / h50
            );
        }
    }
}

/// A fresh directory for the servers' configuration and logs.
fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("idemspec-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A port that was free a moment ago (nginx and haproxy cannot bind port 0 and say which).
fn free_port() -> anyhow::Result<SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// Waits until `addr` accepts connections (5 s at most).
fn wait_listening(addr: SocketAddr, what: &str) -> anyhow::Result<()> {
    for _ in 0..100 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{what} did not start on {addr}")
}

/// The upstream's body: a JSON object of exactly 200 bytes.
fn json_body() -> String {
    let head = r#"{"id":"ord_8c1f2a","status":"accepted","amount":1250,"currency":"EUR","note":""#;
    let tail = r#""}"#;
    let pad = 200 - head.len() - tail.len();
    format!("{head}{}{tail}", "x".repeat(pad))
}

/// nginx with one worker answering every request with [`json_body`], keep-alive without a limit.
fn spawn_nginx(dir: &Path, children: &mut Children) -> anyhow::Result<SocketAddr> {
    let addr = free_port()?;
    let d = dir.display();
    let config = format!(
        "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  keepalive_requests 1000000;\n  keepalive_timeout 300s;\n\
         client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fcgi;\n\
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         server {{\n    listen {addr};\n    location / {{ default_type application/json; return 200 '{}'; }}\n  }}\n}}\n",
        json_body()
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, config)?;
    let child = Command::new("nginx")
        .arg("-c")
        .arg(&path)
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("nginx-error.log"))
        .spawn()
        .context("failed to start nginx")?;
    children.0.push(child);
    wait_listening(addr, "nginx")?;
    Ok(addr)
}

/// haproxy in `mode http` with keep-alive on both sides and `nbthread` threads; (address, pid).
fn spawn_haproxy(
    dir: &Path,
    upstream: SocketAddr,
    nbthread: usize,
    children: &mut Children,
) -> anyhow::Result<(SocketAddr, u32)> {
    let addr = free_port()?;
    let config = format!(
        "global\n  maxconn 4096\n  nbthread {nbthread}\ndefaults\n  mode http\n  option http-keep-alive\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\nfrontend f\n  bind {addr}\n  default_backend b\nbackend b\n  server s1 {upstream}\n"
    );
    let path = dir.join(format!("haproxy-{nbthread}.cfg"));
    std::fs::write(&path, config)?;
    let child = Command::new("haproxy")
        .arg("-f")
        .arg(&path)
        .spawn()
        .context("failed to start haproxy")?;
    let pid = child.id();
    children.0.push(child);
    wait_listening(addr, "haproxy")?;
    Ok((addr, pid))
}

/// `PATH proxy --threads N ARG...` in front of `upstream`; (the address it printed, pid).
fn spawn_proxy(
    proxy: &Proxy,
    upstream: SocketAddr,
    threads: usize,
    children: &mut Children,
) -> anyhow::Result<(SocketAddr, u32)> {
    let mut child = Command::new(&proxy.path)
        .args(["proxy", "--listen", "127.0.0.1:0", "--threads"])
        .arg(threads.to_string())
        .arg("--upstream")
        .arg(format!("http://{upstream}"))
        .args(&proxy.args)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("failed to start {}", proxy.path.display()))?;
    let stdout = child.stdout.take().context("proxy stdout")?;
    let pid = child.id();
    children.0.push(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let addr = line
        .trim()
        .strip_prefix("idemspec-proxy listening on http://")
        .with_context(|| format!("unexpected first line from the proxy: {line:?}"))?;
    Ok((addr.parse()?, pid))
}

/// Runs `wrk -t1 -cN -dS --latency` against `addr`.
fn wrk(addr: SocketAddr, conns: u32, seconds: u64) -> anyhow::Result<Sample> {
    let out = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{conns}"),
            &format!("-d{seconds}s"),
            "--latency",
        ])
        .arg(format!("http://{addr}/"))
        .output()
        .context("failed to run wrk")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rps = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("no Requests/sec in wrk output:\n{text}"))?;
    let pct = |p: &str| -> anyhow::Result<f64> {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(p))
            .with_context(|| format!("no {p} line in wrk output:\n{text}"))?;
        parse_us(line.split_whitespace().nth(1).unwrap_or_default())
    };
    if text.contains("Non-2xx") || text.contains("Socket errors") {
        eprintln!("warning: wrk saw errors against {addr}:\n{text}");
    }
    Ok(Sample {
        rps,
        cpu_us: 0.0,
        p50_us: pct("50%")?,
        p99_us: pct("99%")?,
    })
}

/// User + system CPU time of a process so far, in clock ticks (1/100 s on Linux).
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

/// The 1-minute load average.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

/// wrk prints latencies as `812.00us`, `1.20ms` or `1.01s`.
fn parse_us(v: &str) -> anyhow::Result<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e6)
    } else {
        bail!("unknown latency `{v}`")
    };
    Ok(num.parse::<f64>()? * scale)
}
