//! Clients: reqwest for ordinary exchanges, raw sockets to see exactly what a fault sent.

use std::io::ErrorKind;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::PATIENCE;

pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .expect("client builds")
}

/// A client that gives up after `ms` milliseconds, as a timing-out caller would.
pub fn impatient(ms: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_millis(ms))
        .build()
        .expect("client builds")
}

/// What a raw client received before the connection ended.
#[derive(Debug)]
pub struct Raw {
    pub bytes: Vec<u8>,
    /// The read error that ended the connection (`ConnectionReset`), or `None` for a clean EOF.
    pub error: Option<ErrorKind>,
}

impl Raw {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// The bytes after the response head.
    pub fn body(&self) -> &[u8] {
        let at = super::head_end(&self.bytes).expect("a response head");
        &self.bytes[at + 4..]
    }
}

/// Sends `request` verbatim on a fresh connection and reads until the proxy ends it.
pub async fn raw(addr: SocketAddr, request: &[u8]) -> Raw {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write request");
    read_to_end(&mut stream).await
}

/// Reads until EOF or an error, bounded by PATIENCE.
pub async fn read_to_end(stream: &mut TcpStream) -> Raw {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    let error = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) => return None,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
                Err(e) => return Some(e.kind()),
            }
        }
    })
    .await
    .expect("the proxy ends the connection in time");
    Raw { bytes, error }
}

/// A minimal `POST` with a small JSON body and extra header lines, `Connection: close`.
pub fn post(path: &str, extra_headers: &str) -> Vec<u8> {
    let body = r#"{"a":1}"#;
    format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra_headers}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
