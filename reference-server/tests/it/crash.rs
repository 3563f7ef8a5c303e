//! Crash recovery with a real process: the server dies mid-create (SIGKILL while the boot hangs, or an
//! abort right after the hypervisor booted), restarts on the same database, and a retrying client gets
//! 409 within the in-flight TTL and then one completed create; no leaked lease, no orphan pending boot.

use std::time::{Duration, Instant};

use leasebroker::testing::{ServerCommand, ServerProcess};
use serde_json::json;

use crate::support::{worker_body, Client, Db, HungCreate};

const TTL_SECS: u64 = 6;

/// A leasebroker process on `db` and a client for it.
async fn spawn(db: &Db) -> (ServerProcess, Client) {
    let command = ServerCommand::binary(env!("CARGO_BIN_EXE_leasebroker"));
    let flags = [
        "--in-flight-ttl",
        &format!("{TTL_SECS}s"),
        "--boot-latency",
        "20ms",
    ]
    .map(str::to_owned);
    let process = ServerProcess::start(&command, &db.url(), &flags)
        .await
        .expect("start leasebroker");
    let client = Client::new(process.base.clone(), process.admin.clone());
    (process, client)
}

async fn recovers(db: &Db, fault: &str) {
    let (mut first, c) = spawn(db).await;
    let started = Instant::now();
    match fault {
        "sigkill" => {
            let mut hung = HungCreate::start(&c, "crash").await;
            first.child.start_kill().expect("SIGKILL the server");
            hung.abandon().await;
        }
        _ => {
            c.faults(json!({"crash_after_boot_call": true})).await;
            let died = reqwest::Client::new()
                .post(format!("{}/v1/workers", c.base))
                .bearer_auth("alice")
                .header("idempotency-key", "crash")
                .json(&worker_body("ubuntu"))
                .send()
                .await;
            assert!(died.is_err(), "the server must abort before answering");
        }
    }
    let status = first.child.wait().await.expect("wait");
    assert!(!status.success());

    let (mut second, c) = spawn(db).await;
    let early = c
        .create("alice", Some("crash"), &worker_body("ubuntu"))
        .await;
    if started.elapsed() < Duration::from_secs(TTL_SECS) {
        assert_eq!(
            (early.status, early.problem().as_str()),
            (409, "request-in-progress")
        );
    }
    let deadline = Instant::now() + Duration::from_secs(TTL_SECS * 5);
    let done = loop {
        let r = c
            .create("alice", Some("crash"), &worker_body("ubuntu"))
            .await;
        if r.status == 201 {
            break r;
        }
        assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
        assert!(
            Instant::now() < deadline,
            "still locked out long after the in-flight TTL"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(
        started.elapsed() >= Duration::from_secs(TTL_SECS),
        "completed before the TTL could expire"
    );
    let replay = c
        .create("alice", Some("crash"), &worker_body("ubuntu"))
        .await;
    assert_eq!(replay.body, done.body);
    let stats = c.stats().await;
    crate::support::assert_one_of_everything(&stats);
    second.child.kill().await.expect("stop the server");
}

/// SIGKILL while the hypervisor call hangs: the retry boots once (no instance carries the tag yet).
async fn sigkill_mid_create(db: &Db) {
    recovers(db, "sigkill").await;
}

/// Abort right after the hypervisor booted: the retry finds the pending boot and reconciles by tag
/// instead of booting a second instance.
async fn abort_after_boot_call(db: &Db) {
    recovers(db, "abort").await;
}

crate::both_stores!(sigkill_mid_create, abort_after_boot_call);
