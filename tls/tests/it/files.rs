//! Configuration files that cannot serve: each error names the file and what it lacks.

use std::path::PathBuf;

use idemspec_tls::{client_config, IdentityFiles, TrustOptions};

use crate::support::Pki;

#[test]
fn a_missing_ca_file_is_named() {
    let trust = TrustOptions {
        ca_file: Some(PathBuf::from("/nonexistent/ca.pem")),
        ..TrustOptions::default()
    };
    let err = client_config(&trust, None).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/ca.pem"), "{err}");
}

#[test]
fn a_key_file_without_a_key_is_named_and_its_text_kept_out() {
    let pki = Pki::new();
    let identity = IdentityFiles {
        cert_file: pki.ca_file(),
        key_file: pki.ca_file(),
    };
    let err = client_config(&pki.trust(), Some(&identity))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ca.pem") && err.contains("no private key"),
        "{err}"
    );
    assert!(!err.contains("BEGIN"), "{err}");
}

#[test]
fn a_cert_file_without_a_certificate_is_named() {
    let pki = Pki::new();
    let alice = pki.client("alice");
    let identity = IdentityFiles {
        cert_file: alice.key_file.clone(),
        key_file: alice.key_file,
    };
    let err = client_config(&pki.trust(), Some(&identity))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("alice-key.pem") && err.contains("no `-----BEGIN CERTIFICATE"),
        "{err}"
    );
}

/// A FIFO is refused as no regular file, not opened (which would wait for a writer forever).
#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.pem");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let trust = TrustOptions {
        ca_file: Some(fifo),
        ..TrustOptions::default()
    };
    let err = client_config(&trust, None).unwrap_err().to_string();
    assert!(err.contains("not a regular file"), "{err}");
}

/// A key of another certificate fails the client config with words that name both files and
/// say what to do, not rustls's `InconsistentKeys`.
#[test]
fn a_key_of_another_certificate_is_named_with_both_files() {
    let pki = Pki::new();
    let alice = pki.client("alice");
    let mallory = pki.client("mallory");
    let identity = IdentityFiles {
        cert_file: alice.cert_file,
        key_file: mallory.key_file,
    };
    let err = client_config(&pki.trust(), Some(&identity))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("alice.pem")
            && err.contains("mallory-key.pem")
            && err.contains("the key does not belong to the first certificate"),
        "{err}"
    );
    assert!(!err.contains("InconsistentKeys"), "{err}");
}

/// A CA bundle over the bound (16 MiB) is refused naming the bound; one of a few megabytes is
/// read.
#[test]
fn a_ca_file_over_the_bound_is_refused_naming_it() {
    let pki = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.pem");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(idemspec_tls::MAX_PEM_BYTES + 1).unwrap();
    let trust = TrustOptions {
        ca_file: Some(huge),
        ..TrustOptions::default()
    };
    let err = client_config(&trust, None).unwrap_err().to_string();
    assert!(err.contains("huge.pem") && err.contains("16 MiB"), "{err}");
    let bundle = dir.path().join("bundle.pem");
    let ca = std::fs::read_to_string(pki.ca_file()).unwrap();
    std::fs::write(&bundle, ca.repeat((3 << 20) / ca.len())).unwrap();
    let trust = TrustOptions {
        ca_file: Some(bundle),
        ..TrustOptions::default()
    };
    client_config(&trust, None).expect("a 3 MB bundle is read");
}
