//! A TLS server on 127.0.0.1:0 that answers every request with the peer certificate's subject,
//! and the files a client is configured from.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use idemspec_tls::rustls::ServerConfig;
use idemspec_tls::tokio_rustls::TlsAcceptor;
use idemspec_tls::{HandshakeFacts, IdentityFiles, ThrowawayCa, TrustOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves TLS with `config` until the test ends: each connection reads a request's first bytes
/// and answers 200 with the client certificate's subject (empty without one).
pub async fn serve(config: Arc<ServerConfig>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = TlsAcceptor::from(config);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = [0u8; 1024];
                if tls.read(&mut buf).await.unwrap_or(0) == 0 {
                    return;
                }
                let subject = HandshakeFacts::of(tls.get_ref().1).subject;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{subject}",
                    subject.len()
                );
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    addr
}

/// A throwaway CA written to a temporary directory, kept as long as the value lives.
pub struct Pki {
    pub ca: ThrowawayCa,
    pub dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Self {
        let ca = ThrowawayCa::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        ca.write_ca(dir.path()).unwrap();
        Self { ca, dir }
    }

    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Trust in this CA (besides the platform's roots).
    pub fn trust(&self) -> TrustOptions {
        TrustOptions {
            ca_file: Some(self.ca_file()),
            ..TrustOptions::default()
        }
    }

    /// A client certificate `CN=name` of this CA, written as files.
    pub fn client(&self, name: &str) -> IdentityFiles {
        let pair = self.ca.client_cert(name).unwrap();
        idemspec_tls::write_identity(self.dir.path(), name, &pair).unwrap()
    }

    /// A server config for `localhost` and `127.0.0.1`.
    pub fn server(&self) -> Arc<ServerConfig> {
        let (cert, key) = self.ca.server_cert(&["localhost", "127.0.0.1"]).unwrap();
        idemspec_tls::server_config_pem(&cert, &key, None, false).unwrap()
    }
}

/// One request over TLS to `addr` (checked as `localhost`): the answer, head and body.
pub async fn fetch(
    addr: SocketAddr,
    config: Arc<idemspec_tls::rustls::ClientConfig>,
) -> std::io::Result<String> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = idemspec_tls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let connector = idemspec_tls::tokio_rustls::TlsConnector::from(config);
    let mut tls = connector.connect(name, tcp).await?;
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut answer = String::new();
    tls.read_to_string(&mut answer).await?;
    Ok(answer)
}
