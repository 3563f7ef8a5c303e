//! `idemspec run --reference --tls`: the reference server over mutual TLS. A throwaway CA made for
//! the run issues leasebroker's certificate (for `127.0.0.1` and `localhost`) and one client
//! certificate per principal (subject `CN=NAME`), all written to the run's temporary directory;
//! leasebroker requires a client certificate from that CA and names each request's principal by
//! it (no bearer tokens), and the bundled profile trusts the CA and gives each principal its
//! certificate instead of its token.

use std::path::{Path, PathBuf};

use idemspec_tls::{write_identity, IdentityFiles, ThrowawayCa, TlsError};
use serde_json::{json, Value};

/// The certificates of one TLS reference run, as files.
#[derive(Debug)]
pub(super) struct ReferencePki {
    /// The CA's certificate (PEM), which the profile trusts (`tls.ca_file`).
    ca_file: PathBuf,
    /// leasebroker's certificate and key.
    server: IdentityFiles,
    /// Each principal's client certificate and key, by principal name, in the profile's order.
    principals: Vec<(String, IdentityFiles)>,
}

impl ReferencePki {
    /// Makes a throwaway CA and writes its certificate, the server's and one per `principals`
    /// name into `dir` (keys readable by their owner only).
    ///
    /// # Errors
    /// [`TlsError`] when a certificate cannot be made or written.
    pub(super) fn write(dir: &Path, principals: &[&str]) -> Result<Self, TlsError> {
        let ca = ThrowawayCa::new()?;
        let ca_file = ca.write_ca(dir)?;
        let server = ca.server_cert(&["127.0.0.1", "localhost"])?;
        let server = write_identity(dir, "leasebroker", &server)?;
        let principals = principals
            .iter()
            .map(|name| {
                let files = write_identity(dir, name, &ca.client_cert(name)?)?;
                Ok(((*name).to_owned(), files))
            })
            .collect::<Result<_, TlsError>>()?;
        Ok(Self {
            ca_file,
            server,
            principals,
        })
    }

    /// leasebroker's flags: serve TLS with the server certificate, and require a client
    /// certificate from the CA (which names the principal).
    pub(super) fn leasebroker_args(&self) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        vec![
            "--tls-cert".into(),
            path(&self.server.cert_file),
            "--tls-key".into(),
            path(&self.server.key_file),
            "--tls-client-ca".into(),
            path(&self.ca_file),
            "--tls-require-client-cert".into(),
        ]
    }

    /// `profile` (a bundled leasebroker profile, parsed) made to reach the server over mutual
    /// TLS: `tls.ca_file` trusts the CA, and each principal named here shows its certificate
    /// (`tls.cert_file`, `tls.key_file`) and sends no `Authorization` header.
    pub(super) fn mutual_tls_profile(&self, mut profile: Value) -> Value {
        let path = |p: &Path| Value::from(p.display().to_string());
        profile["tls"] = json!({ "ca_file": path(&self.ca_file) });
        if let Some(principals) = profile["principals"].as_array_mut() {
            for principal in principals {
                let name = principal["name"].as_str().unwrap_or_default();
                let Some((_, files)) = self.principals.iter().find(|(n, _)| n == name) else {
                    continue;
                };
                principal["tls"] = json!({
                    "cert_file": path(&files.cert_file),
                    "key_file": path(&files.key_file),
                });
                if let Some(headers) = principal["headers"].as_object_mut() {
                    headers.remove("Authorization");
                }
            }
        }
        profile
    }
}
