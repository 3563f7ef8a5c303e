//! A handshake that succeeds states its facts; each certificate failure is named with what to do.

use idemspec_tls::{client_config, probe, server_config_pem, TrustOptions};

use crate::support::{serve, Pki};

#[tokio::test]
async fn a_trusted_server_is_described_by_version_subject_and_issuer() {
    let pki = Pki::new();
    let addr = serve(pki.server()).await;
    let config = client_config(&pki.trust(), None).unwrap();
    let facts = probe(&addr.to_string(), &config, "localhost")
        .await
        .unwrap();
    assert_eq!(facts.version, "TLS 1.3");
    assert_eq!(facts.subject, "CN=localhost");
    assert!(
        facts.issuer.starts_with("CN=idemspec throwaway CA "),
        "{facts:?}"
    );
}

#[tokio::test]
async fn a_certificate_of_an_untrusted_ca_is_an_unknown_issuer_with_the_setting_to_use() {
    let pki = Pki::new();
    let addr = serve(pki.server()).await;
    let config = client_config(&TrustOptions::default(), None).unwrap();
    let err = probe(&addr.to_string(), &config, "localhost")
        .await
        .unwrap_err();
    assert!(err.contains("unknown issuer"), "{err}");
    assert!(err.contains("tls.ca_file"), "{err}");
}

#[tokio::test]
async fn insecure_skip_verify_accepts_a_certificate_of_an_untrusted_ca() {
    let pki = Pki::new();
    let addr = serve(pki.server()).await;
    let trust = TrustOptions {
        insecure_skip_verify: true,
        ..TrustOptions::default()
    };
    let config = client_config(&trust, None).unwrap();
    let facts = probe(&addr.to_string(), &config, "elsewhere.example")
        .await
        .unwrap();
    assert_eq!(facts.subject, "CN=localhost");
}

#[tokio::test]
async fn a_name_mismatch_names_the_names_the_certificate_carries() {
    let pki = Pki::new();
    let (cert, key) = pki.ca.server_cert(&["api.internal.example"]).unwrap();
    let addr = serve(server_config_pem(&cert, &key, None, false).unwrap()).await;
    let config = client_config(&pki.trust(), None).unwrap();
    let err = probe(&addr.to_string(), &config, "localhost")
        .await
        .unwrap_err();
    assert!(err.contains("name mismatch"), "{err}");
    assert!(err.contains("it names api.internal.example;"), "{err}");
    assert!(!err.contains("DnsName"), "the name alone: {err}");
    assert!(err.contains("tls.server_name"), "{err}");
}

/// `server_name` applies to the hosts it is given for (a profile's base URLs): a connection to
/// another host (a token endpoint, a hook) is checked for that host's own name.
#[tokio::test]
async fn the_server_name_applies_only_to_its_hosts() {
    let pki = Pki::new();
    let (cert, key) = pki.ca.server_cert(&["api.internal.example"]).unwrap();
    let api = serve(server_config_pem(&cert, &key, None, false).unwrap()).await;
    let elsewhere = serve(pki.server()).await;
    let trust = TrustOptions {
        server_name: Some("api.internal.example".into()),
        server_name_hosts: vec!["127.0.0.1".into()],
        ..pki.trust()
    };
    let config = client_config(&trust, None).unwrap();
    let facts = probe(&api.to_string(), &config, "127.0.0.1").await.unwrap();
    assert_eq!(facts.subject, "CN=api.internal.example");
    let facts = probe(&elsewhere.to_string(), &config, "localhost")
        .await
        .expect("another host is checked for its own name");
    assert_eq!(facts.subject, "CN=localhost");
    assert_eq!(
        trust.server_name_for("localhost").unwrap().to_str(),
        "localhost"
    );
    assert_eq!(
        trust.server_name_for("127.0.0.1").unwrap().to_str(),
        "api.internal.example"
    );
}

#[tokio::test]
async fn the_server_name_override_is_the_name_checked() {
    let pki = Pki::new();
    let (cert, key) = pki.ca.server_cert(&["api.internal.example"]).unwrap();
    let addr = serve(server_config_pem(&cert, &key, None, false).unwrap()).await;
    let trust = TrustOptions {
        server_name: Some("api.internal.example".into()),
        ..pki.trust()
    };
    let name = trust.server_name_for("127.0.0.1").unwrap();
    let config = client_config(&trust, None).unwrap();
    let facts = probe(&addr.to_string(), &config, &name.to_str())
        .await
        .unwrap();
    assert_eq!(facts.subject, "CN=api.internal.example");
    // A client that names the URL's host (reqwest does) is checked for the override all the same.
    let facts = probe(&addr.to_string(), &config, "localhost")
        .await
        .unwrap();
    assert_eq!(facts.subject, "CN=api.internal.example");
    let plain = client_config(&pki.trust(), None).unwrap();
    let err = probe(&addr.to_string(), &plain, "localhost")
        .await
        .unwrap_err();
    assert!(err.contains("name mismatch"), "{err}");
}

#[tokio::test]
async fn an_expired_certificate_says_when_it_expired() {
    let pki = Pki::new();
    let (cert, key) = pki.ca.expired_server_cert(&["localhost"]).unwrap();
    let addr = serve(server_config_pem(&cert, &key, None, false).unwrap()).await;
    let config = client_config(&pki.trust(), None).unwrap();
    let err = probe(&addr.to_string(), &config, "localhost")
        .await
        .unwrap_err();
    assert!(err.contains("expired at 2001-01-01T00:00:00Z"), "{err}");
}

#[test]
fn a_server_name_is_the_override_or_the_host_without_brackets() {
    let trust = TrustOptions::default();
    assert_eq!(trust.server_name_for("[::1]").unwrap().to_str(), "::1");
    assert_eq!(
        trust.server_name_for("localhost").unwrap().to_str(),
        "localhost"
    );
    let named = TrustOptions {
        server_name: Some("api.example".into()),
        ..trust
    };
    assert_eq!(
        named.server_name_for("127.0.0.1").unwrap().to_str(),
        "api.example"
    );
    assert!(TrustOptions::default()
        .server_name_for("not a name")
        .is_err());
}

#[tokio::test]
async fn client_and_server_agree_on_x25519_as_openssl_and_browsers_do() {
    use idemspec_tls::rustls::{pki_types::ServerName, NamedGroup};
    use idemspec_tls::tokio_rustls::TlsConnector;
    let pki = Pki::new();
    let addr = serve(pki.server()).await;
    let config = client_config(&pki.trust(), None).unwrap();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let tls = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        TlsConnector::from(config).connect(name, tcp),
    )
    .await
    .unwrap()
    .unwrap();
    let group = tls.get_ref().1.negotiated_key_exchange_group().unwrap();
    // The group of the client's first key share: ring's default order would make it P-384.
    assert_eq!(group.name(), NamedGroup::X25519);
}
