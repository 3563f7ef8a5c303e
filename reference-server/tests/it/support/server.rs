//! In-process leasebroker servers on 127.0.0.1:0.

use std::sync::Arc;
use std::time::Duration;

use leasebroker::auth::Auth;
use leasebroker::flaw::{Flaw, Flaws};
use leasebroker::fleet::CreateMode;
use leasebroker::idempotency::IdempotencyConfig;
use leasebroker::server::{start, RunningServer, ServerConfig};
use leasebroker::store::DatabaseUrl;

use super::{Client, Db};

/// Knobs a test may turn.
#[derive(Debug, Clone)]
pub struct Options {
    /// Flaws to enable.
    pub flaws: Vec<Flaw>,
    /// In-flight TTL.
    pub in_flight_ttl: Duration,
    /// Retention window.
    pub retention: Duration,
    /// Sweeper interval.
    pub sweep_interval: Duration,
    /// Node pool size.
    pub pool_size: i64,
    /// Boot latency.
    pub boot_latency: Duration,
    /// How a create answers.
    pub creates: CreateMode,
    /// Whether a `POST` without an Idempotency-Key is refused.
    pub require_key_on_post: bool,
    /// Header read timeout.
    pub header_read_timeout: Duration,
    /// Body read timeout.
    pub body_read_timeout: Duration,
    /// Serve the public listener over TLS with this configuration.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            flaws: Vec::new(),
            in_flight_ttl: Duration::from_secs(30),
            retention: Duration::from_secs(3600),
            sweep_interval: Duration::from_secs(60),
            pool_size: 100,
            boot_latency: Duration::from_millis(50),
            creates: CreateMode::Sync,
            require_key_on_post: true,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            tls: None,
        }
    }
}

impl Options {
    /// The defaults with in-flight TTL `ttl` (tests of what happens before and after it runs out).
    pub fn in_flight_ttl(ttl: Duration) -> Self {
        Self {
            in_flight_ttl: ttl,
            ..Self::default()
        }
    }
}

/// A running server and a client for it.
pub struct TestServer {
    server: Option<RunningServer>,
    /// A client pointed at the public and admin listeners.
    pub client: Client,
}

impl TestServer {
    /// Starts a server on `db` with `opts`, public and admin listeners on 127.0.0.1:0, dev auth
    /// (its client's base URL is `https://` with `opts.tls`; the admin listener is always HTTP).
    pub async fn start(db: &Db, opts: Options) -> Self {
        let config = ServerConfig {
            listen: "127.0.0.1:0".parse().expect("valid address"),
            admin_listen: Some("127.0.0.1:0".parse().expect("valid address")),
            database: DatabaseUrl::parse(&db.url()),
            max_connections: 16,
            auth: Auth::Dev,
            idempotency: IdempotencyConfig {
                retention: opts.retention,
                in_flight_ttl: opts.in_flight_ttl,
                require_key_on_post: opts.require_key_on_post,
                require_key_on_delete: false,
                retry_after_secs: 1,
            },
            flaws: Flaws::new(opts.flaws),
            sweep_interval: opts.sweep_interval,
            pool_size: opts.pool_size,
            boot_latency: opts.boot_latency,
            creates: opts.creates,
            header_read_timeout: opts.header_read_timeout,
            body_read_timeout: opts.body_read_timeout,
            tls: opts.tls.clone(),
        };
        let server = start(config).await.expect("start leasebroker");
        let scheme = if opts.tls.is_some() { "https" } else { "http" };
        let client = Client::new(
            format!("{scheme}://{}", server.addr()),
            format!(
                "http://{}",
                server.admin_addr().expect("admin listener requested")
            ),
        );
        Self {
            server: Some(server),
            client,
        }
    }

    /// The public listener's address (for raw sockets).
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server
            .as_ref()
            .expect("the server runs until stop")
            .addr()
    }

    /// Stops the server (in-flight requests get 2 s).
    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown(Duration::from_secs(2)).await;
        }
    }
}
