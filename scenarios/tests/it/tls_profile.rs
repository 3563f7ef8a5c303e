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

/// A client certificate `CN=name` of a new throwaway CA and its key, PEM.
fn pair(name: &str) -> (String, String) {
    let ca = idemspec_tls::ThrowawayCa::new().expect("a CA");
    ca.client_cert(name).expect("a client certificate")
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write a test file");
}

/// A temporary directory holding alice's certificate and key as `cert.pem` and `key.pem`, and the
/// certificate's text.
fn alice_files() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (cert, key) = pair("alice");
    write(dir.path(), "cert.pem", &cert);
    write(dir.path(), "key.pem", &key);
    (dir, cert)
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
    let (cert, key) = pair("alice");
    write(dir.path(), "pki/alice.pem", &cert);
    write(dir.path(), "pki/alice.key", &key);
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
        (
            "{server_name: \"[::1]:443\"}",
            "{cert_file: cert.pem, key_file: key.pem}",
            4,
            "give the address without a port",
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
    let big = std::fs::File::create(dir.path().join("big.pem")).expect("big.pem");
    big.set_len((16 << 20) + 1)
        .expect("a sparse file just over the bound");
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
    assert!(all[1].contains("larger than 16 MiB"), "{err}");
    assert!(
        all[2].contains("tls.key_file") && all[2].contains("no such file"),
        "{err}"
    );
}

#[test]
fn insecure_skip_verify_alone_loads_and_an_unknown_field_is_located() {
    let (dir, _) = alice_files();
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

/// A CA bundle of a few megabytes (a corporate one) is read; the bound is the TLS crate's.
#[test]
fn a_ca_bundle_of_megabytes_loads() {
    let (dir, cert) = alice_files();
    let bundle = cert.repeat((3 << 20) / cert.len());
    write(dir.path(), "bundle.pem", &bundle);
    let alice = "{cert_file: cert.pem, key_file: key.pem}";
    load(dir.path(), &profile("{ca_file: bundle.pem}", alice)).expect("a 3 MB bundle loads");
}

/// An IPv6 literal is a server name, bare or in a URL's brackets; without its port it is never
/// told to drop one.
#[test]
fn an_ipv6_server_name_loads_bracketed_or_bare() {
    let (dir, _) = alice_files();
    let alice = "{cert_file: cert.pem, key_file: key.pem}";
    for name in ["\"[::1]\"", "\"::1\"", "\"[fe80::1]\""] {
        let tls = format!("{{server_name: {name}}}");
        load(dir.path(), &profile(&tls, alice)).expect(name);
    }
    let err = load(dir.path(), &profile("{server_name: \"[nope]\"}", alice)).expect_err("[nope]");
    assert!(err.message.contains("not an IPv6 address"), "{err}");
    assert!(!err.message.contains("port"), "{err}");
}

/// A certificate and key that cannot be one identity are refused at load, at `cert_file`'s line,
/// naming both files and what to do: a key of another certificate, a chain whose first
/// certificate is not the key's, an X.509 v1 certificate.
#[test]
fn a_certificate_and_key_that_do_not_go_together_are_refused_at_load() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ca = idemspec_tls::ThrowawayCa::new().expect("a CA");
    let (cert, key) = ca.client_cert("alice").expect("alice");
    let (_, other_key) = ca.client_cert("mallory").expect("mallory");
    write(dir.path(), "cert.pem", &cert);
    write(dir.path(), "key.pem", &key);
    write(dir.path(), "other-key.pem", &other_key);
    write(
        dir.path(),
        "reversed.pem",
        &format!("{}{cert}", ca.ca_pem()),
    );
    write(dir.path(), "v1.pem", &as_v1(&cert));
    for (alice, said) in [
        (
            "{cert_file: cert.pem, key_file: other-key.pem}",
            "the key does not belong to the first certificate",
        ),
        (
            "{cert_file: reversed.pem, key_file: key.pem}",
            "the key belongs to certificate 2 of 2 in the chain, not to the first: put the \
             certificate issued for this key first",
        ),
        (
            "{cert_file: v1.pem, key_file: key.pem}",
            "X.509 v1 certificate",
        ),
    ] {
        let err = load(dir.path(), &profile("{}", alice)).expect_err(said);
        assert_eq!(err.line, 7, "{said}: {err}");
        assert!(err.message.contains(said), "{err}");
        assert!(
            err.message.contains("principal `alice`: tls.cert_file")
                && err.message.contains("tls.key_file"),
            "{err}"
        );
    }
    let good = "{cert_file: cert.pem, key_file: key.pem}";
    load(dir.path(), &profile("{}", good)).expect("the key's own certificate loads");
}

/// Two principals showing one certificate load, with a warning naming both at the second's
/// `cert_file`; copies of one certificate under two names are the same certificate.
#[test]
fn two_principals_with_one_certificate_are_warned_of() {
    let (dir, cert) = alice_files();
    write(dir.path(), "copy.pem", &cert);
    let text = profile("{}", "{cert_file: cert.pem, key_file: key.pem}").replace(
        "  - {name: bob, headers: {X-Api-Key: kb}}",
        "  - {name: bob, tls: {cert_file: copy.pem, key_file: key.pem}}",
    );
    let p = load(dir.path(), &text).expect("loads");
    assert_eq!(
        p.shared_certificates(),
        [("alice".to_owned(), "bob".to_owned())]
    );
    let warnings = p.warnings("profile.yaml");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("profile.yaml:8:")
            && warnings[0]
                .contains("principals `alice` and `bob` present the same client certificate"),
        "{warnings:?}"
    );
    let (own, own_key) = pair("bob");
    write(dir.path(), "copy.pem", &own);
    write(dir.path(), "bob-key.pem", &own_key);
    let text = text.replace(
        "copy.pem, key_file: key.pem",
        "copy.pem, key_file: bob-key.pem",
    );
    let p = load(dir.path(), &text).expect("loads");
    assert!(p.warnings("profile.yaml").is_empty());
}

/// `pem` (one v3 certificate) as an X.509 v1 certificate: the `[0] version` field taken out of
/// the to-be-signed part. The signature no longer verifies, which a parser does not look at.
fn as_v1(pem: &str) -> String {
    use base64::Engine as _;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("base64");
    let outer = &der[header(&der).0..];
    let (at, len) = header(outer);
    let tbs = &outer[at..at + len];
    assert_eq!(tbs[..5], [0xa0, 3, 2, 1, 2], "a v3 version field first");
    let mut inner = der_sequence(&tbs[5..]);
    inner.extend_from_slice(&outer[at + len..]);
    let v1 = base64::engine::general_purpose::STANDARD.encode(der_sequence(&inner));
    let lines: Vec<&str> = v1
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

/// A DER element's header length and content length.
fn header(der: &[u8]) -> (usize, usize) {
    match der[1] {
        short if short < 0x80 => (2, usize::from(short)),
        long => {
            let n = usize::from(long & 0x7f);
            let len = der[2..2 + n]
                .iter()
                .fold(0, |a, b| a << 8 | usize::from(*b));
            (2 + n, len)
        }
    }
}

/// A DER SEQUENCE of `content`.
fn der_sequence(content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = vec![0x30];
    match len {
        0..0x80 => out.push(len as u8),
        0x80..0x100 => out.extend([0x81, len as u8]),
        _ => out.extend([0x82, (len >> 8) as u8, len as u8]),
    }
    out.extend_from_slice(content);
    out
}
