//! The TLS a run's clients use, read once from the target profile: the trust extended to
//! `https://` URLs (`tls:`) and each principal's client certificate (`principals[].tls`), as
//! the `idemspec-tls` crate takes them.

use std::collections::BTreeMap;

use idemspec_scenarios::profile::TargetProfile;
use idemspec_tls::{IdentityFiles, TrustOptions};

/// The trust and the client certificates of one run, with every path resolved against the
/// profile's directory.
#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    /// How `https://` URLs are trusted (default: the platform's roots, the URL's host).
    pub trust: TrustOptions,
    /// Each principal's client certificate, by principal name; a principal without one is absent.
    pub identities: BTreeMap<String, IdentityFiles>,
}

impl TlsSettings {
    /// The settings `profile` declares.
    pub fn of_profile(profile: &TargetProfile) -> Self {
        let tls = profile.tls.clone().unwrap_or_default();
        let trust = TrustOptions {
            ca_file: tls.ca_file.map(|f| profile.file_path(&f.value)),
            server_name: tls.server_name.map(|n| n.value),
            insecure_skip_verify: tls.insecure_skip_verify,
        };
        let identities = profile
            .principals
            .value
            .iter()
            .filter_map(|p| {
                let id = p.tls.as_ref()?;
                let files = IdentityFiles {
                    cert_file: profile.file_path(&id.cert_file.value),
                    key_file: profile.file_path(&id.key_file.value),
                };
                Some((p.name.clone(), files))
            })
            .collect();
        Self { trust, identities }
    }

    /// The client certificate of principal `name`, if it has one.
    pub fn identity(&self, name: &str) -> Option<&IdentityFiles> {
        self.identities.get(name)
    }

    /// What the embedded proxy needs to originate TLS to the target: the same trust, and each
    /// principal's certificate (picked by a request's
    /// [`PRINCIPAL_HEADER`](super::PRINCIPAL_HEADER)).
    pub fn upstream(&self) -> idemspec_proxy::UpstreamTls {
        idemspec_proxy::UpstreamTls {
            trust: self.trust.clone(),
            identities: self.identities.clone(),
        }
    }
}
