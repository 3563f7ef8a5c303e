//! Pass-through benchmark: requests/s and p50/p99 latency direct to an upstream, through
//! idemspec-proxy (no rule matching), and through haproxy, at 1 and 64 connections.
//!
//! ```text
//! apt-get install -y haproxy wrk
//! cargo run --profile perf -p idemspec-proxy --example bench -- [--rounds 3] [--seconds 5] [--proxy-threads 2]
//! ```
//!
//! The upstream runs in a child process (this binary re-executed with `--serve-upstream`),
//! idemspec-proxy in this process as `idemspec proxy` runs it (`io_threads` = `--proxy-threads`
//! single-threaded runtimes serving connections, 0: all on the accept thread's runtime),
//! haproxy as a child process with as many threads (`nbthread`; keep-alive to the client and
//! to the upstream, as the proxy does), and wrk with one thread (`-t1`). Targets are interleaved in rounds so drift on a shared machine hits them alike; the
//! report gives the median and the min–max spread.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};

/// The allocator the `idemspec` binary uses (so `idemspec proxy` is what is measured).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// One wrk measurement.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rps: f64,
    /// CPU time the proxy process spent per request (µs); 0 for the direct target.
    cpu_us: f64,
    p50_us: f64,
    p99_us: f64,
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve-upstream") {
        return serve_upstream();
    }
    let flag = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let rounds = flag("--rounds", 3);
    let seconds = flag("--seconds", 5);
    for tool in ["wrk", "haproxy"] {
        if Command::new(tool).arg("-v").output().is_err() {
            bail!("`{tool}` not found\nhint: apt-get update && apt-get install -y haproxy wrk");
        }
    }

    let (mut upstream_child, upstream) = spawn_upstream()?;
    let threads = flag("--proxy-threads", 2) as usize;
    let config = idemspec_proxy::ProxyConfig {
        upstream: format!("http://{upstream}"),
        event_capacity: 1024,
        io_threads: threads,
        ..Default::default()
    };
    // The accept loop runs on a thread of its own, connections on the proxy's I/O threads.
    let (handle_tx, handle_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let proxy_thread = std::thread::spawn(move || -> anyhow::Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async move {
            let proxy = idemspec_proxy::start(config).await?;
            handle_tx.send(proxy.clone())?;
            let _ = stop_rx.await;
            proxy.shutdown().await;
            anyhow::Ok(())
        })
    });
    let proxy = handle_rx
        .recv()
        .context("the proxy thread failed to start")?;
    // haproxy gets as many threads as the proxy's runtime has workers (a current-thread runtime: 1).
    let (mut haproxy_child, haproxy) = spawn_haproxy(upstream, threads.max(1))?;

    let targets = [
        ("direct", upstream, None),
        ("idemspec-proxy", proxy.addr(), Some(std::process::id())),
        ("haproxy", haproxy, Some(haproxy_child.id())),
    ];
    let conns = [1u32, 64];
    // samples[target][conns] = Vec<Sample>
    let mut samples = vec![vec![Vec::new(); conns.len()]; targets.len()];
    for (_, addr, _) in &targets {
        wrk(*addr, 8, 1)?; // warm-up: connections, caches
    }
    for round in 1..=rounds {
        for (c, &n) in conns.iter().enumerate() {
            for (t, (name, addr, pid)) in targets.iter().enumerate() {
                let before = pid.map(cpu_ticks).transpose()?;
                let mut s = wrk(*addr, n, seconds)?;
                if let (Some(pid), Some(before)) = (pid, before) {
                    let ticks = cpu_ticks(*pid)? - before;
                    s.cpu_us = ticks as f64 * 1e4 / (s.rps * seconds as f64);
                }
                eprintln!(
                    "round {round} conns {n:>2} {name:<15} {:>9.0} req/s  p50 {:>7.0} us  p99 {:>7.0} us  cpu {:>5.1} us/req",
                    s.rps, s.p50_us, s.p99_us, s.cpu_us
                );
                samples[t][c].push(s);
            }
        }
    }
    let _ = haproxy_child.kill();
    let _ = upstream_child.kill();
    let _ = stop_tx.send(());
    proxy_thread.join().expect("proxy thread does not panic")?;

    println!("| target | conns | req/s (median, min–max) | p50 µs (median, min–max) | p99 µs (median, min–max) | proxy CPU µs/req |");
    println!("|---|---|---|---|---|---|");
    let med = |v: &mut Vec<f64>| -> (f64, f64, f64) {
        v.sort_by(|a, b| a.total_cmp(b));
        (v[v.len() / 2], v[0], v[v.len() - 1])
    };
    let mut medians = vec![vec![(0.0, 0.0); conns.len()]; targets.len()];
    for (t, (name, _, _)) in targets.iter().enumerate() {
        for (c, &n) in conns.iter().enumerate() {
            let s = &samples[t][c];
            let (rps, rps_lo, rps_hi) = med(&mut s.iter().map(|x| x.rps).collect());
            let (p50, p50_lo, p50_hi) = med(&mut s.iter().map(|x| x.p50_us).collect());
            let (p99, p99_lo, p99_hi) = med(&mut s.iter().map(|x| x.p99_us).collect());
            let (cpu, _, _) = med(&mut s.iter().map(|x| x.cpu_us).collect());
            medians[t][c] = (rps, p50);
            println!(
                "| {name} | {n} | {rps:.0} ({rps_lo:.0}–{rps_hi:.0}) | {p50:.0} ({p50_lo:.0}–{p50_hi:.0}) | {p99:.0} ({p99_lo:.0}–{p99_hi:.0}) | {cpu:.1} |"
            );
        }
    }
    let (direct, ours, theirs) = (&medians[0], &medians[1], &medians[2]);
    println!();
    println!(
        "- req/s at 64 conns: idemspec-proxy / haproxy = {:.2} (target >= 0.90); idemspec-proxy / direct = {:.2}; haproxy / direct = {:.2}",
        ours[1].0 / theirs[1].0,
        ours[1].0 / direct[1].0,
        theirs[1].0 / direct[1].0
    );
    println!(
        "- added p50 at 1 conn: idemspec-proxy {:.0} µs vs haproxy {:.0} µs (target: no more than haproxy's)",
        ours[0].1 - direct[0].1,
        theirs[0].1 - direct[0].1
    );
    Ok(())
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

fn spawn_upstream() -> anyhow::Result<(Child, SocketAddr)> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--serve-upstream")
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("upstream stdout")?).read_line(&mut line)?;
    Ok((child, line.trim().parse().context("upstream address")?))
}

/// haproxy in `mode http` with keep-alive on both sides and `nbthread` threads.
fn spawn_haproxy(upstream: SocketAddr, nbthread: usize) -> anyhow::Result<(Child, SocketAddr)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let config = format!(
        "global\n  maxconn 4096\n  nbthread {nbthread}\ndefaults\n  mode http\n  option http-keep-alive\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\nfrontend f\n  bind {addr}\n  default_backend b\nbackend b\n  server s1 {upstream}\n"
    );
    let path = std::env::temp_dir().join(format!("idemspec-bench-haproxy-{port}.cfg"));
    std::fs::File::create(&path)?.write_all(config.as_bytes())?;
    let child = Command::new("haproxy").arg("-f").arg(&path).spawn()?;
    for _ in 0..100 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Ok((child, addr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("haproxy did not start on {addr}")
}

/// A minimal keep-alive HTTP/1.1 upstream answering `200 ok` (a 2-worker runtime).
fn serve_upstream() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("{}", listener.local_addr()?);
        std::io::stdout().flush()?;
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let svc = service_fn(|_req| async {
                    Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                        Bytes::from_static(b"ok"),
                    )))
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    })
}
