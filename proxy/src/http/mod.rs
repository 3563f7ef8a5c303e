//! HTTP mode: a downstream connection starts on the fast path (`fast`: plain requests whose
//! method, path and headers fit no rule's conditions, forwarded without hyper) and moves, when a
//! request needs more, to a hyper 1 HTTP/1.1 server, hyper's HTTP/1.1 client for the upstream,
//! and a request's fault in between. `docs/design/proxy.md` walks through it.
//!
//! ```text
//! downstream ──► fast: plain head, no rule fits ─► forwarded as bytes (RequestCtx, event) ─► upstream
//!                  │ anything else: handoff, with the bytes read so far
//!                  ▼
//!                conn (FaultIo; ConnSignals) ──► service: RequestCtx, match rule, prepare head
//!                                                   │
//!                          no rule ─► Flight::pass ─┴─ rule ─► faults::apply(fault, Flight)
//!                                                               refuse  respond  delay  hang
//!                                                               drop_response  duplicate
//!                                                               reset_mid_response
//! Flight:  forward | pass | drain | buffer | synthetic | abort
//!   └─ forward ─► upstream (Forwarder) over the connection's UpstreamLink ─► upstream
//!                 └─► Reply: send | send_cut | send_buffered | discard | no_response | abort
//! ```
//!
//! - `fast/`: the fast path (`wire`: reading a head and judging it plain; `serve`: forwarding
//!   plain exchanges as bytes until a head needs hyper's path).
//! - `conn`, `conn_signals`: the downstream connection's task, and its `ConnSignals` (close,
//!   reset, shutdown, new upstream connection, slow head) with the `ConnRegistry` a shutdown
//!   reaches them through. The control API's connections are served by `conn` too, for the same
//!   edges: `rejections` (hyper's own answers to unparseable or slow heads, given a problem
//!   body), `head_clock` and `head_timer` (a connection's place in reading heads, and the
//!   header-read timeout: one sweep per proxy, no timer per request or connection), `linger` (a
//!   close that lets a client still sending read its answer).
//! - `key`: where a request's idempotency key is (`RequestKey`: a header, the query, or the
//!   body's first 64 KiB).
//! - `service`: one request: its [`ctx::RequestCtx`], its rule, and the dispatch.
//! - `flight`: what a fault works with: [`flight::Flight`] (the request, not yet forwarded) and
//!   [`flight::Reply`] (the way back to the client).
//! - `faults/`: one file per verb.
//! - `shared`: the state every connection of one proxy shares (`Shared`), TCP mode's included.
//! - `upstream` (where requests go, sending one), `link` (the upstream connections of one
//!   downstream connection, driven in its task), `headers` (what is rewritten on the way),
//!   `detach` and `receipt` (an exchange whose client left finishes in the background and still
//!   reports to the event), `body` (the bodies sent each way), `synthetic` (the proxy's own
//!   responses and problem bodies).
//!
//! Each request's [`ctx::RequestCtx`] becomes one event: committed by the fault that ends the
//! exchange, by the response body when it was delivered, or on drop when the client went away.

mod body;
mod conn;
mod conn_signals;
mod ctx;
mod detach;
mod fast;
mod faults;
mod flight;
mod head_clock;
mod head_timer;
mod headers;
mod key;
mod linger;
mod link;
mod originate;
mod receipt;
mod rejections;
mod service;
mod shared;
mod sink;
mod stream;
mod synthetic;
mod terminate;
mod upstream;

pub(crate) use conn::{serve_connection, serve_control};
pub(crate) use conn_signals::ConnRegistry;
pub(crate) use ctx::IDEMPOTENCY_KEY;
pub(crate) use head_timer::sweep as sweep_slow_heads;
pub(crate) use key::RequestKey;
pub use originate::PRINCIPAL_HEADER;
pub(crate) use shared::{Shared, Upstream};
pub(crate) use synthetic::{problem_document, PROBLEM_JSON};
pub(crate) use upstream::Forwarder;
