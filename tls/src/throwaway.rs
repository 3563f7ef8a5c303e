//! A certificate authority made for one run or one test, and the certificates it issues.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};

use crate::{IdentityFiles, TlsError};

/// A throwaway CA (rcgen, ECDSA P-256), its key held in memory only: `idemspec run --reference
/// --tls`, `idemspec client --tls`, `idemspec proxy --tls-self-signed` and tests make one per run.
/// Certificates it issues are valid from 1975 to 4096 unless said otherwise; PEM texts are
/// `(certificate, private key as PKCS#8)`.
pub struct ThrowawayCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl std::fmt::Debug for ThrowawayCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThrowawayCa").finish_non_exhaustive()
    }
}

impl ThrowawayCa {
    /// A new CA, subject `CN=idemspec throwaway CA <8 hex digits of its key>`: each its own
    /// name, so a client that trusts another one's certificate is told "unknown issuer".
    ///
    /// # Errors
    /// [`TlsError::Generate`] when rcgen cannot make the key or certificate.
    pub fn new() -> Result<Self, TlsError> {
        let key = KeyPair::generate()?;
        let tag: String = key
            .public_key_raw()
            .iter()
            .rev()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut params = CertificateParams::default();
        params.distinguished_name = common_name(&format!("idemspec throwaway CA {tag}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, key)?;
        Ok(Self { issuer })
    }

    /// The CA's certificate, PEM: what a client trusts (`tls.ca_file`, `SSL_CERT_FILE`).
    pub fn ca_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `names` (DNS names or IP addresses, the subject `CN` the first
    /// of them), and its key.
    ///
    /// # Errors
    /// [`TlsError::Generate`] for a name rcgen refuses or a failed signature.
    pub fn server_cert(&self, names: &[&str]) -> Result<(String, String), TlsError> {
        self.issue(server_params(names)?)
    }

    /// As [`ThrowawayCa::server_cert`], valid only during the year 2000: what an expired
    /// certificate's error is tested with.
    ///
    /// # Errors
    /// As [`ThrowawayCa::server_cert`].
    pub fn expired_server_cert(&self, names: &[&str]) -> Result<(String, String), TlsError> {
        let mut params = server_params(names)?;
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        self.issue(params)
    }

    /// A client certificate with subject `CN=common_name` (what leasebroker names a principal
    /// by), and its key.
    ///
    /// # Errors
    /// [`TlsError::Generate`] for a failed signature.
    pub fn client_cert(&self, common_name: &str) -> Result<(String, String), TlsError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = self::common_name(common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        self.issue(params)
    }

    /// Writes the CA's certificate to `dir/ca.pem` and returns the path.
    ///
    /// # Errors
    /// [`TlsError::Write`] naming the file.
    pub fn write_ca(&self, dir: &Path) -> Result<PathBuf, TlsError> {
        let path = dir.join("ca.pem");
        write(&path, &self.ca_pem())?;
        Ok(path)
    }

    fn issue(&self, params: CertificateParams) -> Result<(String, String), TlsError> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

/// Writes a `(certificate, key)` pair to `dir/NAME.pem` and `dir/NAME-key.pem` (the key
/// readable by its owner only, on Unix) and returns them as [`IdentityFiles`].
///
/// # Errors
/// [`TlsError::Write`] naming the file.
pub fn write_identity(
    dir: &Path,
    name: &str,
    (cert_pem, key_pem): &(String, String),
) -> Result<IdentityFiles, TlsError> {
    let files = IdentityFiles {
        cert_file: dir.join(format!("{name}.pem")),
        key_file: dir.join(format!("{name}-key.pem")),
    };
    write(&files.cert_file, cert_pem)?;
    write_private(&files.key_file, key_pem)?;
    Ok(files)
}

fn server_params(names: &[&str]) -> Result<CertificateParams, TlsError> {
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
    params.distinguished_name = common_name(names.first().copied().unwrap_or("localhost"));
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    Ok(params)
}

fn common_name(name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn
}

fn write(path: &Path, text: &str) -> Result<(), TlsError> {
    std::fs::write(path, text).map_err(|cause| TlsError::Write {
        path: path.to_path_buf(),
        cause,
    })
}

fn write_private(path: &Path, text: &str) -> Result<(), TlsError> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|cause| TlsError::Write {
            path: path.to_path_buf(),
            cause,
        })
}
