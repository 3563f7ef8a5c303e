//! HTTP mode: a hyper 1 HTTP/1.1 server per downstream connection, a pooled hyper-util client to
//! the upstream, and the fault phases in between.
//!
//! ```text
//! downstream ──► conn (FaultIo) ──► service: match rule ──► request phase  (refuse, respond,
//!                                                   │                        delay_request, hang)
//!                                                   ├──► upstream phase (forward, duplicate)
//!                                                   └──► response phase (delay_response,
//!                                                            drop_response, reset_mid_response,
//!                                                            hang {forward})
//! ```

mod body;
mod conn;
mod ctx;
mod detach;
mod forward;
mod request_phase;
mod response_phase;
mod service;
mod upstream_phase;

pub(crate) use conn::serve_connection;
pub(crate) use forward::Forwarder;
