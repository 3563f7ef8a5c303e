//! # idemspec-proxy
//!
//! A fault-injecting HTTP/1.1 and TCP proxy. It sits between a client and the API under test and
//! makes, on purpose, the failures that produce retries: the request never reaches the server
//! (`refuse`, `respond`), the server does the work and the response is lost (`drop_response`),
//! the client gives up while the server is still working (`delay_response`, `hang`), the
//! connection dies mid-flight (`reset_mid_response`), an intermediary sends twice (`duplicate`).
//! It records what it did in an event log: the runner's ground truth for "did the server do the
//! work". It knows nothing of checks or verdicts.
//!
//! - [`start`] a proxy from a [`ProxyConfig`]; control it with the returned [`ProxyHandle`]
//!   (rules, events, reset, shutdown), or remotely over the [`control`] API.
//! - Rules, matches and faults are `idemspec_scenarios::rules` (shared with scenario files).
//! - [`ProxyEvent`] / [`EventLog`]: one record per request (HTTP) or connection (TCP).
//! - [`cli`]: `idemspec proxy` (`ProxyArgs` + `run`).
//! - [`toxiproxy`]: a Toxiproxy-compatible REST API whose proxies run on the TCP relay
//!   (`idemspec proxy --toxiproxy-api ADDR`).
//!
//! Layout: `server` (accept loop, shutdown, handing a connection to HTTP or TCP mode), `io_threads` (thread-per-core: connections pinned to
//! single-threaded runtimes, [`ProxyConfig::io_threads`]), `http/` (the state every connection
//! of a proxy shares, `Shared`; the connection and its
//! signals, the per-request context, the request's `Flight` through the proxy, one file per
//! fault verb in `http/faults/`, the upstream and its per-connection link), `tcp/` (the TCP
//! relay and its per-direction transforms; TCP mode's rules), `matcher` (rule matching and
//! counters), `event` (`ProxyEvent`), `event_log` (`EventLog`, counted into `metrics`),
//! `start` (starting a proxy), `handle`
//! (controlling it), `control`, `cli`. Request headers named `x-idemspec-*` can be matched by
//! rules and are stripped before forwarding; `X-Idemspec-Step` tags the event (`step`).
//! The upstream is a base URL `http://host:port` or `https://host:port` (reached over TLS,
//! [`UpstreamTls`]: trust, and a client certificate per principal chosen by the request's
//! `x-idemspec-principal` header), optionally with a path prefix that is put in front of every
//! forwarded path. The proxy's own port may speak TLS too ([`ProxyConfig::listen_tls`]).
#![warn(missing_docs)]

pub mod cli;
mod config;
pub mod control;
mod error;
mod event;
mod event_log;
mod handle;
mod http;
mod io_threads;
mod matcher;
pub mod metrics;
mod server;
mod start;
mod tcp;
pub mod toxiproxy;

pub use config::{ProxyConfig, UpstreamTls};
pub use error::ProxyError;
pub use event::{cut_value, ProxyEvent, Side};
pub use event_log::EventLog;
pub use handle::ProxyHandle;
pub use http::PRINCIPAL_HEADER;
pub use start::start;
