//! A throwaway CA for HTTPS upstreams and TLS clients: its files in a temporary directory.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use idemspec_proxy::UpstreamTls;
use idemspec_tls::rustls::ServerConfig;
use idemspec_tls::{IdentityFiles, ThrowawayCa, TrustOptions};

/// A throwaway CA, its certificate written as `ca.pem` in a directory kept while it lives.
pub struct Pki {
    pub ca: ThrowawayCa,
    pub dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Self {
        let ca = ThrowawayCa::new().expect("a CA");
        let dir = tempfile::tempdir().expect("a temporary directory");
        ca.write_ca(dir.path()).expect("ca.pem written");
        Self { ca, dir }
    }

    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A server config for `localhost` and `127.0.0.1`; `mtls`: it requires a client
    /// certificate of this CA.
    pub fn server(&self, mtls: bool) -> Arc<ServerConfig> {
        let (cert, key) = self.ca.server_cert(&["localhost", "127.0.0.1"]).unwrap();
        let client_ca = self.ca.ca_pem();
        let client_ca = mtls.then_some(client_ca.as_str());
        idemspec_tls::server_config_pem(&cert, &key, client_ca, mtls).unwrap()
    }

    /// A client certificate `CN=name` of this CA, as files.
    pub fn client(&self, name: &str) -> IdentityFiles {
        let pair = self.ca.client_cert(name).unwrap();
        idemspec_tls::write_identity(self.dir.path(), name, &pair).unwrap()
    }

    /// Upstream TLS trusting this CA, with a client certificate for each of `principals`.
    pub fn upstream_tls(&self, principals: &[&str]) -> UpstreamTls {
        UpstreamTls {
            trust: TrustOptions {
                ca_file: Some(self.ca_file()),
                ..TrustOptions::default()
            },
            identities: principals
                .iter()
                .map(|p| (p.to_string(), self.client(p)))
                .collect::<BTreeMap<_, _>>(),
            ..UpstreamTls::default()
        }
    }
}
