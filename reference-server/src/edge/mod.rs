//! The HTTP edge every route and the listener share: the problem body of every error
//! ([`ApiError`], RFC 9457), reading a request body within its limits and deadline, the limits
//! on a request's head, and the client certificate a TLS connection verified
//! ([`ClientCertificate`]). It imports nothing else of leasebroker's but `error_chain`, so the listener, the
//! auth and idempotency middlewares and the handlers all stand on it.

mod body;
mod client_cert;
mod problem;

pub(crate) use body::read_body;
pub use body::{BodyDeadline, JsonBody};
pub use client_cert::ClientCertificate;
pub use problem::{ApiError, PROBLEM_BASE};

/// Request bodies above this many bytes get 413 `payload-too-large` (1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The most header fields a request may have (hyper's default, made explicit); more → 431
/// `request-header-fields-too-large`.
pub const MAX_HEADER_FIELDS: usize = 100;

/// The most bytes a request's line and headers may take (the size of hyper's default read buffer):
/// 408 KiB; more → 431 `request-header-fields-too-large`. A request target over hyper's
/// own limit (65 534 bytes) is 414 `uri-too-long` first.
pub const MAX_HEAD_BYTES: usize = 8 * 1024 + 400 * 1024;
