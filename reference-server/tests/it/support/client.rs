//! A small client for leasebroker's API.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

/// A response, fully read.
#[derive(Debug, Clone)]
pub struct Resp {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: HeaderMap,
    /// Raw body.
    pub body: Vec<u8>,
}

impl Resp {
    /// The body as JSON (panics with the body when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// A header as a string.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The problem `type` suffix (`request-in-progress`…), asserting a problem+json body.
    pub fn problem(&self) -> String {
        assert_eq!(
            self.header("content-type").as_deref(),
            Some("application/problem+json"),
            "status {} body {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        let kind = self.json()["type"]
            .as_str()
            .expect("problem has a type")
            .to_owned();
        kind.strip_prefix("https://idemspec.dev/problems/")
            .expect("problem type under the documented base")
            .to_owned()
    }

    /// The `id` of a worker body.
    pub fn id(&self) -> String {
        self.json()["id"]
            .as_str()
            .expect("the body has an id")
            .to_owned()
    }

    /// Whether this is a replay.
    pub fn replayed(&self) -> bool {
        self.header("idempotent-replayed").as_deref() == Some("true")
    }
}

/// A client for one server.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// `http://ADDR` of the public listener.
    pub base: String,
    /// `http://ADDR` of the admin listener.
    pub admin: String,
}

impl Client {
    /// A client for `base` and `admin`.
    pub fn new(base: String, admin: String) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(0)
            .build()
            .expect("build a reqwest client");
        Self { http, base, admin }
    }

    /// A client for `like`'s listeners that sends through `http` (one trusting a test CA, say).
    pub fn with_http(http: reqwest::Client, like: &Client) -> Self {
        Self {
            http,
            base: like.base.clone(),
            admin: like.admin.clone(),
        }
    }

    /// Sends `method path` as `principal` with an optional key and JSON body.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        principal: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Resp {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(principal);
        if let Some(key) = key {
            req = req.header("idempotency-key", key);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        Self::read(req.send().await.expect("send a request")).await
    }

    /// Sends a prepared request builder (for raw bodies and headers).
    pub fn raw(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, format!("{}{path}", self.base))
    }

    /// Reads a response fully.
    pub async fn read(resp: reqwest::Response) -> Resp {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.bytes().await.expect("read a response body").to_vec();
        Resp {
            status,
            headers,
            body,
        }
    }

    /// `POST /v1/workers`.
    pub async fn create(&self, principal: &str, key: Option<&str>, body: &Value) -> Resp {
        self.send(
            reqwest::Method::POST,
            "/v1/workers",
            principal,
            key,
            Some(body),
        )
        .await
    }

    /// `DELETE /v1/workers/{id}`.
    pub async fn delete(&self, principal: &str, id: &str, key: Option<&str>) -> Resp {
        self.send(
            reqwest::Method::DELETE,
            &format!("/v1/workers/{id}"),
            principal,
            key,
            None,
        )
        .await
    }

    /// `POST /v1/workers/{id}/reboot`.
    pub async fn reboot(&self, principal: &str, id: &str, key: Option<&str>) -> Resp {
        self.send(
            reqwest::Method::POST,
            &format!("/v1/workers/{id}/reboot"),
            principal,
            key,
            None,
        )
        .await
    }

    /// `GET /v1/workers/{id}`.
    pub async fn get(&self, principal: &str, id: &str) -> Resp {
        self.send(
            reqwest::Method::GET,
            &format!("/v1/workers/{id}"),
            principal,
            None,
            None,
        )
        .await
    }

    /// `GET /v1/workers` items.
    pub async fn list(&self, principal: &str) -> Vec<Value> {
        let resp = self
            .send(reqwest::Method::GET, "/v1/workers", principal, None, None)
            .await;
        assert_eq!(resp.status, 200);
        resp.json()["items"].as_array().expect("items").clone()
    }

    /// `GET /v1/admin/stats`.
    pub async fn stats(&self) -> Value {
        let resp = self
            .http
            .get(format!("{}/v1/admin/stats", self.admin))
            .send()
            .await
            .expect("get stats");
        assert_eq!(resp.status().as_u16(), 200);
        resp.json().await.expect("stats JSON")
    }

    /// `POST /v1/admin/faults`.
    pub async fn faults(&self, settings: Value) {
        let resp = self
            .http
            .post(format!("{}/v1/admin/faults", self.admin))
            .json(&settings)
            .send()
            .await
            .expect("post faults");
        assert_eq!(resp.status().as_u16(), 204);
    }

    /// Polls stats until `pred` holds (up to 30 s).
    pub async fn wait_stats(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let stats = self.stats().await;
            if pred(&stats) {
                return stats;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}: {stats}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
