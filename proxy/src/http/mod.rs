//! HTTP mode: a hyper 1 HTTP/1.1 server per downstream connection, hyper's HTTP/1.1 client for
//! the upstream, and the fault phases in between.
//!
//! ```text
//! downstream ──► conn (FaultIo; ctl: ConnCtl) ──► service: RequestCtx, match rule
//!                                               ├─► request phase   refuse, respond, delay_request, hang
//!                                               ├─► upstream phase  forward (streamed), duplicate (buffered)
//!                                               └─► response phase  delay_response, drop_response,
//!                                                                   reset_mid_response, hang {forward}
//! upstream link: one upstream connection per downstream connection, opened on its first request and
//! driven in the same task; an exchange whose client left finishes in the background (`detach`).
//! ```
//!
//! Each request's [`ctx::RequestCtx`] becomes one event: committed by the phase that ends the
//! exchange, by the response body when it was delivered, or on drop when the client went away.

mod body;
mod conn;
mod ctl;
mod ctx;
mod detach;
mod forward;
mod receipt;
mod request_phase;
mod response_phase;
mod service;
mod upstream_phase;

pub(crate) use conn::serve_connection;
pub(crate) use ctl::ConnRegistry;
pub(crate) use forward::Forwarder;
