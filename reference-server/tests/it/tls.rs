//! leasebroker over TLS, on real sockets: HTTPS on the public listener with bearer tokens, client
//! certificates naming principals (the third way beside tokens and `--dev`), a required
//! certificate refused in the handshake, a plain HTTP request to the TLS port, a stalled
//! handshake cut off, the lingering close over TLS, and a flaw that loses the principal judged
//! over mutual TLS.

use std::sync::Arc;

use idemspec_tls::{client_config, server_config_pem, ThrowawayCa, TrustOptions};
use leasebroker::flaw::Flaw;
use reqwest::{Certificate, Identity, Method};
use serde_json::Value;
use tokio::net::TcpStream;

use crate::support::raw::{exchange, exchange_on, request, response};
use crate::support::{worker_body, Client, Db, Options, Resp, TestServer};

/// A throwaway CA that issues the server's certificate and the clients'.
struct Pki {
    ca: ThrowawayCa,
    dir: tempfile::TempDir,
}

/// Whether the server asks for client certificates, and must have one.
#[derive(Clone, Copy, PartialEq)]
enum ClientCerts {
    NotAsked,
    Optional,
    Required,
}

impl Pki {
    fn new() -> Self {
        Self {
            ca: ThrowawayCa::new().expect("a throwaway CA"),
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// The server's configuration: a certificate for 127.0.0.1, client certificates as asked.
    fn server(&self, client_certs: ClientCerts) -> Arc<rustls::ServerConfig> {
        let (cert, key) = self
            .ca
            .server_cert(&["127.0.0.1"])
            .expect("a server certificate");
        let ca = self.ca.ca_pem();
        let client_ca = (client_certs != ClientCerts::NotAsked).then_some(ca.as_str());
        server_config_pem(
            &cert,
            &key,
            client_ca,
            client_certs == ClientCerts::Required,
        )
        .expect("a server configuration")
    }

    /// A reqwest client trusting the CA, showing a certificate with subject `CN=cn` if given.
    fn client(&self, cn: Option<&str>) -> reqwest::Client {
        let root = Certificate::from_pem(self.ca.ca_pem().as_bytes()).expect("the CA as PEM");
        let mut builder = reqwest::Client::builder()
            .add_root_certificate(root)
            .pool_max_idle_per_host(0);
        if let Some(cn) = cn {
            let (cert, key) = self.ca.client_cert(cn).expect("a client certificate");
            let identity = Identity::from_pem(format!("{cert}{key}").as_bytes()).expect("PEM");
            builder = builder.identity(identity);
        }
        builder.build().expect("a reqwest client")
    }

    /// A rustls client configuration trusting the CA, showing no certificate.
    fn rustls_client(&self) -> Arc<rustls::ClientConfig> {
        let trust = TrustOptions {
            ca_file: Some(self.ca.write_ca(self.dir.path()).expect("write the CA")),
            ..TrustOptions::default()
        };
        client_config(&trust, None).expect("a client configuration")
    }
}

async fn https_server(pki: &Pki, client_certs: ClientCerts, flaws: Vec<Flaw>) -> (Db, TestServer) {
    let db = Db::sqlite();
    let opts = Options {
        tls: Some(pki.server(client_certs)),
        flaws,
        ..Options::default()
    };
    let server = TestServer::start(&db, opts).await;
    (db, server)
}

/// `method path` on `base` through `http`, with no bearer token (a certificate, if any, names the
/// principal), an Idempotency-Key when given, and a JSON body for a `POST`.
async fn as_certified(
    http: &reqwest::Client,
    base: &str,
    method: Method,
    path: &str,
    key: Option<&str>,
) -> reqwest::Result<Resp> {
    let mut req = http.request(method.clone(), format!("{base}{path}"));
    if let Some(key) = key {
        req = req.header("idempotency-key", key);
    }
    if method == Method::POST {
        req = req.json(&worker_body("ubuntu"));
    }
    Ok(Client::read(req.send().await?).await)
}

/// The ids of the workers `http` lists.
async fn listed(http: &reqwest::Client, base: &str) -> Vec<Value> {
    let resp = as_certified(http, base, Method::GET, "/v1/workers", None)
        .await
        .expect("list workers");
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    let items = resp.json()["items"].as_array().expect("items").clone();
    items.iter().map(|w| w["id"].clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_serves_bearer_tokens_and_answers_plain_http_with_a_problem() {
    let pki = Pki::new();
    let (_db, s) = https_server(&pki, ClientCerts::NotAsked, Vec::new()).await;
    assert!(s.client.base.starts_with("https://"), "{}", s.client.base);
    let client = Client::with_http(pki.client(None), &s.client);
    let first = client
        .create("alice", Some("k1"), &worker_body("ubuntu"))
        .await;
    assert_eq!(
        first.status,
        201,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    let again = client
        .create("alice", Some("k1"), &worker_body("ubuntu"))
        .await;
    assert!(again.replayed(), "a same-key retry over TLS is a replay");
    assert_eq!(again.id(), first.id());
    let plain = request(
        &[
            "GET /v1/workers HTTP/1.1",
            "host: lb",
            "authorization: Bearer alice",
        ],
        b"",
    );
    let read = exchange(s.addr(), &plain).await.expect("a plain answer");
    let answer = response(&read, "GET");
    assert_eq!(answer.status, 400);
    assert_eq!(answer.problem(), "plain-http-to-tls-port");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_name_principals() {
    let pki = Pki::new();
    let (_db, s) = https_server(&pki, ClientCerts::Optional, Vec::new()).await;
    let base = s.client.base.clone();
    let (alice, bob) = (pki.client(Some("alice")), pki.client(Some("bob")));
    let post = async |http: &reqwest::Client| {
        as_certified(http, &base, Method::POST, "/v1/workers", Some("same-key")).await
    };
    let a = post(&alice).await.expect("alice's create");
    let b = post(&bob).await.expect("bob's create");
    assert_eq!(
        (a.status, b.status),
        (201, 201),
        "{:?}",
        String::from_utf8_lossy(&b.body)
    );
    assert!(
        !b.replayed(),
        "bob's certificate is another principal: no replay of alice's"
    );
    assert_ne!(a.id(), b.id());
    assert_eq!(listed(&alice, &base).await, vec![Value::from(a.id())]);
    assert_eq!(listed(&bob, &base).await, vec![Value::from(b.id())]);
    // A bearer token still names a principal (here `--dev`: the token itself); a certificate
    // with a token is the token's principal.
    let token = Client::with_http(pki.client(Some("alice")), &s.client);
    assert_eq!(token.list("carol").await.len(), 0);
    assert_eq!(token.list("alice").await.len(), 1);
    // Neither a token nor a certificate: 401, as without TLS.
    let nobody = as_certified(&pki.client(None), &base, Method::GET, "/v1/workers", None)
        .await
        .expect("an answer");
    assert_eq!(nobody.status, 401);
    assert_eq!(nobody.problem(), "unauthorized");
    // A certificate of another CA is refused in the handshake.
    let stranger = Pki::new();
    let foreign = reqwest::Client::builder()
        .add_root_certificate(Certificate::from_pem(pki.ca.ca_pem().as_bytes()).expect("PEM"))
        .identity({
            let (cert, key) = stranger.ca.client_cert("alice").expect("a certificate");
            Identity::from_pem(format!("{cert}{key}").as_bytes()).expect("PEM")
        })
        .build()
        .expect("a client");
    let refused = as_certified(&foreign, &base, Method::GET, "/v1/workers", None).await;
    assert!(
        refused.is_err(),
        "a certificate of an unknown CA was accepted: {refused:?}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_certificate_refuses_a_client_without_one() {
    let pki = Pki::new();
    let (_db, s) = https_server(&pki, ClientCerts::Required, Vec::new()).await;
    let base = s.client.base.clone();
    let alice = pki.client(Some("alice"));
    let with = as_certified(&alice, &base, Method::GET, "/v1/workers", None).await;
    assert_eq!(with.expect("an answer").status, 200);
    let without = as_certified(&pki.client(None), &base, Method::GET, "/v1/workers", None).await;
    assert!(
        without.is_err(),
        "served without a certificate: {without:?}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_keyspace_leaks_across_certified_principals() {
    let pki = Pki::new();
    let (_db, s) = https_server(&pki, ClientCerts::Required, vec![Flaw::GlobalKeyspace]).await;
    let base = s.client.base.clone();
    let post = |cn: &str| {
        let http = pki.client(Some(cn));
        let base = base.clone();
        async move {
            as_certified(&http, &base, Method::POST, "/v1/workers", Some("shared"))
                .await
                .expect("a create")
        }
    };
    let a = post("alice").await;
    let b = post("bob").await;
    assert_eq!(a.status, 201);
    assert!(b.replayed(), "the flaw replays alice's answer to bob");
    assert_eq!(a.id(), b.id());
    s.stop().await;
}

/// A client that begins a handshake and stalls holds its connection no longer than the header
/// read timeout (the handshake is bounded by it), and gets no answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_handshake_is_cut_off_at_the_header_read_timeout() {
    let pki = Pki::new();
    let db = Db::sqlite();
    let opts = Options {
        tls: Some(pki.server(ClientCerts::NotAsked)),
        header_read_timeout: std::time::Duration::from_millis(300),
        ..Options::default()
    };
    let s = TestServer::start(&db, opts).await;
    // The first bytes of a TLS handshake record, then nothing more.
    let read = exchange(s.addr(), &[0x16, 0x03, 0x01]).await;
    assert!(
        read.map_or(true, |bytes| bytes.is_empty()),
        "an answer to half a handshake"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_answer_over_tls_reaches_a_client_still_sending() {
    let pki = Pki::new();
    let (_db, s) = https_server(&pki, ClientCerts::Optional, Vec::new()).await;
    // No token, no certificate: 401 before the 2 MiB body is read, which the client sends whole
    // before it reads.
    let body = vec![b'x'; 2 * 1024 * 1024];
    let head = [
        "POST /v1/workers HTTP/1.1",
        "host: lb",
        "content-type: application/json",
    ];
    for attempt in 1..=5 {
        let tcp = TcpStream::connect(s.addr()).await.expect("connect");
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("a name");
        let tls = tokio_rustls::TlsConnector::from(pki.rustls_client())
            .connect(name, tcp)
            .await
            .expect("a handshake");
        let read = exchange_on(tls, &request(&head, &body))
            .await
            .unwrap_or_else(|err| panic!("attempt {attempt}: the answer was lost: {err}"));
        assert_eq!(response(&read, "POST").problem(), "unauthorized");
    }
    s.stop().await;
}
