//! What the fuzz targets share: one leasebroker in process for the whole run (SQLite in a temporary
//! directory, on 127.0.0.1:0), one exchange over a real socket, and the judge of an answer.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use leasebroker::auth::Auth;
use leasebroker::flaw::Flaws;
use leasebroker::idempotency::IdempotencyConfig;
use leasebroker::server::{start, RunningServer, ServerConfig};
use leasebroker::store::DatabaseUrl;

/// How long one exchange may take: longer is a hang, and a finding.
const EXCHANGE_LIMIT: Duration = Duration::from_secs(20);

/// The server, its runtime and its database directory, alive for the whole process.
struct Server {
    addr: SocketAddr,
    _running: RunningServer,
    _runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let config = ServerConfig {
            listen: "127.0.0.1:0".parse().expect("an address"),
            admin_listen: None,
            database: DatabaseUrl::parse(&dir.path().join("fuzz.db").display().to_string()),
            max_connections: 1,
            auth: Auth::Dev,
            idempotency: IdempotencyConfig {
                retention: Duration::from_secs(3600),
                in_flight_ttl: Duration::from_secs(30),
                require_key_on_post: true,
                require_key_on_delete: false,
                retry_after_secs: 1,
            },
            flaws: Flaws::default(),
            sweep_interval: Duration::from_secs(60),
            // Every body the create target finds valid takes a node; a pool this large outlasts a
            // long run, and an exhausted one is a documented 503, which `judge` accepts.
            pool_size: 200_000,
            boot_latency: Duration::ZERO,
            creates: leasebroker::fleet::CreateMode::Sync,
            header_read_timeout: Duration::from_secs(5),
            body_read_timeout: Duration::from_secs(5),
            tls: None,
        };
        let running = runtime.block_on(start(config)).expect("start leasebroker");
        Server {
            addr: running.addr(),
            _running: running,
            _runtime: runtime,
            _dir: dir,
        }
    })
}

/// Sends `request` on a fresh connection, closes the sending side, and returns everything the
/// server sent until it closed. Panics (a finding) if that takes over [`EXCHANGE_LIMIT`].
pub fn exchange(request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(server().addr).expect("connect to leasebroker");
    stream
        .set_read_timeout(Some(EXCHANGE_LIMIT))
        .expect("a read timeout");
    // The server may answer and close before reading everything: a failed write is not a finding.
    let _ = stream.write_all(request);
    let _ = stream.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    match stream.read_to_end(&mut out) {
        Ok(_) => out,
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => out,
        Err(err) => panic!("no end to the answer within {EXCHANGE_LIMIT:?}: {err}"),
    }
}

/// Judges what the server sent: nothing, or a response whose status is under 500 (except a 503
/// `pool-exhausted`, documented), and which carries an RFC 9457 problem body when it is a 4xx.
pub fn judge(answer: &[u8]) {
    if answer.is_empty() {
        return;
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut head = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(len)) = head.parse(answer) else {
        panic!(
            "not an HTTP response: {:?}",
            String::from_utf8_lossy(answer)
        );
    };
    let status = head.code.expect("a complete head has a status");
    let body = &answer[len..];
    let problem = |name: &str| {
        head.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("content-type") && h.value == b"application/problem+json"
        }) && body.windows(name.len()).any(|w| w == name.as_bytes())
    };
    if status == 503 && problem("pool-exhausted") {
        return;
    }
    assert!(
        status < 500,
        "{status}: {:?}",
        String::from_utf8_lossy(answer)
    );
    if status >= 400 {
        assert!(
            problem("https://idemspec.dev/problems/"),
            "a {status} without a problem body: {:?}",
            String::from_utf8_lossy(answer)
        );
    }
}
