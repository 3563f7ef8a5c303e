//! The command line: [`Args`] and [`run`]. The `leasebroker` binary is a thin wrapper around them, and
//! the suite's `idemspec run --reference` re-executes itself with a hidden subcommand that calls [`run`].

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;

use crate::auth::Auth;
use crate::flaw::{Flaw, Flaws};
use crate::fleet::CreateMode;
use crate::idempotency::IdempotencyConfig;
use crate::server::{start, ServerConfig};
use crate::store::DatabaseUrl;

/// leasebroker: a provisioning API (workers, node pool, leases, simulated hypervisor) with a complete
/// Idempotency-Key implementation on SQLite or PostgreSQL.
#[derive(Debug, Clone, Parser)]
#[command(name = "leasebroker", version)]
pub struct Args {
    /// Public listener; port 0 picks a free port (the bound address is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Admin listener (stats, fault controls); off unless given.
    #[arg(long)]
    pub admin_listen: Option<SocketAddr>,
    /// A SQLite file path, a `sqlite:` URL, or a `postgres://` URL.
    #[arg(
        long,
        env = "LEASEBROKER_DATABASE_URL",
        default_value = "sqlite://leasebroker.db?mode=rwc"
    )]
    pub database_url: String,
    /// YAML file `tokens: {TOKEN: PRINCIPAL}`.
    #[arg(long, conflicts_with = "dev")]
    pub tokens: Option<PathBuf>,
    /// Accept any bearer token as its own principal. For development only.
    #[arg(long)]
    pub dev: bool,
    /// Serve HTTPS on the public listener with this certificate chain (PEM, the server's own
    /// certificate first); needs --tls-key. The admin listener stays plain HTTP.
    #[arg(long, requires = "tls_key", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC).
    #[arg(long, requires = "tls_cert", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Verify client certificates issued by these CAs (PEM). A verified certificate's subject
    /// common name (CN) is the principal of a request that carries no bearer token (a bearer
    /// token, when sent, names the principal as without TLS). With this flag alone --tokens and
    /// --dev may be left out: certificates are then the only way to name a principal.
    #[arg(long, requires = "tls_cert", value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// Refuse, in the TLS handshake, a client that shows no certificate (without it, such a
    /// client is served and must send a bearer token).
    #[arg(long, requires = "tls_client_ca")]
    pub tls_require_client_cert: bool,
    /// How long completed idempotency records are kept and replayed.
    #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
    pub retention: Duration,
    /// How long an in-flight record blocks its key before a retry may reclaim it.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub in_flight_ttl: Duration,
    /// How often the sweeper deletes expired records.
    #[arg(long, default_value = "1m", value_parser = humantime::parse_duration)]
    pub sweep_interval: Duration,
    /// Nodes in the pool.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
    pub pool_size: i64,
    /// Simulated hypervisor boot latency.
    #[arg(long, default_value = "50ms", value_parser = humantime::parse_duration)]
    pub boot_latency: Duration,
    /// How long a client may take to send a request's line and headers, counted from the connection's
    /// accept or its previous response (so also how long an idle kept-alive connection stays open).
    /// Past it the connection is closed without a response: a client trickling its headers cannot hold
    /// a connection, a task and a descriptor for as long as it likes.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Duration,
    /// How long a request's body may take to arrive in all, from the end of its headers (bodies are
    /// at most 1 MiB). Past it the request gets 408 `request-timeout` and the connection is closed.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub body_read_timeout: Duration,
    /// PostgreSQL connection pool size.
    #[arg(long, default_value_t = 16)]
    pub max_connections: u32,
    /// Require an Idempotency-Key on DELETE too (it is optional by default).
    #[arg(long)]
    pub require_key_on_delete: bool,
    /// Make the Idempotency-Key optional on POST (create, reboot); required by default.
    #[arg(long)]
    pub key_optional: bool,
    /// How a create answers: `sync`, `201` with the booted worker; `async`, `202` with a
    /// long-running operation to poll at `GET /v1/operations/{id}` (its `Location` and
    /// `selfLink`), the boot running after the answer.
    #[arg(long, value_enum, default_value = "sync", value_name = "MODE")]
    pub creates: CreateMode,
    /// Break one rule on purpose (repeatable). For proving the suite; never in production.
    #[arg(long = "flaw", value_enum, value_name = "NAME")]
    pub flaws: Vec<Flaw>,
}

impl Args {
    /// Validates the flags into a [`ServerConfig`].
    pub fn into_config(self) -> anyhow::Result<ServerConfig> {
        let auth = self.auth()?;
        let tls = self.tls()?;
        anyhow::ensure!(
            !self.in_flight_ttl.is_zero(),
            "--in-flight-ttl must be positive"
        );
        anyhow::ensure!(!self.retention.is_zero(), "--retention must be positive");
        anyhow::ensure!(
            !self.header_read_timeout.is_zero(),
            "--header-read-timeout must be positive"
        );
        anyhow::ensure!(
            !self.body_read_timeout.is_zero(),
            "--body-read-timeout must be positive"
        );
        anyhow::ensure!(
            !self.sweep_interval.is_zero(),
            "--sweep-interval must be positive"
        );
        Ok(ServerConfig {
            listen: self.listen,
            admin_listen: self.admin_listen,
            database: DatabaseUrl::parse(&self.database_url),
            max_connections: self.max_connections.max(1),
            auth,
            idempotency: IdempotencyConfig {
                retention: self.retention,
                in_flight_ttl: self.in_flight_ttl,
                require_key_on_post: !self.key_optional,
                require_key_on_delete: self.require_key_on_delete,
                retry_after_secs: 1,
            },
            flaws: Flaws::new(self.flaws),
            sweep_interval: self.sweep_interval,
            pool_size: self.pool_size,
            boot_latency: self.boot_latency,
            creates: self.creates,
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            tls,
        })
    }

    /// How bearer tokens name principals: `--tokens`, `--dev`, or (with `--tls-client-ca` and
    /// neither) no token at all.
    fn auth(&self) -> anyhow::Result<Auth> {
        Ok(match (&self.tokens, self.dev, &self.tls_client_ca) {
            (Some(path), _, _) => Auth::from_file(path)?,
            (None, true, _) => Auth::Dev,
            (None, false, Some(_)) => Auth::Tokens(Default::default()),
            (None, false, None) => anyhow::bail!(
                "give --tokens FILE, --dev to accept any bearer token, or --tls-client-ca FILE \
                 to name principals by client certificates"
            ),
        })
    }

    /// The public listener's TLS configuration, when `--tls-cert` is given (clap makes
    /// `--tls-key` come with it).
    fn tls(&self) -> anyhow::Result<Option<Arc<rustls::ServerConfig>>> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let client_ca = self.tls_client_ca.as_deref();
        let config =
            idemspec_tls::server_config(cert, key, client_ca, self.tls_require_client_cert)
                .map_err(|err| {
                    let flag = flag_of(&err, cert, key, client_ca);
                    anyhow::Error::new(err).context(format!("serve TLS ({flag})"))
                })?;
        Ok(Some(config))
    }
}

/// The flag (or flags) whose file `err` is about: the one whose path it names, the pair for a
/// key that does not fit its certificate, all of them where it names none.
fn flag_of(
    err: &idemspec_tls::TlsError,
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> &'static str {
    let text = err.to_string();
    let names = |path: &Path| text.contains(&path.display().to_string());
    if matches!(err, idemspec_tls::TlsError::Identity { .. }) {
        "--tls-cert, --tls-key"
    } else if client_ca.is_some_and(names) {
        "--tls-client-ca"
    } else if names(key) {
        "--tls-key"
    } else if names(cert) {
        "--tls-cert"
    } else if client_ca.is_some() {
        "--tls-cert, --tls-key, --tls-client-ca"
    } else {
        "--tls-cert, --tls-key"
    }
}

/// Runs leasebroker until Ctrl-C or SIGTERM. Prints `leasebroker listening on http://ADDR`
/// (`https://` with `--tls-cert`) and the admin line (`http://`) on stdout, flushed, once the
/// listeners are bound.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let database = args.database_url.clone();
    let config = args.into_config()?;
    if matches!(config.auth, Auth::Dev) {
        tracing::warn!("--dev: ANY bearer token is accepted as its own principal; never use this in production");
    }
    for flaw in config.flaws.iter() {
        tracing::warn!(
            "--flaw {}: this server DELIBERATELY BREAKS an idempotency rule (for proving the suite)",
            flaw.name()
        );
    }
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let server = start(config)
        .await
        .with_context(|| format!("start leasebroker on {database}"))?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "leasebroker listening on {scheme}://{}", server.addr())?;
        if let Some(admin) = server.admin_addr() {
            writeln!(out, "leasebroker admin listening on http://{admin}")?;
        }
        out.flush()?;
    }
    shutdown_signal().await;
    tracing::info!("shutting down");
    server.shutdown(Duration::from_secs(5)).await;
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
