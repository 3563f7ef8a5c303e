//! Accepting connections and serving HTTP/1.1 on them with hyper, where [`axum::serve()`] leaves four
//! gaps:
//!
//! - **Slow clients.** A request's line and headers must arrive within the header read timeout
//!   (`--header-read-timeout`, counted from the accept or the previous response), or the connection
//!   is closed without an answer; its body within the body read timeout (`--body-read-timeout`,
//!   from the end of the head; every request carries its [`crate::edge::BodyDeadline`]), or it is
//!   answered 408. A client trickling a byte a second holds nothing for long.
//! - **What hyper refuses.** A request hyper cannot parse gets hyper's status (400, 414, 431) with a
//!   problem body like every other error (`rejections.rs`), not an empty one.
//! - **Closing with the client still sending.** After an answer given before the request was read
//!   to its end (a 413, a 401, a refused head), the connection is closed the way RFC 9112 §9.6 asks
//!   (`linger.rs`, [`LINGER_TIME`]): the write side first, then the rest of the request is read and
//!   dropped, bounded, so a client that writes its whole body before it reads still gets the answer
//!   instead of a reset.
//!
//! - **TLS** (`--tls-cert`): the handshake, within the header read timeout, comes before all of
//!   this and the rest runs unchanged over it; a client that begins with plain HTTP gets 400
//!   `plain-http-to-tls-port` in plain HTTP; a verified client certificate goes with each request.
//!
//! Layout: [`serve`] (the accept loop and graceful shutdown, `accept.rs`), the TLS handshake
//! (`tls.rs`), the socket as hyper sees it (`io.rs`), following hyper's responses
//! (`rejections.rs`), the lingering close (`linger.rs`).

mod accept;
mod io;
mod linger;
mod rejections;
mod tls;

pub use accept::serve;

use std::time::Duration;

/// How long a client may take to send a request (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// For the request line and headers, from the accept or the previous response.
    pub header_read: Duration,
    /// For the body, from the end of the head.
    pub body_read: Duration,
}
pub use linger::{LINGER_BYTES, LINGER_QUIET, LINGER_TIME};
