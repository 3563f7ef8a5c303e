//! The canned upstream: an HTTP server on `127.0.0.1:0` that answers a request one of the client
//! profile's `routes` matches with that route's answer, and every other request with the
//! profile's success (status, headers, body), so a client can be judged without a real API behind
//! it. The proxy in front of it injects the faults.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Response, StatusCode, Uri};
use idemspec_scenarios::client_profile::{ClientProfile, OperationMatch};
use tokio::sync::oneshot;

/// A running canned upstream; stopped on [`CannedUpstream::shutdown`] or drop.
#[derive(Debug)]
pub struct CannedUpstream {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

/// A response the canned upstream gives.
#[derive(Debug)]
struct Canned {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: String,
}

impl Canned {
    /// `status`, `headers` (those that fail to parse, already refused at load, left out) and
    /// `body` of type `content_type`.
    fn new(status: u16, headers: Vec<(String, String)>, content_type: &str, body: &str) -> Self {
        let mut headers: Vec<(HeaderName, HeaderValue)> = headers
            .into_iter()
            .filter_map(|(n, v)| Some((n.parse().ok()?, v.parse().ok()?)))
            .collect();
        if let Ok(value) = content_type.parse() {
            headers.push((axum::http::header::CONTENT_TYPE, value));
        }
        Self {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::CREATED),
            headers,
            body: body.to_owned(),
        }
    }
}

/// The routes in order, then the success.
#[derive(Debug)]
struct Answers {
    routes: Vec<(OperationMatch, Canned)>,
    success: Canned,
}

impl Answers {
    fn of(&self, method: &Method, uri: &Uri) -> &Canned {
        let target = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str());
        self.routes
            .iter()
            .find(|(request, _)| super::attempt::is_operation(request, method.as_str(), target))
            .map_or(&self.success, |(_, canned)| canned)
    }
}

impl CannedUpstream {
    /// Starts serving `profile`'s routes and success on `127.0.0.1:0`.
    ///
    /// # Errors
    /// The listener cannot be bound.
    pub async fn start(profile: &ClientProfile) -> std::io::Result<Self> {
        let answers = Arc::new(Answers {
            routes: profile
                .routes
                .iter()
                .map(|r| {
                    let r = &r.value;
                    let headers = r.headers.clone().into_iter().collect();
                    let canned = Canned::new(r.status(), headers, r.content_type(), r.body());
                    (r.request(), canned)
                })
                .collect(),
            success: Canned::new(
                profile.status(),
                profile.headers(),
                profile.content_type(),
                profile.body(),
            ),
        });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let app = axum::Router::new().fallback(move |method: Method, uri: Uri| {
            let answers = answers.clone();
            async move { answer(answers.of(&method, &uri)) }
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
