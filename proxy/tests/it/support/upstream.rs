//! A small real upstream: records every request it receives and answers by path.
//!
//! - `/echo`: the request body back, byte for byte.
//! - `/stream/N`: N bytes of [`pattern`], streamed chunked in 64 KiB pieces.
//! - `/slow/MS`: waits MS milliseconds, then answers as below.
//! - `/status/N`: answers status N with the JSON below.
//! - anything else: `200` JSON `{"n": <1-based count of requests seen>, "path": …}`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;

/// What the upstream saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A running counting upstream.
#[derive(Clone)]
pub struct Upstream {
    pub addr: SocketAddr,
    state: Arc<State_>,
}

/// What the upstream records: requests as they arrive, and how many handlers ran to the end.
#[derive(Default)]
struct State_ {
    seen: Mutex<Vec<Seen>>,
    completed: std::sync::atomic::AtomicUsize,
}

/// Deterministic test bytes: position `i` holds `i % 251` (a prime, so chunk boundaries show).
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

impl Upstream {
    pub async fn start() -> Self {
        // A queue for 1024 connections, as the proxy's: with `bind`'s 128, a test that opens
        // 200 at once waits out a SYN retransmission (1 s).
        let socket = tokio::net::TcpSocket::new_v4().expect("upstream socket");
        socket
            .bind("127.0.0.1:0".parse().unwrap())
            .expect("bind upstream");
        let listener = socket.listen(1024).expect("listen");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State_::default());
        let app = Router::new().fallback(handle).with_state(state.clone());
        tokio::spawn(async move {
            axum::serve(listener, app).await.expect("upstream serves");
        });
        Self { addr, state }
    }

    /// The same upstream over TLS with `config`; each request gains the header
    /// `x-peer-certificate` (set by this upstream): the subject of the client certificate its
    /// connection showed, empty for none.
    pub async fn start_tls(config: Arc<idemspec_tls::rustls::ServerConfig>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind upstream");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State_::default());
        let app = Router::new().fallback(handle).with_state(state.clone());
        let acceptor = idemspec_tls::tokio_rustls::TlsAcceptor::from(config);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(serve_tls(acceptor.clone(), tcp, app.clone()));
            }
        });
        Self { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL of an upstream started with [`Upstream::start_tls`] (its certificate names
    /// `localhost`).
    pub fn https_url(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    /// How many requests arrived (completely, body included).
    pub fn count(&self) -> usize {
        self.state.seen.lock().unwrap().len()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// How many handlers ran to the end (a handler cancelled half-way does not count).
    pub fn completed(&self) -> usize {
        self.state
            .completed
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// One TLS connection of [`Upstream::start_tls`], served by `app`.
async fn serve_tls(
    acceptor: idemspec_tls::tokio_rustls::TlsAcceptor,
    tcp: tokio::net::TcpStream,
    app: Router,
) {
    use tower::ServiceExt;
    let Ok(tls) = acceptor.accept(tcp).await else {
        return;
    };
    let subject = idemspec_tls::HandshakeFacts::of(tls.get_ref().1).subject;
    let peer = axum::http::HeaderValue::from_str(&subject).expect("a subject is a header value");
    let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
        req.headers_mut().insert("x-peer-certificate", peer.clone());
        app.clone().oneshot(req)
    });
    let io = hyper_util::rt::TokioIo::new(tls);
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .await;
}

async fn handle(State(state): State<Arc<State_>>, req: Request) -> Response {
    let resp = respond(&state, req).await;
    state
        .completed
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    resp
}

async fn respond(state: &State_, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(_) => return StatusCode::BAD_REQUEST.into_response(),
    };
    let path = parts.uri.path().to_owned();
    let n = {
        let mut seen = state.seen.lock().unwrap();
        seen.push(Seen {
            method: parts.method.to_string(),
            path: path.clone(),
            headers: parts.headers.clone(),
            body: body.clone(),
        });
        seen.len()
    };
    if path == "/echo" {
        return ([("content-type", "application/octet-stream")], body).into_response();
    }
    if let Some(len) = path.strip_prefix("/stream/") {
        let len: usize = len.parse().expect("/stream/N");
        let data = Bytes::from(pattern(len));
        let chunks: Vec<Result<Bytes, std::io::Error>> = (0..len)
            .step_by(64 * 1024)
            .map(|start| Ok(data.slice(start..(start + 64 * 1024).min(len))))
            .collect();
        return Body::from_stream(futures::stream::iter(chunks)).into_response();
    }
    let status = path
        .strip_prefix("/status/")
        .map(|n| StatusCode::from_u16(n.parse().expect("/status/N")).expect("a status"))
        .unwrap_or(StatusCode::OK);
    if let Some(ms) = path.strip_prefix("/slow/") {
        let ms: u64 = ms.parse().expect("/slow/MS");
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let json = serde_json::json!({"n": n, "path": path});
    (
        status,
        [("content-type", "application/json")],
        json.to_string(),
    )
        .into_response()
}
