//! The proxies of a Toxiproxy API server: by name, each with its listen address, upstream,
//! enabled flag, toxics, and, while enabled, the accept loop that relays its connections.
//!
//! As in Toxiproxy's `ProxyCollection`, one lock orders every change; disabling a proxy closes
//! its listener and every connection it relays, and is complete when the call returns.
//!
//! A connection is relayed by the TCP relay (`crate::tcp::relay`) through its toxic
//! [`Chain`], on the server's I/O threads, and recorded in the server's event log with the
//! proxy's name.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Mutex};
use tokio::task::JoinHandle;

use super::chain::{Chain, Toxics};
use super::error::ApiError;
use super::toxics::Toxic;
use crate::event::ProxyEvent;
use crate::http::Shared;
use crate::server::{accept_until, spawn_on_io_threads};
use crate::tcp::relay;

/// The most proxies one server holds.
pub(crate) const MAX_PROXIES: usize = 1024;
/// The most toxics one proxy holds.
pub(crate) const MAX_TOXICS: usize = 64;
/// The longest accepted proxy name or address, bytes.
pub(crate) const MAX_FIELD: usize = 256;

/// What a client asks a proxy to be (create, update, populate).
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub name: String,
    pub listen: String,
    pub upstream: String,
    pub enabled: bool,
}

struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

struct Entry {
    listen: String,
    upstream: String,
    running: Option<Running>,
    toxics: watch::Sender<Arc<Vec<Toxic>>>,
}

impl Entry {
    fn toxics(&self) -> Arc<Vec<Toxic>> {
        self.toxics.borrow().clone()
    }

    fn to_json(&self, name: &str) -> Value {
        json!({
            "name": name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.running.is_some(),
            "toxics": self.toxics().iter().map(Toxic::to_json).collect::<Vec<_>>(),
        })
    }

    /// Binds `self.listen` and starts relaying as proxy `name` of `host`; `listen` becomes the
    /// bound address.
    async fn start(&mut self, name: &str, host: &Arc<Shared>) -> Result<(), ApiError> {
        if self.running.is_some() {
            return Ok(());
        }
        let listener = bind(&self.listen).await?;
        self.run_on(listener, name, host)
    }

    /// Starts relaying on `listener` (already bound) as proxy `name` of `host`.
    fn run_on(
        &mut self,
        listener: TcpListener,
        name: &str,
        host: &Arc<Shared>,
    ) -> Result<(), ApiError> {
        self.listen = listener
            .local_addr()
            .map_err(|e| ApiError::bad_request(format!("listen {}: {e}", self.listen)))?
            .to_string();
        let (stop, stopped) = oneshot::channel();
        let proxy = Proxy {
            name: name.to_owned(),
            upstream: self.upstream.clone(),
            toxics: self.toxics.subscribe(),
        };
        let task = tokio::spawn(accept(listener, Arc::new(proxy), host.clone(), stopped));
        self.running = Some(Running { stop, task });
        Ok(())
    }

    /// Closes the listener and every connection; returns once they are closed.
    async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.stop.send(());
            let _ = running.task.await;
        }
    }
}

/// `host:port` resolved (IPv4 first, as Go's resolver prefers) and bound. An empty host is
/// every interface (`:8474`), an empty address `127.0.0.1:0`.
async fn bind(listen: &str) -> Result<TcpListener, ApiError> {
    let text = match listen {
        "" => "127.0.0.1:0".to_owned(),
        l if l.starts_with(':') => format!("0.0.0.0{l}"),
        l => l.to_owned(),
    };
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(text.as_str())
        .await
        .map_err(|e| ApiError::bad_request(format!("listen {listen}: {e}")))?
        .collect();
    let addr = addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .ok_or_else(|| ApiError::bad_request(format!("listen {listen}: no address")))?;
    TcpListener::bind(addr).await.map_err(|e| {
        let message = format!("listen tcp {addr}: {e}");
        if e.kind() == std::io::ErrorKind::AddrInUse {
            ApiError::conflict(message)
        } else {
            ApiError::bad_request(message)
        }
    })
}

/// What each connection of a running proxy needs.
struct Proxy {
    name: String,
    upstream: String,
    toxics: Toxics,
}

/// How long a stopped proxy's connections have to record their events before they are cut.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Relays `proxy`'s connections on `listener` until `stopped`; then closes the listener and
/// every connection (each records its event first).
async fn accept(
    listener: TcpListener,
    proxy: Arc<Proxy>,
    host: Arc<Shared>,
    stopped: oneshot::Receiver<()>,
) {
    let (close, closing) = watch::channel(false);
    let stop = async {
        let _ = stopped.await;
    };
    let mut conns = accept_until(listener, stop, "toxiproxy proxy", |conns, down| {
        let (proxy, conn_host, closing) = (proxy.clone(), host.clone(), closing.clone());
        spawn_on_io_threads(conns, down, host.io_threads.as_ref(), move |down| {
            serve(down, proxy, conn_host, closing)
        });
    })
    .await;
    close.send_replace(true);
    let drained = tokio::time::timeout(CLOSE_GRACE, async {
        while conns.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        conns.shutdown().await;
    }
}

/// Relays one connection of `proxy` through its toxics until it ends or `closing` turns true,
/// and records its event in `host`'s log.
async fn serve(
    down: TcpStream,
    proxy: Arc<Proxy>,
    host: Arc<Shared>,
    mut closing: watch::Receiver<bool>,
) {
    let started = std::time::Instant::now();
    let mut event = ProxyEvent::starting_now();
    event.proxy = Some(proxy.name.clone());
    let chain = Chain::new(proxy.toxics.clone());
    let stop = async {
        let _ = closing.wait_for(|closed| *closed).await;
    };
    relay::relay(down, &proxy.upstream, &chain, &mut event, stop).await;
    relay::record(&host.events, event, started);
}

/// All proxies of one server.
pub(crate) struct Registry {
    proxies: Mutex<BTreeMap<String, Entry>>,
    next_toxic: AtomicU64,
    /// The server's event log, I/O threads and shutdown signal.
    host: Arc<Shared>,
}

fn not_found() -> ApiError {
    ApiError::not_found("proxy not found")
}

fn toxic_not_found() -> ApiError {
    ApiError::not_found("toxic not found")
}

/// Whether `listen` names the address `current` is bound to (so that an update or a populate
/// with the same address does not restart the proxy).
async fn same_listen(listen: &str, current: &str) -> bool {
    if listen == current {
        return true;
    }
    match tokio::net::lookup_host(listen).await {
        Ok(mut addrs) => addrs.any(|a| a.to_string() == current),
        Err(_) => false,
    }
}

impl Registry {
    /// No proxies yet; theirs will be served with `host`'s I/O threads and recorded in its log.
    pub(crate) fn new(host: Arc<Shared>) -> Self {
        Self {
            proxies: Mutex::default(),
            next_toxic: AtomicU64::new(0),
            host,
        }
    }

    /// The first `limit` events of the proxies' connections with `seq > since`, oldest first.
    pub(crate) fn events_page(&self, since: u64, limit: usize) -> Vec<ProxyEvent> {
        self.host.events.page(since, limit)
    }

    /// The metrics counted from the proxies' events ([`crate::metrics`]), as OpenMetrics text.
    pub(crate) fn metrics_text(&self) -> String {
        self.host.events.metrics().encode()
    }

    /// `GET /proxies`: every proxy by name.
    pub(crate) async fn list(&self) -> Value {
        let proxies = self.proxies.lock().await;
        Value::Object(
            proxies
                .iter()
                .map(|(name, e)| (name.clone(), e.to_json(name)))
                .collect(),
        )
    }

    /// `POST /proxies`. Errors: 409 "proxy already exists", a listen address that cannot be
    /// bound, more than [`MAX_PROXIES`].
    pub(crate) async fn create(&self, spec: Spec) -> Result<Value, ApiError> {
        let mut proxies = self.proxies.lock().await;
        if proxies.contains_key(&spec.name) {
            return Err(ApiError::conflict("proxy already exists"));
        }
        if proxies.len() >= MAX_PROXIES {
            return Err(ApiError::bad_request(format!(
                "a server holds at most {MAX_PROXIES} proxies"
            )));
        }
        let entry = new_entry(&spec, &self.host).await?;
        let shown = entry.to_json(&spec.name);
        proxies.insert(spec.name, entry);
        Ok(shown)
    }

    /// `POST /populate`: each proxy created, or replaced when its listen address or upstream
    /// differs; the proxies as they now are. On an error, the ones done before it and the error.
    pub(crate) async fn populate(&self, specs: Vec<Spec>) -> (Vec<Value>, Option<ApiError>) {
        let mut proxies = self.proxies.lock().await;
        let mut done = Vec::new();
        for spec in specs {
            if let Some(existing) = proxies.get_mut(&spec.name) {
                if existing.upstream == spec.upstream
                    && same_listen(&spec.listen, &existing.listen).await
                {
                    done.push(existing.to_json(&spec.name));
                    continue;
                }
                // Replaced only once its new address is bound: a refusal leaves it as it was
                // (listening, with its toxics), as a refused PATCH does.
                let moves = !same_listen(&spec.listen, &existing.listen).await;
                let bound = match (moves && spec.enabled).then(|| bind(&spec.listen)) {
                    Some(binding) => match binding.await {
                        Ok(listener) => Some(listener),
                        Err(err) => return (done, Some(err)),
                    },
                    None => None,
                };
                existing.stop().await;
                let mut entry = Entry {
                    listen: spec.listen.clone(),
                    upstream: spec.upstream.clone(),
                    running: None,
                    toxics: watch::Sender::new(Arc::new(Vec::new())),
                };
                let started = match bound {
                    Some(listener) => entry.run_on(listener, &spec.name, &self.host),
                    None if spec.enabled => entry.start(&spec.name, &self.host).await,
                    None => Ok(()),
                };
                done.push(entry.to_json(&spec.name));
                proxies.insert(spec.name.clone(), entry);
                if let Err(err) = started {
                    return (done, Some(err));
                }
                continue;
            } else if proxies.len() >= MAX_PROXIES {
                let err =
                    ApiError::bad_request(format!("a server holds at most {MAX_PROXIES} proxies"));
                return (done, Some(err));
            }
            match new_entry(&spec, &self.host).await {
                Ok(entry) => {
                    done.push(entry.to_json(&spec.name));
                    proxies.insert(spec.name, entry);
                }
                Err(err) => return (done, Some(err)),
            }
        }
        (done, None)
    }

    /// `GET /proxies/{name}`.
    pub(crate) async fn get(&self, name: &str) -> Result<Value, ApiError> {
        let proxies = self.proxies.lock().await;
        proxies
            .get(name)
            .map(|e| e.to_json(name))
            .ok_or_else(not_found)
    }

    /// `POST`/`PATCH /proxies/{name}`: `listen`, `upstream`, `enabled` (each defaulting to the
    /// current value). A changed address or upstream restarts the proxy.
    pub(crate) async fn update(
        &self,
        name: &str,
        body: &Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let mut proxies = self.proxies.lock().await;
        let entry = proxies.get_mut(name).ok_or_else(not_found)?;
        let listen = field(body, "listen")?.unwrap_or_else(|| entry.listen.clone());
        let upstream = field(body, "upstream")?.unwrap_or_else(|| entry.upstream.clone());
        let enabled = match body.get("enabled") {
            None | Some(Value::Null) => entry.running.is_some(),
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "bad request body: enabled must be a boolean, got {other}"
                )))
            }
        };
        check_upstream(&upstream)?;
        // A refused update changes nothing: a new address is bound before the old one is let go,
        // so "address in use" leaves the proxy running where it was.
        let moves = !same_listen(&listen, &entry.listen).await;
        let rebinds = upstream != entry.upstream && !moves;
        let bound = if moves && enabled {
            Some(bind(&listen).await?)
        } else {
            None
        };
        if moves || rebinds || !enabled {
            entry.stop().await;
        }
        if moves || rebinds {
            entry.listen = listen;
            entry.upstream = upstream;
        }
        match bound {
            Some(listener) => entry.run_on(listener, name, &self.host)?,
            None if enabled => entry.start(name, &self.host).await?,
            None => {}
        }
        Ok(entry.to_json(name))
    }

    /// `DELETE /proxies/{name}`: stops and forgets it.
    pub(crate) async fn delete(&self, name: &str) -> Result<(), ApiError> {
        let mut proxies = self.proxies.lock().await;
        let mut entry = proxies.remove(name).ok_or_else(not_found)?;
        entry.stop().await;
        Ok(())
    }

    /// `POST /reset`: every toxic removed and every proxy enabled. A proxy that cannot listen
    /// (its address taken meanwhile) does not stop the others': each is tried, and the error
    /// names every one that stays disabled.
    pub(crate) async fn reset(&self) -> Result<(), ApiError> {
        let mut proxies = self.proxies.lock().await;
        let mut failed = Vec::new();
        for (name, entry) in proxies.iter_mut() {
            entry.toxics.send_replace(Arc::new(Vec::new()));
            if let Err(e) = entry.start(name, &self.host).await {
                failed.push(format!("{name}: {}", e.message));
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(ApiError::conflict(format!(
                "every toxic was removed, but these proxies stay disabled: {}",
                failed.join("; ")
            )))
        }
    }

    /// Stops every proxy (the server is shutting down).
    pub(crate) async fn stop_all(&self) {
        let mut proxies = self.proxies.lock().await;
        for entry in proxies.values_mut() {
            entry.stop().await;
        }
    }

    /// `GET /proxies/{name}/toxics`.
    pub(crate) async fn toxics(&self, name: &str) -> Result<Value, ApiError> {
        let proxies = self.proxies.lock().await;
        let entry = proxies.get(name).ok_or_else(not_found)?;
        Ok(Value::Array(
            entry.toxics().iter().map(Toxic::to_json).collect(),
        ))
    }

    /// `POST /proxies/{name}/toxics`. Errors: 404, 400 (see [`Toxic::create`]), 409 "toxic
    /// already exists", more than [`MAX_TOXICS`].
    pub(crate) async fn add_toxic(
        &self,
        name: &str,
        body: &Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let proxies = self.proxies.lock().await;
        let entry = proxies.get(name).ok_or_else(not_found)?;
        let id = self.next_toxic.fetch_add(1, Ordering::Relaxed);
        let toxic = Toxic::create(id, body).map_err(ApiError::from)?;
        let mut toxics = entry.toxics().as_ref().clone();
        if toxics.iter().any(|t| t.name == toxic.name) {
            return Err(ApiError::conflict("toxic already exists"));
        }
        if toxics.len() >= MAX_TOXICS {
            return Err(ApiError::bad_request(format!(
                "a proxy holds at most {MAX_TOXICS} toxics"
            )));
        }
        let shown = toxic.to_json();
        toxics.push(toxic);
        entry.toxics.send_replace(Arc::new(toxics));
        Ok(shown)
    }

    /// `GET /proxies/{name}/toxics/{toxic}`.
    pub(crate) async fn toxic(&self, name: &str, toxic: &str) -> Result<Value, ApiError> {
        let proxies = self.proxies.lock().await;
        let entry = proxies.get(name).ok_or_else(not_found)?;
        let toxics = entry.toxics();
        let found = toxics.iter().find(|t| t.name == toxic);
        found.map(Toxic::to_json).ok_or_else(toxic_not_found)
    }

    /// `POST`/`PATCH /proxies/{name}/toxics/{toxic}`: attributes and toxicity.
    pub(crate) async fn update_toxic(
        &self,
        name: &str,
        toxic: &str,
        body: &Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let proxies = self.proxies.lock().await;
        let entry = proxies.get(name).ok_or_else(not_found)?;
        let mut toxics = entry.toxics().as_ref().clone();
        let slot = toxics
            .iter_mut()
            .find(|t| t.name == toxic)
            .ok_or_else(toxic_not_found)?;
        *slot = slot.updated(body).map_err(ApiError::from)?;
        let shown = slot.to_json();
        entry.toxics.send_replace(Arc::new(toxics));
        Ok(shown)
    }

    /// `DELETE /proxies/{name}/toxics/{toxic}`.
    pub(crate) async fn delete_toxic(&self, name: &str, toxic: &str) -> Result<(), ApiError> {
        let proxies = self.proxies.lock().await;
        let entry = proxies.get(name).ok_or_else(not_found)?;
        let mut toxics = entry.toxics().as_ref().clone();
        let before = toxics.len();
        toxics.retain(|t| t.name != toxic);
        if toxics.len() == before {
            return Err(toxic_not_found());
        }
        entry.toxics.send_replace(Arc::new(toxics));
        Ok(())
    }
}

async fn new_entry(spec: &Spec, host: &Arc<Shared>) -> Result<Entry, ApiError> {
    let mut entry = Entry {
        listen: spec.listen.clone(),
        upstream: spec.upstream.clone(),
        running: None,
        toxics: watch::Sender::new(Arc::new(Vec::new())),
    };
    if spec.enabled {
        entry.start(&spec.name, host).await?;
    }
    Ok(entry)
}

/// A string member of a request body, at most [`MAX_FIELD`] bytes; `None` when absent or null.
pub(crate) fn field(body: &Map<String, Value>, name: &str) -> Result<Option<String>, ApiError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() > MAX_FIELD => Err(ApiError::bad_request(format!(
            "{name} is {} bytes; at most {MAX_FIELD}",
            s.len()
        ))),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ApiError::bad_request(format!(
            "bad request body: {name} must be a string, got {other}"
        ))),
    }
}
/// An upstream is `host:port`: a host name or IPv4 address (letters, digits, `-`, `.`, `_`), or
/// an IPv6 address in brackets (`[::1]:80`), and a port of 1 to 65535 in digits. The host is
/// resolved only when a connection comes, as Toxiproxy does; what could never resolve or connect
/// (a scheme, a path, an unbracketed IPv6 address, a port of 0) is refused now, naming what is
/// wrong.
pub(crate) fn check_upstream(upstream: &str) -> Result<(), ApiError> {
    let bad = |why: &str| {
        Err(ApiError::bad_request(format!(
            "bad request body: upstream {upstream:?} {why}; expected host:port"
        )))
    };
    if upstream.contains("://") {
        return bad("has a scheme");
    }
    let Some((host, port)) = upstream.rsplit_once(':') else {
        return bad("has no port");
    };
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return bad("has a port that is not a number from 1 to 65535");
    }
    if !matches!(port.parse::<u16>(), Ok(p) if p > 0) {
        return bad("has a port outside 1 to 65535");
    }
    if let Some(inner) = host.strip_prefix('[') {
        let is_v6 = inner
            .strip_suffix(']')
            .is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok());
        return if is_v6 {
            Ok(())
        } else {
            bad("has a bracketed host that is not an IPv6 address")
        };
    }
    if host.is_empty() {
        return bad("has no host");
    }
    if host.contains(':') {
        return bad("has an IPv6 address without brackets (write `[::1]:80`)");
    }
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    {
        return bad("has a host with a character no host name has");
    }
    Ok(())
}
