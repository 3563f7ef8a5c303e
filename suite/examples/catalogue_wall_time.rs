//! Benchmark (not a test): wall time of the whole built-in catalogue against the bundled reference
//! server, with checks run one at a time and side by side, in one run, interleaved by round, beside
//! the slowest check's own time (a run that overlaps its waits is not much longer than that check).
//!
//! ```sh
//! cargo build --release -p idemspec --bins --examples
//! target/release/examples/catalogue_wall_time [ROUNDS] [POSTGRES_URL]
//! ```
//! The reference is started through the `idemspec` binary next to this example's directory. Each
//! round starts a fresh reference (a new SQLite file, or the given PostgreSQL database) per setting.

use std::time::Instant;

use idemspec::reference::ReferenceOptions;
use idemspec::runner::{run, RunOptions, Target};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map_or(Ok(3), |r| r.parse())?;
    let database_url = args.next();
    let exe = std::env::current_exe()?;
    let program = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("idemspec"))
        .ok_or_else(|| anyhow::anyhow!("cannot locate the idemspec binary"))?;
    anyhow::ensure!(
        program.exists(),
        "{} not found; build it with `cargo build -p idemspec --bins`",
        program.display()
    );
    let settings = [("one at a time", 1usize), ("side by side (default)", 8)];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); settings.len()];
    let mut slowest: Vec<Vec<f64>> = vec![Vec::new(); settings.len()];
    for round in 0..rounds {
        for (i, (label, parallelism)) in settings.iter().enumerate() {
            let mut opts = RunOptions::new(Target::Reference(ReferenceOptions {
                program: Some(program.clone()),
                database_url: database_url.clone(),
                ..ReferenceOptions::default()
            }));
            opts.parallelism = *parallelism;
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(async move { while rx.recv().await.is_some() {} });
            let started = Instant::now();
            let report = run(opts, tx).await?;
            let secs = started.elapsed().as_secs_f64();
            anyhow::ensure!(
                report.stats.pass == report.checks.len(),
                "round {round}, {label}: not every check passed: {:?}",
                report.stats
            );
            let check = report.checks.iter().max_by_key(|c| c.duration_ms);
            let check_secs = check.map_or(0.0, |c| c.duration_ms as f64 / 1000.0);
            eprintln!(
                "round {round}: {label}: {secs:.2} s (slowest check {}: {check_secs:.2} s)",
                check.map_or("none", |c| c.id.as_str())
            );
            times[i].push(secs);
            slowest[i].push(check_secs);
        }
    }
    let store = if database_url.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    println!(
        "| {store}, {rounds} rounds | median | min | max | ratio | slowest check (median) | wall ÷ slowest check (max) |"
    );
    println!("|---|---|---|---|---|---|---|");
    let medians: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
    for (i, (label, _)) in settings.iter().enumerate() {
        let t = &times[i];
        let m = medians[i];
        let min = t.iter().copied().fold(f64::MAX, f64::min);
        let max = t.iter().copied().fold(0.0, f64::max);
        let worst = t
            .iter()
            .zip(&slowest[i])
            .map(|(wall, check)| wall / check)
            .fold(0.0, f64::max);
        println!(
            "| {label} | {m:.2} s | {min:.2} s | {max:.2} s | {:.2}× | {:.2} s | {worst:.2}× |",
            m / medians[0],
            median(&mut slowest[i].clone()),
        );
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
