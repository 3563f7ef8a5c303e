//! The crash soak, short: 10 kills of a real leasebroker process per store, every kind of kill at
//! least once (see `leasebroker::testing::soak` for what is killed where and what must hold after;
//! `examples/soak.rs` runs the long one).

use std::time::Duration;

use leasebroker::testing::soak::{self, Kill, SoakConfig};
use leasebroker::testing::ServerCommand;

use crate::support::Db;

async fn ten_kills_mid_create(db: &Db) {
    let config = SoakConfig {
        server: ServerCommand::binary(env!("CARGO_BIN_EXE_leasebroker")),
        database_url: db.url(),
        kills: 10,
        clients: 4,
        seed: 1,
        in_flight_ttl: Duration::from_millis(500),
        boot_latency: Duration::from_millis(20),
        time_limit: Duration::from_secs(150),
    };
    let report = soak::run(&config)
        .await
        .unwrap_or_else(|err| panic!("{err}"));
    eprintln!("{report}");
    assert_eq!(report.kills.values().sum::<u32>(), 10);
    assert_eq!(report.kills.len(), Kill::ALL.len(), "{:?}", report.kills);
    assert!(report.keys >= 40, "{} keys", report.keys);
    assert_eq!(report.server_errors, 0);
}

crate::both_stores!(ten_kills_mid_create);
