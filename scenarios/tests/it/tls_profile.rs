//! A profile's TLS files (`tls.ca_file`, `principals[].tls`): read relative to the profile's
//! directory, and each way one can be wrong is a load error at the path's line that names the cause.

use std::path::Path;

use idemspec_scenarios::profile::TargetProfile;

const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

/// A profile whose top-level `tls` is `tls` and whose first principal's is `alice_tls`.
fn profile(tls: &str, alice_tls: &str) -> String {
    format!(
        r#"version: 1
name: t
base_urls: ["https://127.0.0.1:1"]
tls: {tls}
principals:
  - name: alice
    tls: {alice_tls}
  - {{name: bob, headers: {{X-Api-Key: kb}}}}
operations:
  create: {{path: /things, body: '{{"m":"{{{{marker}}}}"}}', id: $.id}}
  list: {{path: /things, items: "$[*]", marker: $.m}}
"#
    )
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write a test file");
}

fn load(dir: &Path, text: &str) -> Result<TargetProfile, idemspec_scenarios::LoadError> {
    let file = dir.join("profile.yaml");
    TargetProfile::load(&file.display().to_string(), text, &|_| None)
}

#[test]
fn paths_are_read_relative_to_the_profile_and_resolved_for_the_runner() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir(dir.path().join("pki")).expect("pki");
    write(dir.path(), "pki/ca.pem", CERT);
    write(dir.path(), "pki/alice.pem", CERT);
    write(dir.path(), "pki/alice.key", KEY);
    let text = profile(
        "{ca_file: pki/ca.pem, server_name: api.internal}",
        "{cert_file: pki/alice.pem, key_file: pki/alice.key}",
    );
    let p = load(dir.path(), &text).expect("loads");
    let tls = p.tls.as_ref().expect("tls");
    let ca = tls.ca_file.as_ref().expect("ca_file");
    assert_eq!(p.file_path(&ca.value), dir.path().join("pki/ca.pem"));
    assert!(!tls.insecure_skip_verify);
    assert!(p.has_client_certificates());
    let alice = p
        .principal("alice")
        .and_then(|a| a.tls.as_ref())
        .expect("alice's tls");
    assert_eq!(
        p.file_path(&alice.key_file.value),
        dir.path().join("pki/alice.key")
    );
}

#[test]
fn each_bad_file_is_located_at_its_path_and_names_the_cause() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), "cert.pem", CERT);
    write(dir.path(), "key.pem", KEY);
    write(
        dir.path(),
        "enc.key",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nx\n",
    );
    write(dir.path(), "ca.der", "\u{30}\u{82}binary");
    for (tls, alice, line, said) in [
        (
            "{ca_file: nope.pem}",
            "{cert_file: cert.pem, key_file: key.pem}",
            4,
            "tls.ca_file",
        ),
        (
            "{ca_file: nope.pem}",
            "{cert_file: cert.pem, key_file: key.pem}",
            4,
            "no such file",
        ),
        (
            "{ca_file: ca.der}",
            "{cert_file: cert.pem, key_file: key.pem}",
            4,
            "not a PEM certificate file",
        ),
        (
            "{}",
            "{cert_file: key.pem, key_file: key.pem}",
            7,
            "holds a private key, not a certificate",
        ),
        (
            "{}",
            "{cert_file: cert.pem, key_file: cert.pem}",
            7,
            "holds a certificate, not a private key",
        ),
        (
            "{}",
            "{cert_file: cert.pem, key_file: enc.key}",
            7,
            "the private key is encrypted",
        ),
        (
            "{}",
            "{cert_file: cert.pem, key_file: enc.key}",
            7,
            "principal `alice`: tls.key_file",
        ),
        (
            "{server_name: \"https://api\"}",
            "{cert_file: cert.pem, key_file: key.pem}",
            4,
            "tls.server_name",
        ),
        (
            "{server_name: \"api:443\"}",
            "{cert_file: cert.pem, key_file: key.pem}",
            4,
            "without a port",
        ),
    ] {
        let err = load(dir.path(), &profile(tls, alice)).expect_err(said);
        assert_eq!(err.line, line, "{said}: {err}");
        assert!(err.message.contains(said), "{said}: {err}");
        assert!(
            !err.to_string().contains("MIIE"),
            "a key's contents are never quoted: {err}"
        );
    }
}

#[test]
fn a_directory_or_a_huge_file_is_no_certificate_and_every_bad_file_is_reported() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir(dir.path().join("sub")).expect("sub");
    write(dir.path(), "big.pem", &"A".repeat(1 << 21));
    let text = profile(
        "{ca_file: sub, insecure_skip_verify: true}",
        "{cert_file: big.pem, key_file: missing.key}",
    );
    let err = load(dir.path(), &text).expect_err("three bad files");
    let all: Vec<String> = err.each().map(ToString::to_string).collect();
    assert_eq!(all.len(), 3, "{err}");
    assert!(
        all[0].contains("tls.ca_file") && all[0].contains("cannot be read"),
        "{err}"
    );
    assert!(all[1].contains("larger than 1 MiB"), "{err}");
    assert!(
        all[2].contains("tls.key_file") && all[2].contains("no such file"),
        "{err}"
    );
}

#[test]
fn insecure_skip_verify_alone_loads_and_an_unknown_field_is_located() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), "cert.pem", CERT);
    write(dir.path(), "key.pem", KEY);
    let alice = "{cert_file: cert.pem, key_file: key.pem}";
    let p = load(dir.path(), &profile("{insecure_skip_verify: true}", alice)).expect("loads");
    assert!(p.tls.expect("tls").insecure_skip_verify);
    let err = load(dir.path(), &profile("{ca: x}", alice)).expect_err("unknown field");
    assert_eq!(err.line, 4, "{err}");
    assert!(err.message.contains("unknown field `ca`"), "{err}");
}

/// A FIFO named as a CA file is refused as no regular file at once: opening it would wait for a
/// writer that never comes, and the load would hang.
#[cfg(unix)]
#[test]
fn a_fifo_is_no_certificate_and_does_not_hang_the_load() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let fifo = dir.path().join("fifo.pem");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    write(dir.path(), "cert.pem", CERT);
    write(dir.path(), "key.pem", KEY);
    let text = profile(
        "{ca_file: fifo.pem}",
        "{cert_file: cert.pem, key_file: key.pem}",
    );
    let err = load(dir.path(), &text).expect_err("a FIFO is no CA file");
    assert!(err.to_string().contains("not a regular file"), "{err}");
}
