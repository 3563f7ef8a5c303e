//! TLS in a target profile: the trust the runner extends to the target (`tls:` at the top) and the
//! client certificate a principal shows (`principals[].tls`), with their rules. The files they name
//! are read here, and only to tell a missing, unreadable or non-PEM file at load with its line and
//! column; the suite builds the TLS configurations from the same paths.

use std::io::Read;
use std::path::{Path, PathBuf};

use idemspec_tls::rustls::pki_types::pem::PemObject;
use idemspec_tls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};

use crate::load::{LoadErrors, Spanned};

/// The most of a certificate, key or CA bundle file read: the TLS crate's bound, which says why.
const MAX_PEM_BYTES: u64 = idemspec_tls::MAX_PEM_BYTES;

/// How the runner trusts an `https://` target (`tls:`): the platform's root certificates, plus the
/// certificate authorities in `ca_file`; `server_name` replaces the URL's host as the name the
/// certificate must carry (and the SNI sent); `insecure_skip_verify` accepts any certificate, and
/// every report says so.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSpec {
    /// A PEM file of one or more CA certificates trusted besides the platform's roots (a private
    /// CA), relative to the profile's directory.
    #[serde(default)]
    pub ca_file: Option<Spanned<String>>,
    /// The DNS name (or IP address) the target's certificate must name, when it is not the base
    /// URL's host (a target reached by IP whose certificate names its DNS name).
    #[serde(default)]
    pub server_name: Option<Spanned<String>>,
    /// Accept any certificate, unverified (default `false`). For a throwaway test target only:
    /// every report format says the target was not verified.
    #[serde(default)]
    pub insecure_skip_verify: bool,
}

/// The client certificate a principal presents to an mTLS target (`principals[].tls`): a PEM
/// certificate chain (the principal's certificate first) and its PEM private key (PKCS#8, PKCS#1
/// RSA or SEC1 EC, unencrypted), both relative to the profile's directory.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClientIdentity {
    /// The PEM certificate chain.
    pub cert_file: Spanned<String>,
    /// The PEM private key of the chain's first certificate.
    pub key_file: Spanned<String>,
}

/// The directory a profile's relative paths start from: the directory of `file` (the profile's
/// path as the user named it); empty, the working directory, for a bare file name or a built-in
/// profile (`<embedded:…>`, whose paths are given absolute).
pub fn profile_dir(file: &str) -> PathBuf {
    if file.starts_with("<embedded:") {
        return PathBuf::new();
    }
    Path::new(file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `written` (a path as the profile has it) resolved against `dir` ([`profile_dir`]); an
/// absolute path stays as it is.
pub fn resolve(dir: &Path, written: &str) -> PathBuf {
    dir.join(written)
}

/// What a PEM file must hold.
#[derive(Clone, Copy)]
enum PemKind {
    /// One or more certificates (`ca_file`, `cert_file`).
    Certificates,
    /// A private key (`key_file`).
    PrivateKey,
}

impl TlsSpec {
    /// Its rules: `ca_file` is a readable PEM file of certificates; `server_name` is a host name
    /// or IP address, without a scheme, port or path.
    pub(crate) fn check(&self, dir: &Path, errors: &mut LoadErrors) {
        if let Some(ca) = &self.ca_file {
            check_file(dir, "tls.ca_file", ca, PemKind::Certificates, errors);
        }
        if let Some(name) = &self.server_name {
            if let Err(m) = check_server_name(&name.value) {
                errors.at(&name.referenced, format!("tls.server_name: {m}"));
            }
        }
    }
}

impl ClientIdentity {
    /// Its rules: `cert_file` is a readable PEM file of certificates and `key_file` one holding an
    /// unencrypted private key; then that they go together ([`idemspec_tls::identity_problem`]:
    /// the key is the first certificate's, and that certificate is one TLS can use), the error
    /// at `cert_file`'s path. Errors name the principal.
    pub(crate) fn check(&self, dir: &Path, principal: &str, errors: &mut LoadErrors) {
        let cert = format!("principal `{principal}`: tls.cert_file");
        let chain = check_file(dir, &cert, &self.cert_file, PemKind::Certificates, errors);
        let key = format!("principal `{principal}`: tls.key_file");
        let key = check_file(dir, &key, &self.key_file, PemKind::PrivateKey, errors);
        let (Some(chain), Some(key)) = (chain, key) else {
            return;
        };
        if let Some(problem) = pair_problem(&chain, &key) {
            errors.at(
                &self.cert_file.referenced,
                format!(
                    "principal `{principal}`: tls.cert_file `{}` with tls.key_file `{}`: {problem}",
                    resolve(dir, &self.cert_file.value).display(),
                    resolve(dir, &self.key_file.value).display()
                ),
            );
        }
    }

    /// The chain's first certificate (DER), where `cert_file` (relative to `dir`) holds one.
    fn leaf(&self, dir: &Path) -> Option<Vec<u8>> {
        let text = read_bounded(&resolve(dir, &self.cert_file.value)).ok()?;
        CertificateDer::pem_slice_iter(text.as_bytes())
            .next()?
            .ok()
            .map(|der| der.to_vec())
    }
}

/// Why the PEM texts `chain` and `key` are no identity TLS can use, if they are not (see
/// [`idemspec_tls::identity_problem`]); a text whose blocks cannot be decoded is told so.
fn pair_problem(chain: &str, key: &str) -> Option<String> {
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(chain.as_bytes()).collect();
    let Ok(certs) = certs else {
        return Some(
            "a `CERTIFICATE` block is not valid PEM (base64 between its BEGIN and END lines): \
             export the certificate again as PEM"
                .into(),
        );
    };
    let Ok(key) = PrivateKeyDer::from_pem_slice(key.as_bytes()) else {
        return Some(
            "the key's PEM block is not valid base64: export the key again as unencrypted PEM"
                .into(),
        );
    };
    idemspec_tls::identity_problem(&certs, &key)
}

/// The pairs of principals (by name, in the profile's order) that present one client
/// certificate: the same first certificate in their `cert_file`s (relative to `dir`), whatever
/// the files are called. A server that names principals by certificate sees such two as one.
pub fn shared_certificates<'a>(
    principals: impl IntoIterator<Item = (&'a str, &'a ClientIdentity)>,
    dir: &Path,
) -> Vec<(String, String)> {
    let leaves: Vec<(&str, Vec<u8>)> = principals
        .into_iter()
        .filter_map(|(name, id)| Some((name, id.leaf(dir)?)))
        .collect();
    let mut pairs = Vec::new();
    for (i, (first, leaf)) in leaves.iter().enumerate() {
        for (second, other) in &leaves[i + 1..] {
            if leaf == other {
                pairs.push(((*first).to_owned(), (*second).to_owned()));
            }
        }
    }
    pairs
}

/// Why `name` cannot be a TLS server name: empty, or written as a URL or with a port. An IPv6
/// address may be written bare (`::1`) or in a URL's brackets (`[::1]`).
fn check_server_name(name: &str) -> Result<(), String> {
    let bracketed = name
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'));
    let ipv6 = |text: &str| text.parse::<std::net::Ipv6Addr>().is_ok();
    let bad = |c: char| c.is_whitespace() || c == '/' || c == '@';
    if name.is_empty() {
        Err("an empty name; give the DNS name the certificate carries, or leave it out".into())
    } else if name.contains("://") || name.chars().any(bad) {
        Err(format!(
            "`{name}` is not a host name: give the name alone (`api.internal`), without a scheme \
             or a path"
        ))
    } else if bracketed.is_some_and(ipv6) || ipv6(name) {
        Ok(())
    } else if name.starts_with('[') && name.contains("]:") {
        Err(format!(
            "`{name}` is not a host name: give the address without a port (`[::1]` or `::1`)"
        ))
    } else if name.starts_with('[') {
        Err(format!(
            "`{name}` is not an IPv6 address: write one as `[::1]` or `::1`"
        ))
    } else if name.contains(':') {
        Err(format!(
            "`{name}` is not a host name: give the name without a port (`api.internal`)"
        ))
    } else {
        Ok(())
    }
}

/// Reads `path` (as written, resolved against `dir`) and records at its location, under `field`,
/// why it is not a PEM file of `kind`: missing, unreadable, too large, or holding something else.
/// Its contents are never quoted (a key is a secret). The text, when it is such a file.
fn check_file(
    dir: &Path,
    field: &str,
    path: &Spanned<String>,
    kind: PemKind,
    errors: &mut LoadErrors,
) -> Option<String> {
    let resolved = resolve(dir, &path.value);
    let mut good = None;
    let problem = match read_bounded(&resolved) {
        Ok(text) => {
            let problem = pem_problem(&text, kind);
            good = problem.is_none().then_some(text);
            problem
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
            "no such file (paths are relative to the profile's directory, `{}`)",
            shown_dir(dir)
        )),
        Err(e) => Some(format!("cannot be read: {e}")),
    };
    if let Some(problem) = problem {
        errors.at(
            &path.referenced,
            format!("{field} `{}`: {problem}", resolved.display()),
        );
    }
    good
}

/// `dir` as a reader would name it: `.` for the working directory.
fn shown_dir(dir: &Path) -> String {
    if dir.as_os_str().is_empty() {
        ".".into()
    } else {
        dir.display().to_string()
    }
}

/// The first [`MAX_PEM_BYTES`] of `path` and one more byte, as text with any invalid UTF-8
/// replaced (PEM is ASCII).
///
/// # Errors
/// `path` is no regular file, or cannot be opened or read.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    // Opening a FIFO blocks until a writer comes, and a device never ends: a regular file only.
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other(
            "it is not a regular file (a directory, a FIFO or a device)",
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Why `text` is not a PEM file of `kind`, in words that say what to do.
fn pem_problem(text: &str, kind: PemKind) -> Option<String> {
    if text.len() as u64 > MAX_PEM_BYTES {
        return Some(format!(
            "larger than {} MiB, the most idemspec reads as a certificate, key or CA bundle \
             file; give the certificates the target needs, not a larger file",
            MAX_PEM_BYTES >> 20
        ));
    }
    let has = |label: &str| text.contains(&format!("-----BEGIN {label}-----"));
    let has_key = ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"]
        .into_iter()
        .any(has);
    match kind {
        PemKind::Certificates if has("CERTIFICATE") => None,
        PemKind::Certificates if has_key || has("ENCRYPTED PRIVATE KEY") => Some(
            "holds a private key, not a certificate (are `cert_file` and `key_file` swapped?)"
                .into(),
        ),
        PemKind::PrivateKey if has_key => None,
        PemKind::PrivateKey if has("ENCRYPTED PRIVATE KEY") => Some(
            "the private key is encrypted; idemspec reads an unencrypted key (decrypt it with \
             `openssl pkey -in KEY -out PLAIN.pem`)"
                .into(),
        ),
        PemKind::PrivateKey if has("CERTIFICATE") => Some(
            "holds a certificate, not a private key (are `cert_file` and `key_file` swapped?)"
                .into(),
        ),
        PemKind::Certificates => Some(
            "not a PEM certificate file: expected `-----BEGIN CERTIFICATE-----` (a DER file \
             converts with `openssl x509 -inform der -in FILE -out FILE.pem`)"
                .into(),
        ),
        PemKind::PrivateKey => Some(
            "not a PEM private key: expected `-----BEGIN PRIVATE KEY-----` (or `RSA PRIVATE \
             KEY`, `EC PRIVATE KEY`)"
                .into(),
        ),
    }
}
