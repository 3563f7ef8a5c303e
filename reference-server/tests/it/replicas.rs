//! Two leasebroker replicas on one PostgreSQL: same-key requests split across them create one worker.

use std::sync::Arc;

use tokio::sync::Barrier;

use crate::support::{worker_body, Db, Options, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_one_worker() {
    let Some(db) = Db::postgres().await else {
        return;
    };
    let a = TestServer::start(&db, Options::default()).await;
    let b = TestServer::start(&db, Options::default()).await;
    for round in 1..=10_i64 {
        let key = format!("split-{round}");
        let barrier = Arc::new(Barrier::new(40));
        let mut tasks = Vec::new();
        for i in 0..40 {
            let client = if i % 2 == 0 {
                a.client.clone()
            } else {
                b.client.clone()
            };
            let (barrier, key) = (barrier.clone(), key.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                client
                    .create("alice", Some(&key), &worker_body("ubuntu"))
                    .await
            }));
        }
        let mut originals = 0;
        for t in tasks {
            let r = t.await.expect("request");
            match r.status {
                201 if !r.replayed() => originals += 1,
                201 => {}
                409 => assert_eq!(r.problem(), "request-in-progress"),
                other => panic!("round {round}: status {other}"),
            }
        }
        assert_eq!(originals, 1, "round {round}");
        let stats = a.client.stats().await;
        assert_eq!(stats["workers"], round, "round {round}: {stats}");
        assert_eq!(stats["leases"], round, "round {round}: {stats}");
    }
    a.stop().await;
    b.stop().await;
    db.drop_database().await;
}
