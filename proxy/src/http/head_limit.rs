//! The limits on an upstream's response head, the same on both paths: the fast path parses heads
//! with `httparse` within them, hyper's client is built with them. A head over either is an
//! answer the proxy refuses — not an upstream that never answered — and is said so: in the
//! event's `upstream_head_refused` and the `502` the client gets.

/// The most headers a response head may have: hyper's default (`max_headers`), 100.
pub(crate) const MAX_RESPONSE_HEADERS: usize = 100;
/// The most bytes a response head may take: hyper's default read buffer limit
/// (`max_buf_size`), 8,192 + 100 × 4,096 = 417,792 bytes (408 KiB).
pub(crate) const MAX_RESPONSE_HEAD_BYTES: usize = 8192 + 4096 * 100;

/// Which limit a response head broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadRefused {
    /// More than [`MAX_RESPONSE_HEADERS`] headers.
    TooManyHeaders,
    /// More than [`MAX_RESPONSE_HEAD_BYTES`] bytes without its end.
    TooLarge,
    /// One of the two: hyper's client reports both as one error ("message head is too large").
    EitherLimit,
}

impl HeadRefused {
    /// The limit broken, in words: `more than 100 headers`.
    pub(crate) fn limit(self) -> String {
        let headers = format!("more than {MAX_RESPONSE_HEADERS} headers");
        let bytes = format!("more than {MAX_RESPONSE_HEAD_BYTES} bytes");
        match self {
            Self::TooManyHeaders => headers,
            Self::TooLarge => bytes,
            Self::EitherLimit => format!("{headers} or {bytes}"),
        }
    }

    /// The problem detail and event error for an upstream at `base` whose head broke this limit.
    pub(crate) fn detail(self, base: &str) -> String {
        format!(
            "the upstream {base} answered, with a response head idemspec-proxy refuses: {} \
             (the proxy's limits: {MAX_RESPONSE_HEADERS} headers, {MAX_RESPONSE_HEAD_BYTES} bytes, \
             hyper's defaults)",
            self.limit()
        )
    }

    /// The limit hyper's client error `err` says a response head broke, if it says one.
    pub(crate) fn of_hyper(err: &hyper::Error) -> Option<Self> {
        err.is_parse_too_large().then_some(Self::EitherLimit)
    }
}
