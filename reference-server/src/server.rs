//! Starting and stopping a leasebroker: store, migrations, node pool, listeners ([`crate::listener`]),
//! sweeper.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api::{admin_app, app};
use crate::auth::Auth;
use crate::flaw::{failed_create_leaves_worker, Flaws};
use crate::fleet::{CreateMode, Fleet, Hypervisor, Operations};
use crate::idempotency::IdempotencyConfig;
use crate::injection::Injections;
use crate::listener::{serve, Timeouts};
use crate::metrics::Metrics;
use crate::state::AppState;
use crate::store::{connect, DatabaseUrl, StoreError, Stores};
use crate::sweeper;

/// Everything a server needs (built from [`crate::cli::Args`], or directly by tests).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Public listener (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Admin listener, off when `None`.
    pub admin_listen: Option<SocketAddr>,
    /// The database.
    pub database: DatabaseUrl,
    /// PostgreSQL pool size (SQLite uses one connection).
    pub max_connections: u32,
    /// Token checking.
    pub auth: Auth,
    /// The idempotency layer's settings (retention, in-flight TTL, which keys are required).
    pub idempotency: IdempotencyConfig,
    /// Deliberate flaws (`--flaw`; see [`crate::flaw`]).
    pub flaws: Flaws,
    /// How often the sweeper runs.
    pub sweep_interval: Duration,
    /// Nodes in the pool.
    pub pool_size: i64,
    /// How long the simulated hypervisor takes per boot.
    pub boot_latency: Duration,
    /// How a create answers: `201` once booted, or `202` with an operation to poll.
    pub creates: CreateMode,
    /// How long a connection may take to send a request's head (request line and headers), counted
    /// from when leasebroker starts waiting for it: on accept, and after each response on a kept-alive
    /// connection (so it is also the idle keep-alive timeout). Past it the connection is closed
    /// without a response.
    pub header_read_timeout: Duration,
    /// How long a request's body may take to arrive in all, counted from the end of its head. Past
    /// it the request is answered 408 `request-timeout` and the connection closed.
    pub body_read_timeout: Duration,
    /// Serve the public listener over TLS with this configuration (`None`: plain HTTP); the admin
    /// listener stays plain HTTP. Built by [`idemspec_tls::server_config`] (`--tls-cert`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database could not be opened or migrated.
    #[error("open the database")]
    Store(#[from] StoreError),
    /// A listener could not be bound.
    #[error("listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// A running server. Dropping it does not stop it; call [`RunningServer::shutdown`].
pub struct RunningServer {
    addr: SocketAddr,
    admin_addr: Option<SocketAddr>,
    stores: Stores,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl RunningServer {
    /// The bound public address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound admin address, if the admin listener is on.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// The database, by domain (tests read totals through it).
    pub fn stores(&self) -> Stores {
        self.stores.clone()
    }

    /// Stops accepting, lets in-flight requests finish for up to `grace`, then aborts what is left.
    pub async fn shutdown(self, grace: Duration) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let abort = task.abort_handle();
            if tokio::time::timeout(grace, task).await.is_err() {
                abort.abort();
            }
        }
    }

    /// Waits until the server stops (after [`RunningServer::shutdown`] from elsewhere, or a listener error).
    pub async fn wait(self) {
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Opens the store, seeds the pool, binds the listeners and starts serving.
pub async fn start(config: ServerConfig) -> Result<RunningServer, StartError> {
    let metrics = Arc::new(Metrics::default());
    let stores = connect(
        &config.database,
        config.max_connections,
        metrics.store_metrics().clone(),
    )
    .await?;
    stores.fleet.seed_nodes(config.pool_size).await?;
    let injections = Arc::new(Injections::default());
    let hypervisor = Hypervisor::new(
        stores.fleet.clone(),
        injections.clone(),
        config.boot_latency,
    );
    let fleet = Arc::new(Fleet::new(
        stores.fleet.clone(),
        hypervisor,
        injections.clone(),
        failed_create_leaves_worker::writes_nothing(&config.flaws),
    ));
    let operations = Arc::new(Operations::new(
        fleet.clone(),
        stores.operations.clone(),
        stores.records.clone(),
    ));
    let state = AppState {
        stores: stores.clone(),
        fleet,
        operations,
        creates: config.creates,
        idempotency: Arc::new(config.idempotency.clone()),
        rules: config.flaws.rules(),
        flaws: config.flaws.clone(),
        auth: Arc::new(config.auth.clone()),
        injections,
        metrics,
    };
    let bind = |addr: SocketAddr| async move {
        TcpListener::bind(addr)
            .await
            .map_err(|source| StartError::Bind { addr, source })
    };
    let listener = bind(config.listen).await?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: config.listen,
        source,
    })?;
    let (shutdown, rx) = watch::channel(false);
    let timeouts = Timeouts {
        header_read: config.header_read_timeout,
        body_read: config.body_read_timeout,
    };
    let mut tasks = vec![serve(
        listener,
        app(state.clone()),
        timeouts,
        config.tls.clone(),
        rx.clone(),
    )];
    let mut admin_addr = None;
    if let Some(admin) = config.admin_listen {
        let listener = bind(admin).await?;
        admin_addr = Some(listener.local_addr().map_err(|source| StartError::Bind {
            addr: admin,
            source,
        })?);
        tasks.push(serve(
            listener,
            admin_app(state.clone()),
            timeouts,
            None,
            rx.clone(),
        ));
    }
    // Operations a process abandoned (it died, or writing an outcome failed) run again.
    tasks.push(tokio::spawn(
        state
            .operations
            .clone()
            .watch(config.idempotency.in_flight_ttl, rx.clone()),
    ));
    tasks.push(tokio::spawn(sweeper::run(
        stores.clone(),
        config.sweep_interval,
        rx,
    )));
    Ok(RunningServer {
        addr,
        admin_addr,
        stores,
        shutdown,
        tasks,
    })
}
