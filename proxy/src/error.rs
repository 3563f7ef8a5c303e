//! The proxy's errors: configuration and start-up problems. Per-request failures are not errors
//! of the proxy; they are recorded in [`crate::ProxyEvent`]s.

use std::net::SocketAddr;

use idemspec_scenarios::rules::Mode;

/// A problem starting or reconfiguring the proxy. Messages read after "failed to".
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The listen (or control) address could not be bound.
    #[error("bind {addr}")]
    Bind {
        /// The address that was asked for.
        addr: SocketAddr,
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
    /// The I/O threads ([`crate::ProxyConfig::io_threads`]) could not be started: too many asked
    /// for (more than [`crate::ProxyConfig::MAX_IO_THREADS`]), or the system refused a thread or
    /// its event loop (each takes a few file descriptors).
    #[error("start {threads} I/O threads: {reason}")]
    IoThreads {
        /// How many were asked for.
        threads: usize,
        /// Why they could not be started.
        reason: String,
    },
    /// The upstream is not usable for the mode (`http(s)://host[:port]` for HTTP, `host:port` for
    /// TCP).
    #[error("use upstream: {0}")]
    Upstream(String),
    /// A TLS setting could not be used: a certificate, key or CA file
    /// ([`crate::ProxyConfig::upstream_tls`]), or a server name.
    #[error("set up TLS: {0}")]
    Tls(#[source] idemspec_tls::TlsError),
    /// [`crate::ProxyConfig::key_at`] names a header HTTP cannot carry.
    #[error("read the idempotency key: {0}")]
    KeyAt(String),
    /// A rule built in code breaks a rule of the schema (files and the control API are checked
    /// while parsing).
    #[error("accept rule `{rule}`: {reason}")]
    InvalidRule {
        /// The rule's name.
        rule: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Two rules of one set have the same name: events name the rule that applied, so each
    /// needs its own.
    #[error("accept rule {}: its name `{name}` is taken by an earlier rule, and events name the rule that applied", index + 1)]
    DuplicateRuleName {
        /// The name.
        name: String,
        /// The 0-based position of the rule that repeats it, in the set it would be part of.
        index: usize,
    },
    /// HTTP rules were given to a TCP-mode proxy, or TCP rules to an HTTP-mode one.
    #[error("use {given} rules on a proxy in {mode} mode")]
    WrongMode {
        /// The kind of rules given (`http` or `tcp`).
        given: &'static str,
        /// The proxy's mode.
        mode: &'static str,
    },
}

impl ProxyError {
    /// `given` (`http` or `tcp`) rules for a proxy in `mode`.
    pub(crate) fn wrong_mode(given: &'static str, mode: Mode) -> Self {
        ProxyError::WrongMode {
            given,
            mode: match mode {
                Mode::Http => "http",
                Mode::Tcp => "tcp",
            },
        }
    }
}
