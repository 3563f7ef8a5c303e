//! The canned upstream: an HTTP server on `127.0.0.1:0` that answers every request with the
//! client profile's success (status, headers, body), so a client can be judged without a real
//! API behind it. The proxy in front of it injects the faults.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Response, StatusCode};
use idemspec_scenarios::client_profile::ClientProfile;
use tokio::sync::oneshot;

/// A running canned upstream; stopped on [`CannedUpstream::shutdown`] or drop.
#[derive(Debug)]
pub struct CannedUpstream {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

/// The response every request gets.
#[derive(Debug)]
struct Canned {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: String,
}

impl CannedUpstream {
    /// Starts serving `profile`'s success on `127.0.0.1:0`.
    ///
    /// # Errors
    /// The listener cannot be bound.
    pub async fn start(profile: &ClientProfile) -> std::io::Result<Self> {
        let mut headers: Vec<(HeaderName, HeaderValue)> = profile
            .headers()
            .into_iter()
            // The profile's headers were checked at load; one that still fails is left out.
            .filter_map(|(n, v)| Some((n.parse().ok()?, v.parse().ok()?)))
            .collect();
        if let Ok(value) = profile.content_type().parse() {
            headers.push((axum::http::header::CONTENT_TYPE, value));
        }
        let canned = Arc::new(Canned {
            status: StatusCode::from_u16(profile.status()).unwrap_or(StatusCode::CREATED),
            headers,
            body: profile.body().to_owned(),
        });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let app = axum::Router::new().fallback(move || {
            let canned = canned.clone();
            async move { answer(&canned) }
        });
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            stop: Some(stop),
        })
    }

    /// Its base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops serving (idempotent).
    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for CannedUpstream {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn answer(canned: &Canned) -> Response<Body> {
    let mut response = Response::new(Body::from(canned.body.clone()));
    *response.status_mut() = canned.status;
    for (name, value) in &canned.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    response
}
