//! Mutual TLS: a server that requires a client certificate sees the one the client shows, tells
//! a client without one, and refuses one of another CA.

use idemspec_tls::{client_config, probe, server_config, write_identity, ThrowawayCa};

use crate::support::{fetch, serve, Pki};

/// A server of `pki` that requires a certificate of `pki`'s CA, from files.
async fn mtls_server(pki: &Pki) -> std::net::SocketAddr {
    let pair = pki.ca.server_cert(&["localhost"]).unwrap();
    let files = write_identity(pki.dir.path(), "server", &pair).unwrap();
    let config = server_config(
        &files.cert_file,
        &files.key_file,
        Some(&pki.ca_file()),
        true,
    )
    .unwrap();
    serve(config).await
}

#[tokio::test]
async fn a_client_certificate_is_seen_by_the_server() {
    let pki = Pki::new();
    let addr = mtls_server(&pki).await;
    for principal in ["alice", "bob"] {
        let config = client_config(&pki.trust(), Some(&pki.client(principal))).unwrap();
        let answer = fetch(addr, config).await.unwrap();
        assert!(
            answer.ends_with(&format!("\r\n\r\nCN={principal}")),
            "{answer}"
        );
    }
}

#[tokio::test]
async fn a_server_that_demands_a_certificate_and_gets_none_is_named() {
    let pki = Pki::new();
    let addr = mtls_server(&pki).await;
    let config = client_config(&pki.trust(), None).unwrap();
    let err = probe(&addr.to_string(), &config, "localhost")
        .await
        .unwrap_err();
    assert!(err.contains("demanded a client certificate"), "{err}");
}

#[tokio::test]
async fn a_certificate_of_another_ca_is_refused_by_the_server() {
    let pki = Pki::new();
    let addr = mtls_server(&pki).await;
    let stranger = ThrowawayCa::new().unwrap();
    let pair = stranger.client_cert("mallory").unwrap();
    let files = write_identity(pki.dir.path(), "mallory", &pair).unwrap();
    let config = client_config(&pki.trust(), Some(&files)).unwrap();
    let err = probe(&addr.to_string(), &config, "localhost")
        .await
        .unwrap_err();
    assert!(err.contains("refused this client's certificate"), "{err}");
}
