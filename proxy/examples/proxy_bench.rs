//! Pass-through benchmark, measured as a new user would: an nginx upstream (one worker, a
//! 200-byte JSON body), `wrk -t1` at 1 and 64 connections, direct, through haproxy (`nbthread N`,
//! keep-alive on both sides) and through `idemspec proxy --threads N` (the installed binary, or
//! any build of it), for each N, every target once per round, rounds interleaved.
//!
//! ```text
//! apt-get install -y nginx-light haproxy wrk
//! cargo install --path suite
//! cargo run --release -p idemspec-proxy --example proxy_bench -- \
//!     [--rounds 5] [--seconds 4] [--threads 1,2] [--proxy idemspec=$(which idemspec)]... [--tls]
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
//!
//! `--tls`: every edge speaks TLS 1.3 with certificates of a throwaway CA (ECDSA P-256, made for
//! the run): wrk reaches nginx, haproxy and the proxy over HTTPS; haproxy (`bind … ssl`) and the
//! proxy (`--tls-cert/--tls-key`) terminate it and originate it to nginx (`ssl verify required
//! ca-file`, `--tls-ca-file`), both sending SNI `localhost` and checking that name. Each load is
//! measured with keep-alive and with a new connection per request (`wrk -H 'Connection: close'`).
//! Session resumption is on for both servers alike: a stateful server-side cache (haproxy
//! `no-tls-tickets`, so its TLS 1.3 tickets name a cache entry, as rustls's default
//! `ServerSessionMemoryCache` does), two tickets per handshake. The table counts, per request,
//! the connections the target accepted and those nginx accepted from it (nginx's `stub_status`;
//! the target's own from the kernel's `PassiveOpens` minus nginx's); the run ends with what each
//! edge negotiated (`openssl s_client`, nginx's log of a probe request sent through each proxy)
//! and whether each front resumes a session (`openssl s_client -sess_in`).
//!
//! `--handshake-cost N` measures instead what one TLS handshake of `idemspec run --reference
//! --tls` costs in CPU, full and resumed (see [`handshake_cost`]); build it `--release`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use idemspec_tls::{write_identity, IdentityFiles, ThrowawayCa};

/// What wrk does in one measurement: `conns` connections, and with `close` every request asks
/// for its connection to be closed (`Connection: close`), so each request opens a new one.
#[derive(Debug, Clone, Copy)]
struct Load {
    conns: u32,
    close: bool,
}

/// Loads measured over plain HTTP: keep-alive at 1 and 64 connections.
const PLAIN_LOADS: &[Load] = &[Load::keep_alive(1), Load::keep_alive(64)];

/// Loads measured with `--tls`: keep-alive and a new connection per request, at 1 and 64.
const TLS_LOADS: &[Load] = &[
    Load::keep_alive(1),
    Load::keep_alive(64),
    Load::new_connections(1),
    Load::new_connections(64),
];

impl Load {
    const fn keep_alive(conns: u32) -> Self {
        Self {
            conns,
            close: false,
        }
    }

    const fn new_connections(conns: u32) -> Self {
        Self { conns, close: true }
    }

    fn label(self) -> String {
        let kind = if self.close { "new conn" } else { "keep-alive" };
        format!("{} {kind}", self.conns)
    }
}

/// One wrk measurement.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    rps: f64,
    /// CPU time the server process spent per request (µs); 0 for the direct target.
    cpu_us: f64,
    p50_us: f64,
    p99_us: f64,
    /// Requests wrk completed.
    requests: u64,
    /// Connections the target accepted, per request.
    down_conns: f64,
    /// Connections nginx accepted from the target, per request (0 for the direct target).
    up_conns: f64,
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
    /// `samples[l]`: one per round at the `l`-th load.
    samples: Vec<Vec<Sample>>,
}

/// What every server of a run shares: the directory of their files, nginx's ports, and with
/// `--tls` the certificates.
struct Bed {
    dir: PathBuf,
    /// nginx's serving port (HTTPS with `--tls`).
    upstream: SocketAddr,
    /// nginx's `stub_status` (plain HTTP), which counts the connections it accepted.
    status: SocketAddr,
    pki: Option<Pki>,
}

/// The run's certificates, as files, all from one throwaway CA: nginx's, and the one haproxy
/// and the proxy show (each for `localhost` and `127.0.0.1`).
struct Pki {
    ca: PathBuf,
    upstream: IdentityFiles,
    front: IdentityFiles,
    /// `front`'s certificate and key in one file: haproxy's `crt`.
    front_pem: PathBuf,
}

impl Pki {
    fn write(dir: &Path) -> anyhow::Result<Self> {
        let ca = ThrowawayCa::new()?;
        let names = ["localhost", "127.0.0.1"];
        let upstream = write_identity(dir, "nginx", &ca.server_cert(&names)?)?;
        let front = ca.server_cert(&names)?;
        let front_pem = dir.join("front-haproxy.pem");
        std::fs::write(&front_pem, format!("{}{}", front.0, front.1))?;
        Ok(Self {
            ca: ca.write_ca(dir)?,
            upstream,
            front: write_identity(dir, "front", &front)?,
            front_pem,
        })
    }
}

impl Bed {
    fn scheme(&self) -> &'static str {
        if self.pki.is_some() {
            "https"
        } else {
            "http"
        }
    }
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

/// The command line.
struct Options {
    rounds: u64,
    seconds: u64,
    threads: Vec<usize>,
    proxies: Vec<Proxy>,
    tls: bool,
    /// `--handshake-cost N`: measure N handshakes of each kind instead (see [`handshake_cost`]).
    handshake_cost: Option<u32>,
}

fn options() -> anyhow::Result<Options> {
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
    Ok(Options {
        rounds: number("--rounds", 5)?.clamp(1, 50),
        seconds: number("--seconds", 4)?.clamp(1, 60),
        threads,
        proxies,
        tls: args.iter().any(|a| a == "--tls"),
        handshake_cost: match value("--handshake-cost").last() {
            Some(n) => Some(
                n.parse()
                    .context("--handshake-cost N: a number of handshakes")?,
            ),
            None => None,
        },
    })
}

fn main() -> anyhow::Result<()> {
    let opts = options()?;
    if let Some(n) = opts.handshake_cost {
        return handshake_cost(n);
    }
    let mut tools = vec!["wrk", "haproxy", "nginx"];
    if opts.tls {
        tools.extend(["openssl", "curl"]);
    }
    for tool in tools {
        if Command::new(tool).arg("-v").output().is_err() {
            bail!(
                "`{tool}` not found\nhint: apt-get install -y nginx-light haproxy wrk openssl curl"
            );
        }
    }
    let loads = if opts.tls { TLS_LOADS } else { PLAIN_LOADS };
    let dir = tempfile_dir()?;
    let pki = opts.tls.then(|| Pki::write(&dir)).transpose()?;
    let mut children = Children(Vec::new());
    let bed = spawn_nginx(dir, pki, &mut children)?;
    let mut targets = vec![Target::new("direct", 0, bed.upstream, None, loads)];
    for &n in &opts.threads {
        let (addr, pid) = spawn_haproxy(&bed, n, &mut children)?;
        targets.push(Target::new("haproxy", n, addr, Some(pid), loads));
        for proxy in &opts.proxies {
            let (addr, pid) = spawn_proxy(proxy, &bed, n, &mut children)?;
            targets.push(Target::new(&proxy.label, n, addr, Some(pid), loads));
        }
    }
    for t in &targets {
        let warm = Load::keep_alive(8);
        wrk(&bed, t.addr, warm, 1)?; // warm-up: connections, caches, the CPU's frequency
    }
    for round in 1..=opts.rounds {
        for (l, &load) in loads.iter().enumerate() {
            for t in &mut targets {
                let s = measure(&bed, t, load, opts.seconds)?;
                eprintln!(
                    "round {round} {:<14} {:<14} {:>9.0} req/s  p50 {:>6.0} us  p99 {:>6.0} us  cpu {:>5.1} us/req  conns/req {:.2} up {:.3}  load {}",
                    load.label(), t.label(), s.rps, s.p50_us, s.p99_us, s.cpu_us, s.down_conns, s.up_conns, loadavg()
                );
                t.samples[l].push(s);
            }
        }
    }
    let facts = if opts.tls {
        tls_facts(&bed, &targets)?
    } else {
        Vec::new()
    };
    drop(children);
    let _ = std::fs::remove_dir_all(&bed.dir);
    report(&targets, &opts.proxies, &opts.threads, loads);
    for line in facts {
        println!("{line}");
    }
    Ok(())
}

/// One wrk run against `t`, with its CPU time and the connections accepted on each side.
fn measure(bed: &Bed, t: &Target, load: Load, seconds: u64) -> anyhow::Result<Sample> {
    let before = t.pid.map(cpu_ticks).transpose()?;
    let accepts_before = accepts(bed.status)?;
    let mut s = wrk(bed, t.addr, load, seconds)?;
    let (nginx, passive) = accepts(bed.status)?;
    // Each reading of nginx's status is one connection it accepted (and one passive open).
    let nginx = nginx - accepts_before.0 - 1;
    let passive = passive - accepts_before.1 - 1;
    let requests = s.requests.max(1) as f64;
    if t.pid.is_some() {
        s.up_conns = nginx as f64 / requests;
        s.down_conns = passive.saturating_sub(nginx) as f64 / requests;
    } else {
        s.down_conns = nginx as f64 / requests;
    }
    if let (Some(pid), Some(before)) = (t.pid, before) {
        let ticks = cpu_ticks(pid)? - before;
        s.cpu_us = ticks as f64 * 1e4 / (s.rps * seconds as f64);
    }
    Ok(s)
}

impl Target {
    fn new(name: &str, threads: usize, addr: SocketAddr, pid: Option<u32>, loads: &[Load]) -> Self {
        Self {
            name: name.to_owned(),
            threads,
            addr,
            pid,
            samples: vec![Vec::new(); loads.len()],
        }
    }

    fn label(&self) -> String {
        if self.threads == 0 {
            self.name.clone()
        } else {
            format!("{} t{}", self.name, self.threads)
        }
    }

    /// (median, min, max) of one figure at the `l`-th load.
    fn stat(&self, l: usize, f: impl Fn(&Sample) -> f64) -> (f64, f64, f64) {
        let mut v: Vec<f64> = self.samples[l].iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0], v[v.len() - 1])
    }
}

/// Prints the table of medians and, per proxy and thread count, the figures against haproxy's.
fn report(targets: &[Target], proxies: &[Proxy], threads: &[usize], loads: &[Load]) {
    let tls = loads.len() == TLS_LOADS.len();
    let (extra_head, extra_rule) = if tls {
        (" conns accepted per request: target, nginx |", "---|")
    } else {
        ("", "")
    };
    println!("| target | conns | req/s median (min–max) | p50 µs median (min–max) | p99 µs median (min–max) | server CPU µs/req |{extra_head}");
    println!("|---|---|---|---|---|---|{extra_rule}");
    for (l, load) in loads.iter().enumerate() {
        for t in targets {
            let (rps, rps_lo, rps_hi) = t.stat(l, |s| s.rps);
            let (p50, p50_lo, p50_hi) = t.stat(l, |s| s.p50_us);
            let (p99, p99_lo, p99_hi) = t.stat(l, |s| s.p99_us);
            let cpu = match t.pid {
                Some(_) => format!("{:.1}", t.stat(l, |s| s.cpu_us).0),
                None => "–".into(),
            };
            let conns = if tls {
                let up = match t.pid {
                    Some(_) => format!("{:.3}", t.stat(l, |s| s.up_conns).0),
                    None => "–".into(),
                };
                format!(" {:.2}, {up} |", t.stat(l, |s| s.down_conns).0)
            } else {
                String::new()
            };
            let conns_label = if tls {
                load.label()
            } else {
                load.conns.to_string()
            };
            println!(
                "| {} | {conns_label} | {rps:.0} ({rps_lo:.0}–{rps_hi:.0}) | {p50:.0} ({p50_lo:.0}–{p50_hi:.0}) | {p99:.0} ({p99_lo:.0}–{p99_hi:.0}) | {cpu} |{conns}",
                t.label()
            );
        }
    }
    println!();
    let find = |name: &str, n: usize| targets.iter().find(|t| t.name == name && t.threads == n);
    for &n in threads {
        let Some(ha) = find("haproxy", n) else {
            continue;
        };
        for Proxy { label, .. } in proxies {
            let Some(ours) = find(label, n) else { continue };
            if tls {
                for (l, load) in loads.iter().enumerate().filter(|(_, l)| l.conns > 1) {
                    ratios(label, n, ours, ha, l, &load.label(), 0.9);
                }
            } else {
                ratios(label, n, ours, ha, 1, "64 conns", 1.1);
                added_latency(&targets[0], ours, ha);
            }
        }
    }
}

/// One line: the proxy's req/s at the `l`-th load against haproxy's, and CPU per request.
fn ratios(label: &str, n: usize, ours: &Target, ha: &Target, l: usize, load: &str, goal: f64) {
    let per_round: Vec<String> = ours.samples[l]
        .iter()
        .zip(&ha.samples[l])
        .map(|(o, h)| format!("{:.2}", o.rps / h.rps))
        .collect();
    println!(
        "- {label} t{n}: req/s at {load} {:.2}× haproxy's (target ≥ {goal}; per round {}); CPU per request {:.1} vs {:.1} µs",
        ours.stat(l, |s| s.rps).0 / ha.stat(l, |s| s.rps).0,
        per_round.join(", "),
        ours.stat(l, |s| s.cpu_us).0,
        ha.stat(l, |s| s.cpu_us).0,
    );
}

/// One line: the latency the proxy adds at 1 connection (through it minus direct, medians)
/// against haproxy's.
fn added_latency(direct: &Target, ours: &Target, ha: &Target) {
    let (d50, d99) = (
        direct.stat(0, |s| s.p50_us).0,
        direct.stat(0, |s| s.p99_us).0,
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

/// nginx with one worker answering every request with [`json_body`], keep-alive without a limit,
/// and `stub_status` on a second, plain port. With `pki`: HTTPS (TLS 1.3 only, its defaults
/// otherwise: tickets on, no session cache), and a log of the requests that carry
/// `X-Bench-Probe` with what their connection negotiated.
fn spawn_nginx(dir: PathBuf, pki: Option<Pki>, children: &mut Children) -> anyhow::Result<Bed> {
    let (addr, status) = (free_port()?, free_port()?);
    let d = dir.display();
    let (listen, tls) = match &pki {
        None => (addr.to_string(), String::new()),
        Some(pki) => (
            format!("{addr} ssl"),
            format!(
                "    ssl_certificate {};\n    ssl_certificate_key {};\n    ssl_protocols TLSv1.3;\n\
                 \x20   access_log {d}/probe.log probe if=$http_x_bench_probe;\n",
                pki.upstream.cert_file.display(),
                pki.upstream.key_file.display()
            ),
        ),
    };
    let config = format!(
        "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log warn;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  keepalive_requests 1000000;\n  keepalive_timeout 300s;\n\
         client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fcgi;\n\
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         log_format probe '$http_x_bench_probe $ssl_protocol $ssl_cipher $ssl_curve reused=$ssl_session_reused';\n\
         server {{\n    listen {listen};\n{tls}    location / {{ default_type application/json; return 200 '{}'; }}\n  }}\n\
         server {{\n    listen {status};\n    location / {{ stub_status; }}\n  }}\n}}\n",
        json_body()
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, config)?;
    let child = Command::new("nginx")
        .arg("-c")
        .arg(&path)
        .arg("-p")
        .arg(&dir)
        .arg("-e")
        .arg(dir.join("nginx-error.log"))
        .spawn()
        .context("failed to start nginx")?;
    children.0.push(child);
    wait_listening(addr, "nginx")?;
    wait_listening(status, "nginx's stub_status")?;
    Ok(Bed {
        dir,
        upstream: addr,
        status,
        pki,
    })
}

/// haproxy in `mode http` with keep-alive on both sides and `nbthread` threads; (address, pid).
/// With TLS: it terminates TLS 1.3 with the front certificate and originates it to nginx,
/// verifying nginx's certificate for `localhost` against the CA (SNI `localhost`); its session
/// cache on and tickets off on both sides (see the module's documentation); a stats socket.
fn spawn_haproxy(
    bed: &Bed,
    nbthread: usize,
    children: &mut Children,
) -> anyhow::Result<(SocketAddr, u32)> {
    let addr = free_port()?;
    let upstream = bed.upstream;
    let (global, bind, server) = match &bed.pki {
        None => (String::new(), String::new(), String::new()),
        Some(pki) => (
            format!(
                "  ssl-default-bind-options ssl-min-ver TLSv1.3 no-tls-tickets\n  \
                 ssl-default-server-options ssl-min-ver TLSv1.3 no-tls-tickets\n  \
                 stats socket {}\n",
                haproxy_socket(bed, nbthread).display()
            ),
            format!(" ssl crt {} alpn http/1.1", pki.front_pem.display()),
            format!(
                " ssl verify required ca-file {} sni str(localhost) verifyhost localhost alpn http/1.1",
                pki.ca.display()
            ),
        ),
    };
    let config = format!(
        "global\n  maxconn 4096\n  nbthread {nbthread}\n{global}defaults\n  mode http\n  option http-keep-alive\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\nfrontend f\n  bind {addr}{bind}\n  default_backend b\nbackend b\n  server s1 {upstream}{server}\n"
    );
    let path = bed.dir.join(format!("haproxy-{nbthread}.cfg"));
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

fn haproxy_socket(bed: &Bed, nbthread: usize) -> PathBuf {
    bed.dir.join(format!("haproxy-{nbthread}.sock"))
}

/// `PATH proxy --threads N ARG...` in front of nginx; (the address it printed, pid). With TLS:
/// `--tls-cert/--tls-key` the front certificate, `--upstream https://…` trusting the CA
/// (`--tls-ca-file`) and checking the name `localhost` (`--tls-server-name`), as haproxy does.
fn spawn_proxy(
    proxy: &Proxy,
    bed: &Bed,
    threads: usize,
    children: &mut Children,
) -> anyhow::Result<(SocketAddr, u32)> {
    let mut command = Command::new(&proxy.path);
    command
        .args(["proxy", "--listen", "127.0.0.1:0", "--threads"])
        .arg(threads.to_string())
        .arg("--upstream")
        .arg(format!("{}://{}", bed.scheme(), bed.upstream));
    if let Some(pki) = &bed.pki {
        command
            .arg("--tls-cert")
            .arg(&pki.front.cert_file)
            .arg("--tls-key")
            .arg(&pki.front.key_file)
            .arg("--tls-ca-file")
            .arg(&pki.ca)
            .args(["--tls-server-name", "localhost"]);
    }
    let mut child = command
        .args(&proxy.args)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("failed to start {}", proxy.path.display()))?;
    let stdout = child.stdout.take().context("proxy stdout")?;
    let pid = child.id();
    children.0.push(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let prefix = format!("idemspec-proxy listening on {}://", bed.scheme());
    let addr = line
        .trim()
        .strip_prefix(prefix.as_str())
        .with_context(|| format!("unexpected first line from the proxy: {line:?}"))?;
    Ok((addr.parse()?, pid))
}

/// Runs `wrk -t1 -cN -dS --latency` against `addr` (with `-H 'Connection: close'` for a new
/// connection per request).
fn wrk(bed: &Bed, addr: SocketAddr, load: Load, seconds: u64) -> anyhow::Result<Sample> {
    let mut command = Command::new("wrk");
    command.args([
        "-t1",
        &format!("-c{}", load.conns),
        &format!("-d{seconds}s"),
        "--latency",
    ]);
    if load.close {
        command.args(["-H", "Connection: close"]);
    }
    // Over TLS by the name `localhost` (127.0.0.1 only here), which wrk sends as SNI, as
    // clients that connect by name do; for `https://127.0.0.1` it would send the IP address,
    // which SNI does not allow (rustls logs a warning per handshake).
    let host = match bed.pki {
        Some(_) => format!("localhost:{}", addr.port()),
        None => addr.to_string(),
    };
    let out = command
        .arg(format!("{}://{host}/", bed.scheme()))
        .output()
        .context("failed to run wrk")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rps = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("no Requests/sec in wrk output:\n{text}"))?;
    let requests = text
        .lines()
        .find_map(|l| l.trim().split_once(" requests in "))
        .and_then(|(n, _)| n.parse().ok())
        .with_context(|| format!("no request count in wrk output:\n{text}"))?;
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
        requests,
        p50_us: pct("50%")?,
        p99_us: pct("99%")?,
        ..Sample::default()
    })
}

/// Connections accepted so far: (by nginx, from its `stub_status`; by every socket of the
/// machine, the kernel's TCP `PassiveOpens`).
fn accepts(status: SocketAddr) -> anyhow::Result<(u64, u64)> {
    let mut stream = std::net::TcpStream::connect(status)?;
    stream.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    // "server accepts handled requests\n 16630948 16630948 31070465"
    let nginx = answer
        .lines()
        .skip_while(|l| !l.starts_with("server accepts"))
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("no accepts count in nginx's stub_status:\n{answer}"))?;
    Ok((nginx, snmp_tcp("PassiveOpens")?))
}

/// A counter of the `Tcp:` lines of `/proc/net/snmp` (a line of names, then one of values).
fn snmp_tcp(name: &str) -> anyhow::Result<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp")?;
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next().unwrap_or(""), tcp.next().unwrap_or(""));
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.parse().ok())
        .with_context(|| format!("no Tcp {name} in /proc/net/snmp"))
}

/// `--handshake-cost N`: the CPU time of one mutual-TLS handshake as `idemspec run --reference
/// --tls` makes them (TLS 1.3, ECDSA P-256 certificates of a throwaway CA, a client certificate
/// required and verified), client and server in one thread over memory, no network: `N` full
/// handshakes (the client's resumption off), then `N` resumed ones (each offering the ticket
/// the previous one left). Prints µs of CPU time per handshake, both sides together (the
/// process's, from `/proc`; `N` of 1000 or more for the 10 ms ticks to count little).
fn handshake_cost(n: u32) -> anyhow::Result<()> {
    use idemspec_tls::rustls::client::{ClientConfig, Resumption};
    use idemspec_tls::rustls::{ClientConnection, Connection, HandshakeKind, ServerConnection};
    let dir = tempfile_dir()?;
    let ca = ThrowawayCa::new()?;
    let (cert, key) = ca.server_cert(&["localhost"])?;
    let server = idemspec_tls::server_config_pem(&cert, &key, Some(&ca.ca_pem()), true)?;
    let trust = idemspec_tls::TrustOptions {
        ca_file: Some(ca.write_ca(&dir)?),
        ..Default::default()
    };
    let identity = write_identity(&dir, "alice", &ca.client_cert("alice")?)?;
    let resuming = idemspec_tls::client_config(&trust, Some(&identity))?;
    let mut full = ClientConfig::clone(&resuming);
    full.resumption = Resumption::disabled();
    let full = std::sync::Arc::new(full);
    let _ = std::fs::remove_dir_all(&dir);
    let name = idemspec_tls::rustls::pki_types::ServerName::try_from("localhost")?;
    let once = |client: &std::sync::Arc<ClientConfig>| -> anyhow::Result<Option<HandshakeKind>> {
        let mut c = Connection::from(ClientConnection::new(client.clone(), name.clone())?);
        let mut s = Connection::from(ServerConnection::new(server.clone())?);
        let mut buf = Vec::new();
        for _ in 0..20 {
            if move_records(&mut c, &mut s, &mut buf)? + move_records(&mut s, &mut c, &mut buf)?
                == 0
            {
                break;
            }
        }
        anyhow::ensure!(
            !c.is_handshaking() && !s.is_handshaking(),
            "handshake unfinished"
        );
        Ok(c.handshake_kind())
    };
    for (label, config, kind) in [
        ("full", &full, HandshakeKind::Full),
        ("resumed", &resuming, HandshakeKind::Resumed),
    ] {
        // Warm-up, and the first ticket for the resumed ones (the full ones' tickets, never
        // used, have since filled the server's cache of 256).
        once(config)?;
        let (started, ticks) = (std::time::Instant::now(), cpu_ticks(std::process::id())?);
        for _ in 0..n {
            let got = once(config)?;
            anyhow::ensure!(got == Some(kind), "{label}: the handshake was {got:?}");
        }
        let wall = started.elapsed().as_secs_f64() * 1e6 / f64::from(n);
        let cpu = (cpu_ticks(std::process::id())? - ticks) as f64 * 1e4 / f64::from(n);
        println!("{label} mutual-TLS handshake, client and server together: {cpu:.0} µs of CPU ({wall:.0} µs of wall time; {n} handshakes)");
    }
    Ok(())
}

/// Hands every record `from` has to send to `to`; the bytes moved.
fn move_records(
    from: &mut idemspec_tls::rustls::Connection,
    to: &mut idemspec_tls::rustls::Connection,
    buf: &mut Vec<u8>,
) -> anyhow::Result<usize> {
    buf.clear();
    while from.wants_write() {
        from.write_tls(buf)?;
    }
    let mut rest = &buf[..];
    while !rest.is_empty() {
        to.read_tls(&mut rest)?;
        to.process_new_packets()?;
    }
    Ok(buf.len())
}

/// What each TLS edge negotiated and whether each front resumes a session, as lines to print.
fn tls_facts(bed: &Bed, targets: &[Target]) -> anyhow::Result<Vec<String>> {
    let pki = bed.pki.as_ref().context("TLS facts without certificates")?;
    let mut lines = vec![String::new()];
    for t in targets {
        let session = bed
            .dir
            .join(format!("session-{}.pem", t.label().replace(' ', "-")));
        let first = s_client(pki, t.addr, &["-sess_out"], &session)?;
        let again = s_client(pki, t.addr, &["-sess_in"], &session)?;
        lines.push(format!(
            "- {} client edge: {}; a second connection with the first's session: {}",
            t.label(),
            first.0,
            if again.1 { "resumed" } else { "NOT resumed" }
        ));
        if t.pid.is_some() {
            let status = Command::new("curl")
                .args(["-s", "-o", "/dev/null", "--cacert"])
                .arg(&pki.ca)
                .args([
                    "-H",
                    &format!("X-Bench-Probe: {}", t.label().replace(' ', "-")),
                ])
                .arg(format!("https://{}/", t.addr))
                .status()?;
            anyhow::ensure!(status.success(), "curl through {} failed", t.label());
        }
        if t.name == "haproxy" {
            lines.push(format!(
                "  haproxy's counters: {}",
                haproxy_info(bed, t.threads)?
            ));
        }
    }
    std::thread::sleep(Duration::from_millis(200)); // nginx logs a request after answering it
    let log = std::fs::read_to_string(bed.dir.join("probe.log")).unwrap_or_default();
    for line in log.lines() {
        lines.push(format!(
            "- upstream edge (nginx's log of a probe request): {line}"
        ));
    }
    Ok(lines)
}

/// One `openssl s_client` connection to `addr` sending one request, saving (`-sess_out`) or
/// offering (`-sess_in`) the session in `session`: (protocol, cipher and key exchange; resumed).
fn s_client(
    pki: &Pki,
    addr: SocketAddr,
    sess: &[&str],
    session: &Path,
) -> anyhow::Result<(String, bool)> {
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &addr.to_string(),
            "-servername",
            "localhost",
        ])
        .arg("-CAfile")
        .arg(&pki.ca)
        .args(sess)
        .arg(session)
        .args(["-ign_eof", "-verify_return_error"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("failed to start openssl s_client")?;
    let request = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    child.stdin.take().context("stdin")?.write_all(request)?;
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let find = |prefix: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .unwrap_or("?")
            .to_owned()
    };
    let resumed = text.lines().any(|l| l.starts_with("Reused, "));
    let session_line = text
        .lines()
        .find(|l| l.starts_with("New, ") || l.starts_with("Reused, "))
        .unwrap_or("?");
    let summary = format!("{session_line}, key exchange {}", find("Server Temp Key: "));
    Ok((summary, resumed))
}

/// haproxy's TLS counters from its stats socket (`show info`).
fn haproxy_info(bed: &Bed, nbthread: usize) -> anyhow::Result<String> {
    let mut stream = std::os::unix::net::UnixStream::connect(haproxy_socket(bed, nbthread))?;
    stream.write_all(b"show info\n")?;
    let mut info = String::new();
    stream.read_to_string(&mut info)?;
    let wanted = ["CumSslConns", "SslCacheLookups", "SslCacheMisses"];
    Ok(info
        .lines()
        .filter(|l| wanted.iter().any(|w| l.starts_with(&format!("{w}:"))))
        .collect::<Vec<_>>()
        .join(", "))
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
