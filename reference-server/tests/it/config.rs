//! Configuration errors read well: located YAML errors for `--tokens`, and flag errors that say what to do.

use clap::Parser;
use leasebroker::auth::Auth;
use leasebroker::cli::Args;

fn config_error(argv: &[&str]) -> String {
    let args = Args::try_parse_from(std::iter::once("leasebroker").chain(argv.iter().copied()))
        .map_err(|e| e.to_string());
    match args {
        Err(e) => e,
        Ok(args) => format!(
            "{:#}",
            args.into_config().expect_err("the flags are invalid")
        ),
    }
}

#[test]
fn flag_errors() {
    insta::assert_snapshot!(config_error(&[]), @"give --tokens FILE, --dev to accept any bearer token, or --tls-client-ca FILE to name principals by client certificates");
    insta::assert_snapshot!(config_error(&["--dev", "--in-flight-ttl", "0s"]), @"--in-flight-ttl must be positive");
    insta::assert_snapshot!(config_error(&["--dev", "--header-read-timeout", "0s"]), @"--header-read-timeout must be positive");
    insta::assert_snapshot!(config_error(&["--dev", "--body-read-timeout", "0s"]), @"--body-read-timeout must be positive");
    let bad_ttl = config_error(&["--dev", "--in-flight-ttl", "soon"]);
    assert!(
        bad_ttl.contains("invalid value 'soon' for '--in-flight-ttl"),
        "{bad_ttl}"
    );
    let bad_flaw = config_error(&["--dev", "--flaw", "bogus"]);
    assert!(
        bad_flaw.contains("possible values: no-idempotency"),
        "{bad_flaw}"
    );
}

#[test]
fn tls_flag_errors_name_the_flag_and_the_file() {
    let key_alone = config_error(&["--dev", "--tls-key", "key.pem"]);
    assert!(key_alone.contains("--tls-cert <FILE>"), "{key_alone}");
    let ca_alone = config_error(&["--tls-client-ca", "ca.pem"]);
    assert!(ca_alone.contains("--tls-cert <FILE>"), "{ca_alone}");
    let required_alone = config_error(&["--dev", "--tls-require-client-cert"]);
    assert!(
        required_alone.contains("--tls-client-ca <FILE>"),
        "{required_alone}"
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, "not a certificate").expect("write");
    let (cert, key) = (cert.display().to_string(), "/nonexistent/key.pem");
    let not_pem = config_error(&["--dev", "--tls-cert", &cert, "--tls-key", key]);
    assert!(not_pem.contains("serve TLS (--tls-cert)"), "{not_pem}");
    assert!(not_pem.contains(&cert), "{not_pem}");
    assert!(not_pem.contains("-----BEGIN CERTIFICATE-----"), "{not_pem}");
}

/// A client CA file that cannot be read is named by its own flag, and the operating system's
/// cause is said once.
#[test]
fn a_missing_client_ca_names_its_flag_and_the_cause_once() {
    let ca = idemspec_tls::ThrowawayCa::new().expect("a CA");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pair = ca
        .server_cert(&["localhost"])
        .expect("a server certificate");
    let files = idemspec_tls::write_identity(dir.path(), "server", &pair).expect("written");
    let (cert, key) = (files.cert_file.display(), files.key_file.display());
    let (cert, key) = (cert.to_string(), key.to_string());
    let missing = dir.path().join("client-ca.pem").display().to_string();
    let argv = [
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--tls-client-ca",
        &missing,
    ];
    let err = config_error(&argv);
    assert!(err.contains("serve TLS (--tls-client-ca)"), "{err}");
    assert!(err.contains(&missing), "{err}");
    assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");
}

#[test]
fn tokens_file_errors() {
    let err = |text: &str| {
        Auth::from_yaml("tokens.yaml", text)
            .expect_err("invalid tokens file")
            .to_string()
    };
    insta::assert_snapshot!(err("tokens:\n  tok-a: alice\ntokns: {}\n"), @"tokens.yaml:3:1: unknown field `tokns`, expected one of tokens");
    insta::assert_snapshot!(err("tokens:\n  tok-a: [alice]\n"), @"tokens.yaml:2:10: expected string scalar");
    insta::assert_snapshot!(err("tokens:\n  tok-a: ''\n"), @"tokens.yaml: tokens and principals must be non-empty");
}
