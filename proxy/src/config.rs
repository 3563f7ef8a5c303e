//! What a proxy is started with.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use idemspec_scenarios::rules::{Mode, Rule, TcpRule};

/// How to start a proxy with [`crate::start`].
///
/// ```no_run
/// # async fn demo() -> Result<(), idemspec_proxy::ProxyError> {
/// use idemspec_proxy::{start, ProxyConfig};
/// let handle = start(ProxyConfig {
///     upstream: "http://127.0.0.1:8080".into(),
///     ..ProxyConfig::default()
/// })
/// .await?;
/// println!("proxy on {}", handle.addr());
/// handle.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ProxyConfig {
    /// Where to accept downstream connections; port 0 picks a free port (see
    /// [`crate::ProxyHandle::addr`]). Default `127.0.0.1:0`.
    pub listen: SocketAddr,
    /// HTTP mode: the upstream base URL `http://host[:port]` or `https://host[:port]` (ports 80
    /// and 443 by default), optionally with a path prefix put in front of every forwarded path
    /// (`http://h:80/api`: `/v1/x` goes to `/api/v1/x`; rules match the path as the client sent
    /// it). An `https://` upstream is reached over TLS, as [`ProxyConfig::upstream_tls`] says.
    /// TCP mode: `host:port`. The host is resolved per connection.
    pub upstream: String,
    /// How an `https://` upstream is reached: whom to trust, and each principal's client
    /// certificate. `None`: the platform's roots, no client certificate. Ignored for `http://`.
    pub upstream_tls: Option<UpstreamTls>,
    /// TLS on the proxy's own port (HTTP mode): the server config its clients handshake with
    /// (`idemspec_tls::server_config`). `None`: plain HTTP.
    pub listen_tls: Option<Arc<idemspec_tls::rustls::ServerConfig>>,
    /// HTTP (rules per request) or TCP (rules per connection). Default HTTP.
    pub mode: Mode,
    /// The HTTP rules in order (HTTP mode).
    pub rules: Vec<Rule>,
    /// The TCP rules in order (TCP mode).
    pub tcp_rules: Vec<TcpRule>,
    /// Where to serve the control API, if anywhere.
    pub control: Option<SocketAddr>,
    /// How many events the log keeps before dropping the oldest. Default 100 000.
    pub event_capacity: usize,
    /// How long a shutdown waits for in-flight exchanges before cutting them. Default 5 s.
    pub shutdown_grace: std::time::Duration,
    /// How long a client may take to send a request head, on the proxy's port and the control
    /// API's: from the accept to the first head, and from the first byte of each later head to
    /// its end. A head not whole by then gets `408` with a problem body (a connection that sent
    /// nothing is closed without one), within an eighth of the timeout (at most 1 s) after it.
    /// Idle keep-alive connections between requests, request bodies and responses are not
    /// timed. Default 10 s; `None` (or zero): no limit.
    pub header_read_timeout: Option<std::time::Duration>,
    /// Thread-per-core serving: 0 (default) serves every connection on the runtime that called
    /// [`crate::start`]; N ≥ 1 starts N threads, each with a single-threaded runtime, and pins
    /// each accepted connection (with its upstream connection) to one of them, round-robin, as
    /// haproxy pins a connection to one of its `nbthread` threads. The standalone proxy uses one
    /// per CPU; see docs/BENCHMARKS.md for why. At most [`ProxyConfig::MAX_IO_THREADS`].
    pub io_threads: usize,
    /// Where each request carries its idempotency key, recorded as
    /// [`crate::ProxyEvent::idempotency_key`] and compared with a rule's `match.idempotency_key`:
    /// the `Idempotency-Key` header by default, another header (`PayPal-Request-Id`), a query
    /// parameter, or a form field or JSON member of the body (the proxy then reads the first
    /// 64 KiB of each body to find it, and forwards the body unchanged; a longer body's key is not
    /// recorded). A header name must be one HTTP can carry ([`crate::start`] fails otherwise).
    pub key_at: idemspec_scenarios::profile::KeyAt,
}

impl ProxyConfig {
    /// The most [`ProxyConfig::io_threads`] a proxy accepts: more threads than cores only adds
    /// switching, and each costs a few file descriptors.
    pub const MAX_IO_THREADS: usize = 1024;

    /// The default [`ProxyConfig::header_read_timeout`]: 10 s, as long as a client on a slow
    /// network needs for a head of a few KiB, and short enough that slow connections do not pile
    /// up (nginx's `client_header_timeout` is 60 s, haproxy's examples use 10 s).
    pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
}

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            upstream: String::new(),
            upstream_tls: None,
            listen_tls: None,
            mode: Mode::Http,
            rules: Vec::new(),
            tcp_rules: Vec::new(),
            control: None,
            event_capacity: 100_000,
            shutdown_grace: std::time::Duration::from_secs(5),
            header_read_timeout: Some(Self::HEADER_READ_TIMEOUT),
            io_threads: 0,
            key_at: idemspec_scenarios::profile::KeyAt::Header(
                crate::http::IDEMPOTENCY_KEY.as_str().to_owned(),
            ),
        }
    }
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("listen", &self.listen)
            .field("upstream", &self.upstream)
            .field("upstream_tls", &self.upstream_tls)
            .field("listen_tls", &self.listen_tls.is_some())
            .field("mode", &self.mode)
            .field("rules", &self.rules)
            .field("tcp_rules", &self.tcp_rules)
            .field("control", &self.control)
            .field("io_threads", &self.io_threads)
            .finish_non_exhaustive()
    }
}

/// How the proxy reaches an `https://` upstream.
///
/// Each request's `x-idemspec-principal` header (stripped before the upstream sees it) names the
/// principal it is made as; its upstream connection shows that principal's certificate from
/// `identities`, or `client_identity` for a principal not there (or no header), or none. An idle
/// upstream connection is reused only by a request of the same certificate, so each principal's
/// requests travel on connections of their own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    /// Whom to trust: the platform's roots and `ca_file`, the name checked, or no check at all.
    pub trust: idemspec_tls::TrustOptions,
    /// Client certificates by principal name.
    pub identities: BTreeMap<String, idemspec_tls::IdentityFiles>,
    /// The client certificate shown when no principal header picks one of `identities`
    /// (`idemspec proxy --tls-client-cert`); `None`: no certificate then.
    pub client_identity: Option<idemspec_tls::IdentityFiles>,
    /// Where the user sets these, so a handshake failure's 502 advises that setting: the target
    /// profile's `tls` fields (the runner's embedded proxy, the default) or `idemspec proxy`'s
    /// flags.
    pub advice: idemspec_tls::Advice,
    /// Where the client configs are built, once per identity: clones of one `UpstreamTls` (a
    /// run's proxies, one per check) share it.
    pub configs: idemspec_tls::ConfigCache,
}
