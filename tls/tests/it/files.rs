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
