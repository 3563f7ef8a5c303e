//! A front that verifies AWS Signature Version 4 on every request before passing it on to the API
//! behind it: a stand-in for an AWS-style endpoint. A request whose signature does not verify
//! (an unknown access key, a wrong secret, a header or body changed on the way, another `Host`)
//! is answered `403` with AWS's `SignatureDoesNotMatch` error body; the `Host` of every request
//! is kept, so a test can see the name the requests arrived under. A request with a bearer token
//! instead is let through while its token is younger than [`TOKEN_LIFETIME`] (from the first
//! request that carried it), else answered `401`. `POST /oauth/token` is an OAuth 2.0 token
//! endpoint for the client-credentials grant of [`CLIENT_BASIC`], its tokens expiring in 2 s.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use idemspec::http_client::{sign_request, RequestSpec};
use idemspec_scenarios::profile::{AwsSigV4, Sign};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The access keys the front knows and their secrets.
pub const KEYS: &[(&str, &str)] = &[
    ("AKIDALPHA", "alpha/Secret+Key0"),
    ("AKIDBETA", "beta/Secret+Key1"),
];

/// The only client the token endpoint knows: `client-a` with secret `grant/Secret+1`, as HTTP
/// Basic carries them (each form-encoded first, RFC 6749 §2.3.1).
pub const CLIENT_BASIC: &str = "Basic Y2xpZW50LWE6Z3JhbnQlMkZTZWNyZXQlMkIx";

/// How long a bearer token is accepted after its first use.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(2);

/// A running front. Dropping it stops it.
pub struct Front {
    addr: std::net::SocketAddr,
    state: Arc<FrontState>,
    task: JoinHandle<()>,
}

struct FrontState {
    upstream: String,
    client: reqwest::Client,
    hosts: Mutex<Vec<String>>,
    /// Each bearer token seen, with its first use.
    tokens: Mutex<Vec<(String, std::time::Instant)>>,
    /// Requests refused for an expired token.
    expired: Mutex<u64>,
}

impl Front {
    /// `http://127.0.0.1:PORT` of the front.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many distinct bearer tokens came, and how many requests were refused for an expired
    /// one.
    pub fn tokens(&self) -> (usize, u64) {
        let seen = self.state.tokens.lock().unwrap().len();
        (seen, *self.state.expired.lock().unwrap())
    }

    /// The `Host` of every request received, in order.
    pub fn hosts(&self) -> Vec<String> {
        self.state.hosts.lock().unwrap().clone()
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a front on `127.0.0.1:0` in front of `upstream` (`http://host:port`).
pub async fn start(upstream: String) -> Front {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = Arc::new(FrontState {
        upstream,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        hosts: Mutex::default(),
        tokens: Mutex::default(),
        expired: Mutex::default(),
    });
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(state.clone());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Front { addr, state, task }
}

async fn handle(
    State(state): State<Arc<FrontState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let host = header(&headers, "host").unwrap_or_default().to_owned();
    state.hosts.lock().unwrap().push(host);
    if uri.path() == "/oauth/token" {
        return grant(&headers, &body);
    }
    if let Some(token) = header(&headers, "authorization").and_then(|a| a.strip_prefix("Bearer ")) {
        if !state.fresh(token) {
            return (StatusCode::UNAUTHORIZED, "{\"error\":\"token expired\"}").into_response();
        }
    } else if let Err(why) = verify(&method, &uri, &headers, &body) {
        let body = format!(
            "<ErrorResponse><Error><Type>Sender</Type><Code>SignatureDoesNotMatch</Code>\
             <Message>{why}</Message></Error></ErrorResponse>"
        );
        return (StatusCode::FORBIDDEN, [("content-type", "text/xml")], body).into_response();
    }
    let mut request = state
        .client
        .request(method, format!("{}{uri}", state.upstream))
        .body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    let Ok(answer) = request.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = answer.status();
    let mut out = HeaderMap::new();
    for (name, value) in answer.headers() {
        if name != "content-length" && name != "transfer-encoding" && name != "connection" {
            out.append(name, value.clone());
        }
    }
    let body = answer.bytes().await.unwrap_or_default();
    (status, out, body).into_response()
}

impl FrontState {
    /// Whether `token` is younger than [`TOKEN_LIFETIME`] since its first use (counting a
    /// refusal).
    fn fresh(&self, token: &str) -> bool {
        let mut tokens = self.tokens.lock().unwrap();
        let first = match tokens.iter().find(|(t, _)| t == token) {
            Some((_, at)) => *at,
            None => {
                tokens.push((token.to_owned(), std::time::Instant::now()));
                return true;
            }
        };
        let fresh = first.elapsed() < TOKEN_LIFETIME;
        if !fresh {
            *self.expired.lock().unwrap() += 1;
        }
        fresh
    }
}

/// The token endpoint: a fresh token for the known client asking `client_credentials`.
fn grant(headers: &HeaderMap, body: &[u8]) -> Response {
    let asks = String::from_utf8_lossy(body).contains("grant_type=client_credentials");
    if header(headers, "authorization") != Some(CLIENT_BASIC) || !asks {
        let refusal = r#"{"error":"invalid_client"}"#;
        return (StatusCode::UNAUTHORIZED, refusal).into_response();
    }
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let token = format!(r#"{{"access_token":"oat-{nanos}","token_type":"Bearer","expires_in":2}}"#);
    ([("content-type", "application/json")], token).into_response()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Recomputes the request's signature from what arrived (its signed headers, its `Host`, its
/// body, the date and scope it names, the secret of its access key) and compares.
fn verify(method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Result<(), String> {
    let auth = header(headers, "authorization").ok_or("no Authorization header")?;
    let fields = auth
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("not AWS4-HMAC-SHA256")?;
    let field = |name: &str| {
        fields
            .split(", ")
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .ok_or(format!("no {name}"))
    };
    let scope: Vec<&str> = field("Credential")?.split('/').collect();
    let [key_id, _, region, service, "aws4_request"] = scope[..] else {
        return Err("a malformed credential scope".into());
    };
    let secret = KEYS
        .iter()
        .find(|(id, _)| *id == key_id)
        .ok_or("an unknown access key")?
        .1;
    let date = header(headers, "x-amz-date").ok_or("no X-Amz-Date")?;
    let signed: Vec<(String, String)> = field("SignedHeaders")?
        .split(';')
        .filter(|n| !matches!(*n, "x-amz-date" | "x-amz-security-token"))
        .map(|n| {
            Ok((
                n.to_owned(),
                header(headers, n)
                    .ok_or("a signed header is missing")?
                    .to_owned(),
            ))
        })
        .collect::<Result<_, &str>>()?;
    let host = header(headers, "host").ok_or("no Host")?;
    let mut spec = RequestSpec {
        step: "verify".into(),
        base_url: String::new(),
        origin: format!("http://{host}"),
        method: method.to_string(),
        path: uri.to_string(),
        principal: String::new(),
        headers: signed,
        key: None,
        body: Some(String::from_utf8_lossy(body).into_owned()),
        timeout: Duration::from_secs(1),
        via_proxy: false,
        sent: None,
    };
    let how = Sign {
        aws_sigv4: AwsSigV4 {
            service: service.into(),
            region: region.into(),
            access_key_id: key_id.into(),
            secret_access_key: secret.into(),
            session_token: header(headers, "x-amz-security-token").map(str::to_owned),
        },
    };
    sign_request(&mut spec, &how, amz_date(date)?)?;
    let expected = spec
        .headers
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.as_str());
    if expected == Some(auth) {
        Ok(())
    } else {
        Err("The request signature we calculated does not match the signature you provided".into())
    }
}

/// `YYYYMMDDTHHMMSSZ` as a time.
fn amz_date(text: &str) -> Result<SystemTime, String> {
    let n = |range: std::ops::Range<usize>| -> Result<i64, String> {
        text.get(range)
            .and_then(|d| d.parse().ok())
            .ok_or(format!("a malformed X-Amz-Date {text}"))
    };
    let (y, m, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(9..11)? * 3600 + n(11..13)? * 60 + n(13..15)?;
    Ok(SystemTime::UNIX_EPOCH
        + Duration::from_secs(u64::try_from(secs).map_err(|e| e.to_string())?))
}
