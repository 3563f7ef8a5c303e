//! The HTTP/1.1 wire work of the fast path: which request heads it takes ([`analyse_request`]),
//! the head it sends upstream, the response head it sends back ([`analyse_response`]), and where
//! a response body ends ([`Framing`], [`Chunks`]). Everything here is pure: bytes in, a plan out.
//!
//! The fast path takes only the plain case, and says [`Request::Handoff`] for everything else so
//! that hyper's path, with its own parser and its own answers, gets the connection: not HTTP/1.1,
//! a request-target that is not origin-form or holds bytes outside the URI characters, no `Host`,
//! more than one `Content-Length` or an unparseable one, `Transfer-Encoding`, `Expect`, `Upgrade`,
//! `TE`, `Trailer`, `Proxy-Connection`, a `Connection` option other than `keep-alive` and `close`,
//! more than [`MAX_HEADERS`] headers, a head longer than [`MAX_REQUEST_HEAD`], bytes
//! `httparse` rejects, or a request whose head satisfies some rule's conditions.

use crate::http::head_limit::{HeadRefused, MAX_RESPONSE_HEADERS, MAX_RESPONSE_HEAD_BYTES};
use crate::http::headers::CONTROL_PREFIX;
use crate::matcher::{RequestView, RuleSet};

/// Headers per message the fast path parses; a head with more goes to hyper (whose limit is the
/// same, and which answers 431).
pub(super) const MAX_HEADERS: usize = 100;
/// The longest request head the fast path waits for; a longer one goes to hyper.
pub(super) const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// The longest request-target the fast path forwards.
const MAX_TARGET: usize = 8 * 1024;

/// What the fast path does with the bytes at the front of a connection's buffer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Request {
    /// No whole head yet.
    Partial,
    /// Not the plain case: hyper's path takes the connection from this head on.
    Handoff,
    /// A plain request: its upstream head was written to the output buffer.
    Plain(PlainRequest),
}

/// A plain request, as the fast path forwards and records it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PlainRequest {
    /// Bytes of the head in the buffer, its final CRLF included.
    pub(super) head_len: usize,
    /// The request body's length (`Content-Length`, 0 without one).
    pub(super) body_len: u64,
    /// The client asked to close the connection after this exchange (`Connection: close`).
    pub(super) close: bool,
    /// A `HEAD` request: its response has no body whatever its headers say.
    pub(super) head_method: bool,
    pub(super) method: String,
    /// The request-target as sent (the event's path).
    pub(super) path: String,
    /// The key header's value (lossy UTF-8), the first when repeated.
    pub(super) key: Option<String>,
    /// The `X-Idemspec-Step` value.
    pub(super) step: Option<String>,
}

/// A byte of an origin-form request-target that `http::Uri` accepts unescaped.
fn target_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b)
}

/// The value of a `Content-Length` header, when it is only digits and fits.
fn content_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// Iterates the comma-separated options of a `Connection` value, trimmed.
fn options(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(|o| o.trim_ascii())
        .filter(|o| !o.is_empty())
}

fn text(value: &[u8]) -> String {
    String::from_utf8_lossy(value).into_owned()
}

fn is(name: &str, lower: &str) -> bool {
    name.eq_ignore_ascii_case(lower)
}

/// Parses the request head at the front of `buf` and, for a plain one, writes the head to send
/// upstream into `out` (cleared first): the same method, `prefix` before the target, HTTP/1.1,
/// and every header as sent except `Connection`, `Keep-Alive` and the `x-idemspec-*` control
/// headers. `key_header`: the header recorded as the event's key (lowercase). `rules`: the rules
/// in force, if any; a head that satisfies one's conditions goes to hyper's path, which selects.
pub(super) fn analyse_request(
    buf: &[u8],
    prefix: &str,
    key_header: &str,
    rules: Option<&RuleSet>,
    out: &mut Vec<u8>,
) -> Request {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_REQUEST_HEAD => return Request::Partial,
        _ => return Request::Handoff,
    };
    let (Some(method), Some(target), Some(1)) = (req.method, req.path, req.version) else {
        return Request::Handoff;
    };
    if head_len > MAX_REQUEST_HEAD
        || method == "CONNECT"
        || !target.starts_with('/')
        || target.len() > MAX_TARGET
        || !target.bytes().all(target_byte)
    {
        return Request::Handoff;
    }
    let mut plan = PlainRequest {
        head_len,
        body_len: 0,
        close: false,
        head_method: method == "HEAD",
        method: method.to_owned(),
        path: target.to_owned(),
        key: None,
        step: None,
    };
    out.clear();
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(prefix.as_bytes());
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let (mut host, mut length) = (false, false);
    for h in req.headers.iter() {
        let name = h.name;
        // Before any header is skipped: the key header may be any header (as on hyper's path).
        if is(name, key_header) && plan.key.is_none() {
            plan.key = Some(text(h.value));
        }
        if is(name, "content-length") {
            match content_length(h.value) {
                Some(n) if !length => {
                    length = true;
                    plan.body_len = n;
                }
                _ => return Request::Handoff,
            }
        } else if is(name, "connection") {
            for option in options(h.value) {
                if option.eq_ignore_ascii_case(b"close") {
                    plan.close = true;
                } else if !option.eq_ignore_ascii_case(b"keep-alive") {
                    return Request::Handoff;
                }
            }
            continue;
        } else if is(name, "keep-alive") {
            continue;
        } else if is(name, "transfer-encoding")
            || is(name, "expect")
            || is(name, "upgrade")
            || is(name, "te")
            || is(name, "trailer")
            || is(name, "proxy-connection")
        {
            return Request::Handoff;
        } else if is(name, "host") {
            host = true;
        }
        if name.len() >= CONTROL_PREFIX.len()
            && name.as_bytes()[..CONTROL_PREFIX.len()]
                .eq_ignore_ascii_case(CONTROL_PREFIX.as_bytes())
        {
            if is(name, "x-idemspec-step") && plan.step.is_none() {
                plan.step = Some(text(h.value));
            }
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    if !host {
        return Request::Handoff;
    }
    if let Some(rules) = rules {
        let head = Head {
            method,
            path: target.split_once('?').map_or(target, |(path, _)| path),
            headers: req.headers,
        };
        if rules.may_apply(&head, plan.key.as_deref()) {
            return Request::Handoff;
        }
    }
    out.extend_from_slice(b"\r\n");
    Request::Plain(plan)
}

/// A parsed request head as the rules see it (the same method, path and header values that
/// hyper's `Parts` give for it).
struct Head<'a> {
    method: &'a str,
    /// The origin-form target without its query.
    path: &'a str,
    headers: &'a [httparse::Header<'a>],
}

impl RequestView for Head<'_> {
    fn method(&self) -> &str {
        self.method
    }

    fn path(&self) -> &str {
        self.path
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| is(h.name, name))
            .map(|h| h.value)
    }
}

/// Where a response body ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body (`HEAD`, 204, 304).
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`, forwarded as it comes.
    Chunked(Chunks),
    /// Until the upstream closes (the downstream connection closes after it too).
    UntilClose,
}

/// What the upstream's response head at the front of a buffer is.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Response {
    /// No whole head yet.
    Partial,
    /// Not a response the proxy can forward: why.
    Invalid(String),
    /// A response whose head is over a limit of `head_limit`: which one.
    Refused(HeadRefused),
    /// A 1xx other than 101: `head_len` bytes to forward as they are written to `out`, then the
    /// real response follows.
    Interim { head_len: usize },
    /// The final response head, written to `out`.
    Final(Answer),
}

/// A final response head, as forwarded.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Answer {
    pub(super) head_len: usize,
    pub(super) status: u16,
    pub(super) framing: Framing,
    /// The upstream connection cannot carry another request after this response.
    pub(super) upstream_closes: bool,
    /// The head sent down says `connection: close`: the client's connection closes after it.
    pub(super) close_down: bool,
}

/// Whether `name` is one of the hop-by-hop headers removed from a response on its way down
/// (RFC 9110 §7.6.1). `Transfer-Encoding`, `TE` and `Trailer` stay: the body is forwarded in the
/// framing they describe, and the framing headers stay even when `Connection` names them.
fn response_hop(name: &str, listed: &[&[u8]]) -> bool {
    is(name, "connection")
        || is(name, "keep-alive")
        || is(name, "proxy-connection")
        || is(name, "upgrade")
        || !is(name, "content-length")
            && !is(name, "transfer-encoding")
            && listed
                .iter()
                .any(|l| l.eq_ignore_ascii_case(name.as_bytes()))
}

/// A response's `Content-Length`: digits, or a list of the same digits (RFC 9110 §8.6).
fn response_length(value: &[u8]) -> Option<u64> {
    let mut values = value
        .split(|&b| b == b',')
        .map(|v| content_length(v.trim_ascii()));
    let first = values.next()??;
    values.all(|v| v == Some(first)).then_some(first)
}

/// Parses the upstream's response head at the front of `buf` and writes the head to send
/// downstream into `out` (cleared first): `HTTP/1.1`, the status and reason as sent, every
/// header but the hop-by-hop ones, and `connection: close` when `close_down` (the client asked
/// for it, or the body runs until the upstream closes). `head_method`: the request was `HEAD`.
pub(super) fn analyse_response(
    buf: &[u8],
    head_method: bool,
    close_down: bool,
    out: &mut Vec<u8>,
) -> Response {
    let mut headers = [httparse::EMPTY_HEADER; MAX_RESPONSE_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n <= MAX_RESPONSE_HEAD_BYTES => n,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_RESPONSE_HEAD_BYTES => {
            return Response::Partial
        }
        Ok(_) => return Response::Refused(HeadRefused::TooLarge),
        Err(httparse::Error::TooManyHeaders) => {
            return Response::Refused(HeadRefused::TooManyHeaders)
        }
        Err(err) => return Response::Invalid(format!("invalid HTTP response head: {err}")),
    };
    let (Some(version), Some(status)) = (resp.version, resp.code) else {
        return Response::Invalid("invalid HTTP response head".into());
    };
    if status == 101 {
        return Response::Invalid("the upstream switched protocols unasked (101)".into());
    }
    if status < 100 {
        return Response::Invalid(format!("invalid HTTP status code {status:03}"));
    }
    let mut listed: Vec<&[u8]> = Vec::new();
    let mut keep_alive = version == 1;
    let (mut length, mut chunked, mut encoded) = (None, false, false);
    for h in resp.headers.iter() {
        if is(h.name, "connection") {
            for option in options(h.value) {
                if option.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if option.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                } else {
                    listed.push(option);
                }
            }
        } else if is(h.name, "transfer-encoding") {
            encoded = true;
            // The last coding decides (RFC 9112 §6.3): chunked, or the body runs to the close.
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if is(h.name, "content-length") {
            match (response_length(h.value), length) {
                (Some(n), None) => length = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => return Response::Invalid("invalid content-length in the response".into()),
            }
        }
    }
    let informational = (100..200).contains(&status);
    let framing = if informational || head_method || status == 204 || status == 304 {
        Framing::Empty
    } else if encoded && chunked {
        Framing::Chunked(Chunks::default())
    } else if encoded {
        Framing::UntilClose
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    let until_close = framing == Framing::UntilClose;
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(itoa3(status).as_slice());
    out.push(b' ');
    out.extend_from_slice(resp.reason.unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    let mut wrote_length = false;
    for h in resp.headers.iter() {
        if response_hop(h.name, &listed) {
            continue;
        }
        if is(h.name, "content-length") {
            // With a transfer coding, or repeated: one `Content-Length` at most, none with one.
            if encoded || wrote_length {
                continue;
            }
            wrote_length = true;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    if !informational && (close_down || until_close) {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if informational {
        return Response::Interim { head_len };
    }
    Response::Final(Answer {
        head_len,
        status,
        framing,
        upstream_closes: !keep_alive || until_close,
        close_down: close_down || until_close,
    })
}

/// A status code's three digits.
fn itoa3(status: u16) -> [u8; 3] {
    let s = status.min(999);
    [
        b'0' + (s / 100) as u8,
        b'0' + (s / 10 % 10) as u8,
        b'0' + (s % 10) as u8,
    ]
}

/// Where a chunked body is (RFC 9112 §7.1), fed the bytes as they come; they are forwarded
/// unchanged, so only the end of the message and the data's length are worked out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Chunks {
    state: ChunkState,
    /// The chunk size being read.
    size: u64,
    /// Hex digits of it so far.
    digits: u8,
    /// Bytes of the current size line's extension or trailer line, bounded.
    line: usize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    Extension,
    SizeLf,
    Data(u64),
    DataCr,
    DataLf,
    TrailerStart,
    Trailer,
    TrailerLf,
    EndLf,
    Done,
}

/// What [`Chunks::feed`] found in a slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fed {
    /// Bytes of the slice that belong to the message (all of it, unless it ended or turned out
    /// malformed inside).
    pub(super) used: usize,
    /// Chunk data bytes among them.
    pub(super) data: u64,
    /// Whether the message ended; an error: how it is malformed after `used` bytes.
    pub(super) outcome: Result<bool, &'static str>,
}

/// The longest chunk extension or trailer line accepted.
const MAX_LINE: usize = 16 * 1024;

impl Chunks {
    /// Feeds `bytes`: how many belong to the message, and whether it ended or is malformed.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> Fed {
        let mut data = 0;
        let mut i = 0;
        let outcome = loop {
            if self.state == ChunkState::Done {
                break Ok(true);
            }
            let Some(&b) = bytes.get(i) else {
                break Ok(false);
            };
            if let ChunkState::Data(left) = self.state {
                let take = left.min((bytes.len() - i) as u64);
                data += take;
                i += take as usize;
                self.state = if take == left {
                    ChunkState::DataCr
                } else {
                    ChunkState::Data(left - take)
                };
                continue;
            }
            if let Err(why) = self.step(b) {
                break Err(why);
            }
            i += 1;
        };
        Fed {
            used: i,
            data,
            outcome,
        }
    }

    /// Moves past one byte of framing (anything but chunk data).
    fn step(&mut self, b: u8) -> Result<(), &'static str> {
        use ChunkState::*;
        match self.state {
            Size => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    if self.digits == 16 {
                        return Err("chunk size too large");
                    }
                    let d = (b as char).to_digit(16).expect("a hex digit") as u64;
                    self.size = self.size << 4 | d;
                    self.digits += 1;
                }
                b';' | b' ' | b'\t' if self.digits > 0 => {
                    self.state = Extension;
                    self.line = 0;
                }
                b'\r' if self.digits > 0 => self.state = SizeLf,
                _ => return Err("invalid chunk size line"),
            },
            Extension => match b {
                b'\r' => self.state = SizeLf,
                b'\n' => return Err("invalid chunk extension"),
                _ => self.long_line("chunk extension too long")?,
            },
            SizeLf => {
                if b != b'\n' {
                    return Err("invalid chunk size line");
                }
                self.state = if self.size == 0 {
                    TrailerStart
                } else {
                    Data(self.size)
                };
                self.size = 0;
                self.digits = 0;
            }
            DataCr if b == b'\r' => self.state = DataLf,
            DataLf if b == b'\n' => self.state = Size,
            DataCr | DataLf => return Err("chunk data not followed by CRLF"),
            TrailerStart => match b {
                b'\r' => self.state = EndLf,
                b'\n' => return Err("invalid trailer section"),
                _ => {
                    self.state = Trailer;
                    self.line = 1;
                }
            },
            Trailer => match b {
                b'\r' => self.state = TrailerLf,
                b'\n' => return Err("invalid trailer section"),
                _ => self.long_line("trailer line too long")?,
            },
            TrailerLf if b == b'\n' => self.state = TrailerStart,
            EndLf if b == b'\n' => self.state = Done,
            TrailerLf | EndLf => return Err("invalid trailer section"),
            Data(_) | Done => unreachable!("feed handles data and stops at the end"),
        }
        Ok(())
    }

    /// Counts a byte of an extension or trailer line, bounded by [`MAX_LINE`].
    fn long_line(&mut self, why: &'static str) -> Result<(), &'static str> {
        self.line += 1;
        if self.line > MAX_LINE {
            return Err(why);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
