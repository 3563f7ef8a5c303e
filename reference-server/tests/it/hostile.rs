//! Hostile request lines and headers: odd path ids get a 4xx problem body,
//! never a 5xx or a plain-text rejection, and leave no record in flight or failed.

use crate::support::{Db, Options, TestServer};

/// Path ids no worker can have: a NUL (PostgreSQL refuses it in a text parameter), other control
/// characters, spaces, invalid UTF-8 after percent-decoding, non-ASCII, an over-long id. Each is a
/// `404 not-found` problem on GET, DELETE (with and without a key) and reboot, and writes nothing.
async fn odd_path_ids_are_404_problems(db: &Db) {
    let server = TestServer::start(db, Options::default()).await;
    let c = &server.client;
    let long = "a".repeat(4096);
    let ids = [
        "%00",
        "wkr-%00",
        "a%01b",
        "a%20b",
        "%ff",
        "%c3%28",
        "cl%C3%A9",
        long.as_str(),
    ];
    for (n, id) in ids.iter().enumerate() {
        let get = c.get("alice", id).await;
        let delete = c.delete("alice", id, Some(&format!("del-{n}"))).await;
        let delete_unkeyed = c.delete("alice", id, None).await;
        let reboot = c.reboot("alice", id, Some(&format!("reboot-{n}"))).await;
        for (what, r) in [
            ("GET", &get),
            ("DELETE", &delete),
            ("DELETE without key", &delete_unkeyed),
            ("reboot", &reboot),
        ] {
            assert_eq!(
                (r.status, r.problem().as_str()),
                (404, "not-found"),
                "{what} id {id:.40}"
            );
        }
    }
    let stats = c.stats().await;
    assert_eq!(stats["workers"], 0, "{stats}");
    assert_eq!(stats["idempotency_records"]["in_flight"], 0, "{stats}");
    assert_eq!(stats["idempotency_records"]["failed"], 0, "{stats}");
    server.stop().await;
}

crate::both_stores!(odd_path_ids_are_404_problems);
