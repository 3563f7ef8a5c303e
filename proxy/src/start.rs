//! Starting a proxy: [`start`] binds, builds the shared state, and spawns the accept loop and the
//! control API; it returns the [`ProxyHandle`] that controls them.

use std::net::SocketAddr;
use std::sync::Arc;

use idemspec_scenarios::rules::{check_upstream, Mode};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;

use crate::config::ProxyConfig;
use crate::error::ProxyError;
use crate::event_log::EventLog;
use crate::handle::ProxyHandle;
use crate::http::Forwarder;
use crate::http::{Shared, Upstream};
use crate::matcher::{RuleSet, TcpRuleSet};

/// How many connections the kernel queues for `accept`. tokio's `bind` asks for 128, as std
/// does: a burst of more (200 clients at once, or slow clients arriving with real ones) has its
/// surplus SYNs dropped, and those clients wait out the 1 s retransmission timeout. Linux caps
/// it at `net.core.somaxconn` (4096 by default since 5.4).
const BACKLOG: u32 = 1024;

/// A listener on `addr` with room for a burst of connections.
fn bind(addr: SocketAddr) -> Result<TcpListener, ProxyError> {
    let err = |source| ProxyError::Bind { addr, source };
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    }
    .map_err(err)?;
    // As tokio's `bind`: a restarted proxy can bind the port its predecessor left in TIME_WAIT.
    socket.set_reuseaddr(true).map_err(err)?;
    socket.bind(addr).map_err(err)?;
    socket.listen(BACKLOG).map_err(err)
}

/// Starts a proxy: binds `config.listen` (and `config.control`), then serves in the background.
///
/// Errors: the address cannot be bound, the upstream does not suit the mode, a rule is invalid,
/// or rules of the other mode were given.
pub async fn start(config: ProxyConfig) -> Result<ProxyHandle, ProxyError> {
    let upstream = match config.mode {
        Mode::Http => Upstream::Http(Box::new(Forwarder::new(
            &config.upstream,
            config.upstream_tls.as_ref(),
        )?)),
        Mode::Tcp => {
            check_upstream(Mode::Tcp, &config.upstream).map_err(ProxyError::Upstream)?;
            Upstream::Tcp(config.upstream.clone())
        }
    };
    match config.mode {
        Mode::Http if !config.tcp_rules.is_empty() => {
            return Err(ProxyError::wrong_mode("tcp", Mode::Http))
        }
        Mode::Tcp if !config.rules.is_empty() => {
            return Err(ProxyError::wrong_mode("http", Mode::Tcp))
        }
        _ => {}
    }
    if config.io_threads > ProxyConfig::MAX_IO_THREADS {
        return Err(ProxyError::IoThreads {
            threads: config.io_threads,
            reason: format!(
                "at most {} (one per CPU is the default)",
                ProxyConfig::MAX_IO_THREADS
            ),
        });
    }
    // Zero would cut every connection before its first byte: it means no limit, as `0` does
    // for the command-line flag.
    let header_read_timeout = config.header_read_timeout.filter(|t| !t.is_zero());
    let key = crate::http::RequestKey::new(config.key_at).map_err(ProxyError::KeyAt)?;
    let http_rules = RuleSet::compile(config.rules)?;
    let tcp_rules = TcpRuleSet::compile(config.tcp_rules)?;
    let listener = bind(config.listen)?;
    let addr = listener.local_addr().map_err(|source| ProxyError::Bind {
        addr: config.listen,
        source,
    })?;
    let control = match config.control {
        Some(c) => Some(bind(c)?),
        None => None,
    };
    let io_threads = match config.io_threads {
        0 => None,
        n => Some(
            crate::io_threads::IoThreads::start(n).map_err(|e| ProxyError::IoThreads {
                threads: n,
                reason: e.to_string(),
            })?,
        ),
    };
    let (stop, stopped) = watch::channel(false);
    let mut shared = Shared::new(
        config.mode,
        (http_rules, tcp_rules),
        (Arc::new(EventLog::new(config.event_capacity)), key),
        upstream,
        stopped,
        (config.shutdown_grace, header_read_timeout),
        io_threads,
    );
    shared.listen_tls = config.listen_tls;
    let shared = Arc::new(shared);
    let mut tasks = vec![tokio::spawn(crate::server::run(listener, shared.clone()))];
    if let Some(timeout) = header_read_timeout {
        tasks.push(tokio::spawn(crate::http::sweep_slow_heads(
            shared.clone(),
            timeout,
        )));
    }
    let control_addr = control.as_ref().and_then(|l| l.local_addr().ok());
    let handle = ProxyHandle::new(shared.clone(), addr, control_addr, stop);
    if let Some(listener) = control {
        tasks.push(crate::control::spawn(listener, handle.clone(), shared));
    }
    handle.hold(tasks);
    tracing::info!(%addr, upstream = %config.upstream, mode = ?config.mode, "idemspec-proxy started");
    Ok(handle)
}
