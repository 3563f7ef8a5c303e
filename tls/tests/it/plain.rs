//! TLS and plain HTTP crossed: a handshake to a plain-HTTP port, plain HTTP's answer from a TLS
//! port.

use idemspec_tls::{client_config, explain_plain_answer, probe};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{serve, Pki};

#[tokio::test]
async fn a_handshake_to_a_plain_http_port_says_use_http() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 1024];
        let _ = tcp.read(&mut buf).await;
        let answer = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let _ = tcp.write_all(answer.as_bytes()).await;
    });
    let pki = Pki::new();
    let config = client_config(&pki.trust(), None).unwrap();
    let err = probe(&addr.to_string(), &config, "localhost")
        .await
        .unwrap_err();
    assert!(err.contains("plain HTTP"), "{err}");
    assert!(err.contains("http://"), "{err}");
}

#[tokio::test]
async fn plain_http_to_a_tls_port_is_answered_with_an_alert_that_is_named() {
    let pki = Pki::new();
    let addr = serve(pki.server()).await;
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer).await;
    let words = explain_plain_answer(&answer).expect("a TLS alert");
    assert!(words.contains("https://"), "{words}");
}

#[test]
fn the_plain_http_answers_of_common_servers_are_named() {
    let nginx = b"HTTP/1.1 400 Bad Request\r\n\r\n<center>The plain HTTP request was sent to HTTPS port</center>";
    let go = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
    assert!(explain_plain_answer(nginx).is_some());
    assert!(explain_plain_answer(go).is_some());
    assert_eq!(
        explain_plain_answer(b"HTTP/1.1 400 Bad Request\r\n\r\nmissing field"),
        None
    );
}
