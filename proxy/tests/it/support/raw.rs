//! Raw HTTP/1.1 on a socket, for tests that must see (or send) exactly the bytes on the wire: a
//! response reader ([`response_within`], bounded in time; [`response`] and [`expect_response`]
//! on [`PATIENCE`]), a request reader ([`read_request`]) and upstreams built on it
//! ([`scripted`], [`answering`]).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::error::Elapsed;

use super::PATIENCE;

/// Where the head at the front of `bytes` ends (the index of its CRLF CRLF), if it is all there.
pub fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"\r\n\r\n")
}

/// The status code of a response head (`0` if it has none).
pub fn status_of(head: &str) -> u16 {
    head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// The value of the first header named `name` (any case) in `head`, trimmed.
fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The `Content-Length` of a head, if it has one that parses.
pub fn content_length(head: &str) -> Option<usize> {
    header(head, "content-length").and_then(|v| v.parse().ok())
}

/// How [`response_within`] hands back a chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunks {
    /// The chunk data, framing and trailers dropped.
    Decoded,
    /// The body bytes as sent: sizes, extensions, data, the last chunk and trailers.
    AsSent,
}

/// A whole chunked body at the front of `bytes` (trailers, if any, skipped up to the empty
/// line): its data and the bytes it took; `None` while it is incomplete or malformed.
pub fn dechunk(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut at = 0;
    let mut data = Vec::new();
    loop {
        let line_end = bytes[at..].windows(2).position(|w| w == b"\r\n")? + at;
        let line = std::str::from_utf8(&bytes[at..line_end]).ok()?;
        let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
        at = line_end + 2;
        if size == 0 {
            let rest = &bytes[at..];
            if rest.starts_with(b"\r\n") {
                return Some((data, at + 2));
            }
            return Some((data, at + head_end(rest)? + 4));
        }
        if bytes.len() < at + size + 2 {
            return None;
        }
        data.extend_from_slice(&bytes[at..at + size]);
        at += size + 2;
    }
}

/// The response at the front of `bytes`, if it is all there: its head (without the final CRLF
/// CRLF), its body and how many bytes it took. The body is framed as HTTP/1.1 frames it: none
/// for a 1xx (an interim head is a response of its own, its final response the next one), a
/// 204, a 304 or an answer to a `HEAD` (`head_request`); a chunked body whole (trailers
/// included), handed back as `chunks` says; a `Content-Length` body; otherwise everything up
/// to the close, so only once `ended` says the connection has closed.
pub fn split_response(
    bytes: &[u8],
    head_request: bool,
    chunks: Chunks,
    ended: bool,
) -> Option<(String, Vec<u8>, usize)> {
    let end = head_end(bytes)?;
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let status = status_of(&head);
    let start = end + 4;
    if (100..200).contains(&status) || head_request || status == 204 || status == 304 {
        return Some((head, Vec::new(), start));
    }
    let chunked = header(&head, "transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        let (data, used) = dechunk(&bytes[start..])?;
        let body = match chunks {
            Chunks::Decoded => data,
            Chunks::AsSent => bytes[start..start + used].to_vec(),
        };
        return Some((head, body, start + used));
    }
    let end = match content_length(&head) {
        Some(len) => start + len,
        None if ended => bytes.len(),
        None => return None,
    };
    let body = bytes.get(start..end)?.to_vec();
    Some((head, body, end))
}

/// Reads one response from `stream`: `(head, body)`, the head as text without its final CRLF
/// CRLF (a 1xx head comes back on its own, with an empty body; its final response is the next
/// call's), the body as bytes, framed as [`split_response`] frames it (none for 1xx, 204, 304
/// and `HEAD`; chunked with trailers, decoded or as sent; `Content-Length`; close-delimited).
/// `pending` holds what was read before and keeps what is read past the response, for the
/// next call on the same connection.
///
/// Bounded: `Err` if the whole read takes longer than `within`; `Ok(None)` if the connection
/// ends (or fails) before the whole response.
pub async fn response_within(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    head_request: bool,
    chunks: Chunks,
    within: Duration,
) -> Result<Option<(String, Vec<u8>)>, Elapsed> {
    tokio::time::timeout(within, async {
        loop {
            let ended = more_unless(stream, pending, |p| {
                split_response(p, head_request, chunks, false).is_some()
            })
            .await;
            if let Some((head, body, used)) = split_response(pending, head_request, chunks, ended) {
                pending.drain(..used);
                return Some((head, body));
            }
            if ended {
                return None;
            }
        }
    })
    .await
}

/// [`response_within`] [`PATIENCE`], chunked bodies decoded: `None` if the connection ended
/// or stalled before a whole response.
pub async fn response(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    head_request: bool,
) -> Option<(String, Vec<u8>)> {
    response_within(stream, pending, head_request, Chunks::Decoded, PATIENCE)
        .await
        .ok()
        .flatten()
}

/// [`response`] for a test whose connection must deliver one: panics if it does not.
pub async fn expect_response(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    head_request: bool,
) -> (String, Vec<u8>) {
    response(stream, pending, head_request)
        .await
        .expect("a whole response in time")
}

/// Reads more of `stream` onto `pending` unless `enough` already holds of it; `true` once the
/// connection has ended (EOF or an error).
async fn more_unless(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    enough: impl Fn(&[u8]) -> bool,
) -> bool {
    if enough(pending) {
        return false;
    }
    let mut buf = [0u8; 16384];
    match stream.read(&mut buf).await {
        Ok(n) if n > 0 => {
            pending.extend_from_slice(&buf[..n]);
            false
        }
        _ => true,
    }
}

/// Reads until `pending` holds a whole head; where it ends (the index of its CRLF CRLF), or
/// `None` if the connection ends first. Not bounded in time.
pub async fn read_head(stream: &mut TcpStream, pending: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(end) = head_end(pending) {
            return Some(end);
        }
        if more_unless(stream, pending, |_| false).await {
            return None;
        }
    }
}

/// A request as a raw upstream read it: its head (without the final CRLF CRLF) and body.
#[derive(Debug, Clone)]
pub struct RawRequest {
    pub head: String,
    pub body: Vec<u8>,
}

impl RawRequest {
    /// The method, as sent.
    pub fn method(&self) -> &str {
        self.head.split(' ').next().unwrap_or("")
    }

    /// The request-target, as sent.
    pub fn target(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("")
    }
}

/// Reads one request from `stream`: its head, then a `Content-Length` body (none without one);
/// `pending` keeps what was read past it. `None` if the connection ends first. Not bounded in
/// time: upstreams wait for the proxy's next request as long as it keeps the connection.
pub async fn read_request(stream: &mut TcpStream, pending: &mut Vec<u8>) -> Option<RawRequest> {
    let end = read_head(stream, pending).await?;
    let head = String::from_utf8_lossy(&pending[..end]).into_owned();
    let len = content_length(&head).unwrap_or(0);
    while pending.len() < end + 4 + len {
        if more_unless(stream, pending, |_| false).await {
            return None;
        }
    }
    let body = pending[end + 4..end + 4 + len].to_vec();
    pending.drain(..end + 4 + len);
    Some(RawRequest { head, body })
}

/// The requests a raw upstream has read, in order.
pub type Requests = Arc<Mutex<Vec<RawRequest>>>;

/// What a scripted upstream does with each connection it accepts.
pub type Handler = Arc<dyn Fn(TcpStream, Requests) -> BoxFuture<'static, ()> + Send + Sync>;

/// An upstream on a free port that runs `handler` on each connection it accepts.
pub async fn scripted(handler: Handler) -> (SocketAddr, Requests) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Requests::default();
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(handler(stream, s.clone()));
        }
    });
    (addr, seen)
}

/// An upstream that reads each request ([`read_request`]), records it, and writes the bytes
/// `answer` gives for it, keeping the connection; `None` closes the connection at once, and
/// bytes ending in `\0` close it after they are written (the `\0` is not sent).
pub async fn answering<F>(answer: F) -> (SocketAddr, Requests)
where
    F: Fn(&RawRequest) -> Option<Vec<u8>> + Send + Sync + 'static,
{
    answering_after(|_| Duration::ZERO, answer).await
}

/// [`answering`], waiting `pause` for a request before answering it.
pub async fn answering_after<P, F>(pause: P, answer: F) -> (SocketAddr, Requests)
where
    P: Fn(&RawRequest) -> Duration + Send + Sync + 'static,
    F: Fn(&RawRequest) -> Option<Vec<u8>> + Send + Sync + 'static,
{
    let script = Arc::new((pause, answer));
    scripted(Arc::new(move |mut s, seen| {
        let script = script.clone();
        Box::pin(async move {
            let (pause, answer) = &*script;
            let mut pending = Vec::new();
            while let Some(got) = read_request(&mut s, &mut pending).await {
                let wait = pause(&got);
                let reply = answer(&got);
                seen.lock().unwrap().push(got);
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                let Some(mut bytes) = reply else {
                    return;
                };
                let close = bytes.last() == Some(&0);
                if close {
                    bytes.pop();
                }
                if s.write_all(&bytes).await.is_err() || close {
                    return;
                }
            }
        })
    }))
    .await
}
