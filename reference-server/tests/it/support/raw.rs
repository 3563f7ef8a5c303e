//! Raw HTTP/1.1 over a plain TCP socket (or a TLS stream), for what an HTTP library would not send or would read
//! differently: malformed requests, a client that writes its whole body before it reads, pipelining.

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Resp;

/// How long one exchange may take before the test fails (generous: CI machines are loaded).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

/// Connects to `addr`, writes all of `request` (as a client that reads nothing before it has sent its
/// whole body), then reads until the server closes. Returns the bytes read, or the first I/O error
/// (a broken pipe while writing, a reset while reading).
pub async fn exchange(addr: SocketAddr, request: &[u8]) -> std::io::Result<Vec<u8>> {
    exchange_on(TcpStream::connect(addr).await?, request).await
}

/// [`exchange`] on a connected `stream` (a TLS stream, say).
pub async fn exchange_on<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    request: &[u8],
) -> std::io::Result<Vec<u8>> {
    let work = async {
        stream.write_all(request).await?;
        let mut out = Vec::new();
        stream.read_to_end(&mut out).await?;
        Ok(out)
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, work)
        .await
        .unwrap_or_else(|_| panic!("no answer within {EXCHANGE_TIMEOUT:?}"))
}

/// Reads from `stream` until one whole response to a request with `method` has arrived (the
/// connection may stay open after it). Panics if it does not within the exchange timeout.
pub async fn read_response(stream: &mut TcpStream, method: &str) -> Resp {
    let work = async {
        let mut read = Vec::new();
        let mut buf = [0_u8; 4096];
        loop {
            if let Ok([one]) = parse_responses(&read, &[method]).as_deref() {
                return one.clone();
            }
            let n = stream.read(&mut buf).await.expect("read a response");
            assert!(
                n > 0,
                "the connection closed after {:?}",
                String::from_utf8_lossy(&read)
            );
            read.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, work)
        .await
        .unwrap_or_else(|_| panic!("no response within {EXCHANGE_TIMEOUT:?}"))
}

/// The responses in `bytes`, in order: a head, then a `Content-Length` body, except after a request
/// whose method in `methods` (one per request, in order) is `HEAD` and for a 1xx, 204 or 304, which
/// have no body. An error says what in `bytes` is not a sequence of whole responses.
pub fn parse_responses(bytes: &[u8], methods: &[&str]) -> Result<Vec<Resp>, String> {
    let mut rest = bytes;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut head = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(head_len)) = head.parse(rest) else {
            return Err(format!(
                "not a whole response head: {:?}",
                String::from_utf8_lossy(&rest[..rest.len().min(300)])
            ));
        };
        let status = head.code.ok_or("a complete head without a status")?;
        let mut map = HeaderMap::new();
        for h in head.headers.iter() {
            let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|e| e.to_string())?;
            let value = HeaderValue::from_bytes(h.value).map_err(|e| e.to_string())?;
            map.append(name, value);
        }
        let bodiless =
            methods.get(out.len()) == Some(&"HEAD") || matches!(status, 100..=199 | 204 | 304);
        let len = if bodiless {
            0
        } else {
            map.get("content-length")
                .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
                .ok_or_else(|| format!("a {status} without a Content-Length"))?
        };
        let body = rest
            .get(head_len..head_len + len)
            .ok_or_else(|| format!("a {status} whose body is cut short"))?
            .to_vec();
        rest = &rest[head_len + len..];
        out.push(Resp {
            status,
            headers: map,
            body,
        });
    }
    Ok(out)
}

/// [`parse_responses`], panicking on an error.
pub fn responses(bytes: &[u8], methods: &[&str]) -> Vec<Resp> {
    parse_responses(bytes, methods).unwrap_or_else(|err| panic!("{err}"))
}

/// The one response in `bytes` to one request with `method`.
pub fn response(bytes: &[u8], method: &str) -> Resp {
    let mut all = responses(bytes, &[method]);
    assert_eq!(all.len(), 1, "one response expected");
    all.remove(0)
}

/// A request with `head_lines` (request line, then header lines, no CRLFs) and `body`, with a
/// `Content-Length` for the body.
pub fn request(head_lines: &[&str], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in head_lines {
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// Alice's `POST /v1/workers` with `key` and the [`super::worker_body`] of `image`.
pub fn create_request(key: &str, image: &str) -> Vec<u8> {
    let body = serde_json::to_vec(&super::worker_body(image)).expect("serialise");
    let key = format!("idempotency-key: {key}");
    request(
        &[
            "POST /v1/workers HTTP/1.1",
            "host: lb",
            "authorization: Bearer alice",
            &key,
            "content-type: application/json",
        ],
        &body,
    )
}
