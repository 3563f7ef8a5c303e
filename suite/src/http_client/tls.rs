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
    /// Pairs of principals (by name) that present the same client certificate
    /// ([`TargetProfile::shared_certificates`]): a server that names principals by certificate
    /// cannot tell them apart.
    pub shared: Vec<(String, String)>,
    /// The run's client configs, built once per identity and shared by its clients and every
    /// fault proxy (each check starts its own).
    pub configs: idemspec_tls::ConfigCache,
}

impl TlsSettings {
    /// The settings `profile` declares.
    pub fn of_profile(profile: &TargetProfile) -> Self {
        let tls = profile.tls.clone().unwrap_or_default();
        let trust = TrustOptions {
            ca_file: tls.ca_file.map(|f| profile.file_path(&f.value)),
            server_name: tls.server_name.map(|n| n.value),
            // `server_name` is the base URLs' name: a token endpoint or a hook elsewhere is
            // checked for its own host.
            server_name_hosts: profile
                .base_urls
                .value
                .iter()
                .filter_map(|url| Some(reqwest::Url::parse(url).ok()?.host_str()?.to_owned()))
                .collect(),
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
        Self {
            trust,
            identities,
            shared: profile.shared_certificates(),
            configs: idemspec_tls::ConfigCache::default(),
        }
    }

    /// Why a check's broken rule is undecided when it sent as two principals of `principals`
    /// (names) that present one client certificate: the server may have seen one identity.
    pub fn shared_certificate<'a>(
        &self,
        principals: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Option<String> {
        let used = |name: &str| principals.clone().into_iter().any(|p| p == name);
        let (first, second) = self.shared.iter().find(|(a, b)| used(a) && used(b))?;
        Some(format!(
            "principals `{first}` and `{second}` present the same client certificate, so a \
             server that names principals by certificate sees one identity and a response \
             shared between them proves nothing; give each principal a certificate of its own"
        ))
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
            client_identity: None,
            advice: idemspec_tls::Advice::Profile,
            configs: self.configs.clone(),
        }
    }
}
