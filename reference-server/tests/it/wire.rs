//! The connection itself, over raw sockets: what hyper rejects before the application still gets a
//! problem body, a rejection sent before the body was read reaches a client that writes first, and
//! clients that trickle their headers are cut off without holding anything.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

use leasebroker::listener::LINGER_TIME;

use crate::support::raw::{
    create_request, exchange, parse_responses, read_response, request, response, responses,
};
use crate::support::{worker_body, Db, Options, Resp, TestServer};

/// A server on a fresh SQLite file (the connection's handling does not depend on the store); keep
/// the `Db` alive as long as the server.
async fn sqlite_server(opts: Options) -> (Db, TestServer) {
    let db = Db::sqlite();
    let server = TestServer::start(&db, opts).await;
    (db, server)
}

/// Asserts `r` is a `status` problem of type `problem` whose body repeats the status (RFC 9457 §3.1).
fn assert_problem(r: &Resp, status: u16, problem: &str, case: &str) {
    assert_eq!(
        (r.status, r.problem().as_str()),
        (status, problem),
        "{case}"
    );
    assert_eq!(r.json()["status"], status, "{case}");
}

/// RFC 9112 §9.6: a server that closes at once after answering, with request bytes still arriving,
/// makes the client's TCP stack reset the connection, and the reset can erase the response before
/// the client reads it. A client that writes its whole body before reading (Python's `http.client`,
/// most SDKs) then sees a broken pipe or a reset, which it retries as a network failure. Every
/// rejection leasebroker sends before reading the body — over the size limit, no token, no key, no
/// such route — must reach such a client: 2 MiB bodies, 20 times each.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn early_rejections_reach_a_client_that_writes_its_whole_body_first() {
    let (_db, server) = sqlite_server(Options::default()).await;
    let body = vec![b' '; 2 * 1024 * 1024];
    let json = "content-type: application/json";
    let cases: [(&str, &[&str], u16, &str); 4] = [
        (
            "over the size limit",
            &[
                "POST /v1/workers HTTP/1.1",
                "host: lb",
                "authorization: Bearer alice",
                "idempotency-key: big",
                json,
            ],
            413,
            "payload-too-large",
        ),
        (
            "no token",
            &[
                "POST /v1/workers HTTP/1.1",
                "host: lb",
                "idempotency-key: big",
                json,
            ],
            401,
            "unauthorized",
        ),
        (
            "no key",
            &[
                "POST /v1/workers HTTP/1.1",
                "host: lb",
                "authorization: Bearer alice",
                json,
            ],
            400,
            "missing-idempotency-key",
        ),
        (
            "no such route",
            &[
                "POST /v2/nothing HTTP/1.1",
                "host: lb",
                "authorization: Bearer alice",
                json,
            ],
            404,
            "not-found",
        ),
    ];
    for (case, head, status, problem) in cases {
        let bytes = request(head, &body);
        for attempt in 1..=20 {
            let read = exchange(server.addr(), &bytes).await.unwrap_or_else(|err| {
                panic!("{case}, attempt {attempt}: the client could not read the answer: {err}")
            });
            assert_problem(&response(&read, "POST"), status, problem, case);
        }
    }
    assert_eq!(server.client.stats().await["workers"], 0);
    server.stop().await;
}

/// What hyper refuses while parsing a request, before leasebroker's router sees it, answers with the
/// same kind of problem body as every other error: the status hyper chose (400, 414, 431) and a
/// problem type naming it. Each is sent on a fresh connection; the server still serves afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_http_gets_a_problem_body() {
    let (_db, server) = sqlite_server(Options::default()).await;
    let get =
        |extra: &str| format!("GET /healthz HTTP/1.1\r\nhost: lb\r\n{extra}\r\n").into_bytes();
    let long_uri = format!(
        "GET /v1/workers?q={} HTTP/1.1\r\nhost: lb\r\n\r\n",
        "a".repeat(100_000)
    );
    let many_headers: String = (0..500).map(|n| format!("x-h-{n}: v\r\n")).collect();
    let huge_header = format!("x-big: {}\r\n", "v".repeat(420 * 1024));
    let key_with_control =
        b"POST /v1/workers HTTP/1.1\r\nhost: lb\r\nauthorization: Bearer alice\r\n\
        idempotency-key: ab\x01cd\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
            .to_vec();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "a space in a header name",
            get("bad header: x\r\n"),
            400,
            "malformed-request",
        ),
        (
            "a control character in a key",
            key_with_control,
            400,
            "malformed-request",
        ),
        (
            "a control character in a header name",
            get("x-a\x01b: v\r\n"),
            400,
            "malformed-request",
        ),
        (
            "a NUL in the target",
            b"GET /v1/\x00 HTTP/1.1\r\nhost: lb\r\n\r\n".to_vec(),
            400,
            "malformed-request",
        ),
        (
            "a bad method token",
            b"G(T /healthz HTTP/1.1\r\nhost: lb\r\n\r\n".to_vec(),
            400,
            "malformed-request",
        ),
        (
            "an unknown version",
            b"GET /healthz HTTP/7.1\r\nhost: lb\r\n\r\n".to_vec(),
            400,
            "malformed-request",
        ),
        (
            "a bad Content-Length",
            get("content-length: 12a\r\n"),
            400,
            "malformed-request",
        ),
        (
            "two Content-Lengths",
            get("content-length: 1\r\ncontent-length: 2\r\n"),
            400,
            "malformed-request",
        ),
        ("a 100 KB URI", long_uri.into_bytes(), 414, "uri-too-long"),
        (
            "500 headers",
            get(&many_headers),
            431,
            "request-header-fields-too-large",
        ),
        (
            "a 420 KiB header",
            get(&huge_header),
            431,
            "request-header-fields-too-large",
        ),
    ];
    for (case, bytes, status, problem) in cases {
        let read = exchange(server.addr(), &bytes)
            .await
            .unwrap_or_else(|err| panic!("{case}: {err}"));
        let r = response(&read, "GET");
        assert_problem(&r, status, problem, case);
        assert_eq!(r.header("connection").as_deref(), Some("close"), "{case}");
    }
    let alive = server.client.get("alice", "wkr-none").await;
    assert_eq!(alive.status, 404);
    assert_eq!(server.client.stats().await["workers"], 0);
    server.stop().await;
}

/// A malformed request after good ones on one kept-alive connection: the good ones are answered
/// (a 200, a body-less HEAD, a 201 create), then the malformed one gets its problem body. The
/// problem must not be mistaken for, or spliced into, the responses before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_request_after_good_ones_on_one_connection() {
    let (_db, server) = sqlite_server(Options::default()).await;
    let mut bytes =
        b"GET /healthz HTTP/1.1\r\nhost: lb\r\n\r\nHEAD /healthz HTTP/1.1\r\nhost: lb\r\n\r\n"
            .to_vec();
    bytes.extend(create_request("pipelined", "pipelined"));
    bytes.extend_from_slice(b"GET /healthz HTTP/1.1\r\nhost: lb\r\nbad header: x\r\n\r\n");
    let read = exchange(server.addr(), &bytes).await.expect("an answer");
    let all = responses(&read, &["GET", "HEAD", "POST", "GET"]);
    let statuses: Vec<u16> = all.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 200, 201, 400]);
    assert_eq!(all[0].body, b"ok");
    assert!(all[1].body.is_empty());
    assert_eq!(all[2].json()["image"], "pipelined");
    assert_problem(
        &all[3],
        400,
        "malformed-request",
        "after three good requests",
    );
    assert_eq!(server.client.stats().await["workers"], 1);
    server.stop().await;
}

/// The descriptors this process has open (server and clients share it).
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("list /proc/self/fd")
        .count()
}

/// A connection that holds the server's attention: with `trickle`, it sends a request line and then
/// one header byte every 100 ms, forever; without, it sends nothing at all. Returns how long it
/// lived, from before its connect until it read EOF or a reset, or `None` if it was still open after
/// `give_up`.
async fn hold(
    server: std::net::SocketAddr,
    start: Arc<Barrier>,
    give_up: Duration,
    trickle: bool,
) -> Option<Duration> {
    let opened = Instant::now();
    let mut stream = TcpStream::connect(server).await.expect("connect");
    start.wait().await;
    if trickle {
        let _ = stream
            .write_all(b"POST /v1/workers HTTP/1.1\r\nx-slow: ")
            .await;
    }
    let mut byte = [0_u8; 1];
    let cut = async {
        loop {
            tokio::select! {
                // EOF, a reset or a stray byte: the server has given up on this connection.
                _ = stream.read(&mut byte) => return,
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    if trickle && stream.write_all(b"a").await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    tokio::time::timeout(give_up, cut)
        .await
        .ok()
        .map(|()| opened.elapsed())
}

/// 200 connections trickle their headers, plus 20 that send nothing at all, released at one barrier,
/// against a 2 s header read timeout: while they are open, ordinary requests are served (each
/// within the timeout, which a loaded CI machine needs as margin: a create alone takes
/// milliseconds, and one that waited on the slow connections would take until they are cut);
/// each slow connection is closed by the server after about the timeout (not before, not much after);
/// afterwards the process holds no more descriptors than before. Nothing global is raised.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_clients_are_cut_off_without_blocking_others() {
    let timeout = Duration::from_secs(2);
    let opts = Options {
        header_read_timeout: timeout,
        ..Options::default()
    };
    let (_db, server) = sqlite_server(opts).await;
    let before = open_descriptors();
    let (slow, silent) = (200, 20);
    let start = Arc::new(Barrier::new(slow + silent + 1));
    let give_up = timeout * 10;
    let tasks: Vec<_> = (0..slow + silent)
        .map(|n| tokio::spawn(hold(server.addr(), start.clone(), give_up, n < slow)))
        .collect();
    start.wait().await;
    // Served while every slow connection is open and trickling.
    for n in 0..5 {
        let began = Instant::now();
        let r = server
            .client
            .create("alice", Some(&format!("meanwhile-{n}")), &worker_body("u"))
            .await;
        assert_eq!(r.status, 201);
        assert!(
            began.elapsed() < timeout,
            "a create took {:?}",
            began.elapsed()
        );
    }
    for (n, task) in tasks.into_iter().enumerate() {
        let lived = task.await.expect("slow client task");
        let lived = lived.unwrap_or_else(|| panic!("connection {n} still open after {give_up:?}"));
        assert!(
            lived >= timeout && lived < timeout * 5,
            "connection {n} was closed after {lived:?}, timeout {timeout:?}"
        );
    }
    let after = open_descriptors();
    assert!(
        after <= before + 5,
        "descriptors: {before} before, {after} after"
    );
    server.stop().await;
}

/// 20 creates, released at one barrier, each sending its head at once and then its 1000-byte body
/// one byte every 100 ms, against a 1 s body read timeout: each gets 408 `request-timeout` (a
/// problem) after about the timeout and the connection closes; nothing was claimed or created.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_bodies_get_408_and_write_nothing() {
    let timeout = Duration::from_secs(1);
    let opts = Options {
        body_read_timeout: timeout,
        ..Options::default()
    };
    let (_db, server) = sqlite_server(opts).await;
    let start = Arc::new(Barrier::new(20));
    let tasks: Vec<_> = (0..20)
        .map(|n| {
            let (addr, start) = (server.addr(), start.clone());
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.expect("connect");
                let head = format!(
                    "POST /v1/workers HTTP/1.1\r\nhost: lb\r\nauthorization: Bearer alice\r\n\
                     idempotency-key: slow-{n}\r\ncontent-type: application/json\r\n\
                     content-length: 1000\r\n\r\n"
                );
                start.wait().await;
                let sent = Instant::now();
                stream
                    .write_all(head.as_bytes())
                    .await
                    .expect("send the head");
                let (mut reader, mut writer) = stream.split();
                let trickle = async {
                    loop {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        if writer.write_all(b" ").await.is_err() {
                            break;
                        }
                    }
                };
                // Until one whole response has arrived (the server then lingers, bounded, while
                // the body goes on trickling), then until the server closes.
                let mut read = Vec::new();
                let mut answered = None;
                let answer = async {
                    let mut buf = [0_u8; 4096];
                    loop {
                        match reader.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => read.extend_from_slice(&buf[..n]),
                        }
                        if answered.is_none() && parse_responses(&read, &["POST"]).is_ok() {
                            answered = Some(sent.elapsed());
                        }
                    }
                };
                let _ = tokio::time::timeout(timeout * 20, async {
                    tokio::select! { _ = trickle => {}, _ = answer => {} }
                })
                .await;
                (answered, sent.elapsed(), read)
            })
        })
        .collect();
    for task in tasks {
        let (answered, closed, read) = task.await.expect("slow body task");
        let r = response(&read, "POST");
        assert_problem(&r, 408, "request-timeout", "a slow body");
        assert_eq!(r.header("connection").as_deref(), Some("close"));
        let answered = answered.expect("an answer");
        assert!(
            answered >= timeout && answered < timeout * 5,
            "answered after {answered:?}"
        );
        let bound = timeout + LINGER_TIME + Duration::from_secs(3);
        assert!(closed < bound, "closed after {closed:?}");
    }
    let stats = server.client.stats().await;
    assert_eq!(stats["workers"], 0, "{stats}");
    assert_eq!(stats["idempotency_records"]["in_flight"], 0, "{stats}");
    server.stop().await;
}

/// `Expect: 100-continue` (curl sends it for large bodies): hyper's interim `100 Continue` goes out
/// untouched when the handler starts reading, and the create's 201 follows on the same connection;
/// a body declared over the limit gets its 413 problem at once, with no `100 Continue` and no body
/// ever sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expect_continue_is_answered_in_order() {
    let (_db, server) = sqlite_server(Options::default()).await;
    let body = serde_json::to_vec(&worker_body("continued")).expect("serialise");
    let head = |key: &str, len: usize| {
        format!(
            "POST /v1/workers HTTP/1.1\r\nhost: lb\r\nauthorization: Bearer alice\r\n\
             idempotency-key: {key}\r\ncontent-type: application/json\r\n\
             expect: 100-continue\r\ncontent-length: {len}\r\n\r\n"
        )
    };
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    stream
        .write_all(head("continued", body.len()).as_bytes())
        .await
        .expect("send the head");
    let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
    let mut got = vec![0_u8; interim.len()];
    stream
        .read_exact(&mut got)
        .await
        .expect("read 100 Continue");
    assert_eq!(got, interim);
    stream.write_all(&body).await.expect("send the body");
    let created = read_response(&mut stream, "POST").await;
    assert_eq!(created.status, 201);
    assert_eq!(created.json()["image"], "continued");

    let too_large = head("too-large", 2 * 1024 * 1024);
    let read = exchange(server.addr(), too_large.as_bytes())
        .await
        .expect("an answer");
    assert_problem(
        &response(&read, "POST"),
        413,
        "payload-too-large",
        "declared too large",
    );
    assert_eq!(server.client.stats().await["workers"], 1);
    server.stop().await;
}

/// A client that closes its sending side once its request is sent (a half-close: `nc -N`, scripts
/// calling `shutdown(SHUT_WR)`, some proxies) still gets the answer: a create's 201 and a GET's 200.
/// Dropping the answer at the client's end of stream would be a lost response made by the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_half_closed_client_still_gets_its_answer() {
    let (_db, server) = sqlite_server(Options::default()).await;
    let create = create_request("half-closed", "half-closed");
    for (bytes, method, status) in [
        (create, "POST", 201),
        (
            b"GET /healthz HTTP/1.1\r\nhost: lb\r\n\r\n".to_vec(),
            "GET",
            200,
        ),
    ] {
        let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
        stream.write_all(&bytes).await.expect("send the request");
        stream.shutdown().await.expect("half-close");
        let mut read = Vec::new();
        stream
            .read_to_end(&mut read)
            .await
            .expect("read the answer");
        assert_eq!(
            responses(&read, &[method]).first().map(|r| r.status),
            Some(status),
            "{method}"
        );
    }
    assert_eq!(server.client.stats().await["workers"], 1);
    server.stop().await;
}
