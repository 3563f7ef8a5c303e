//! One embedded fault-injecting proxy per check and base URL, so a check's rules (`nth`, `times`)
//! and event log see only that check's requests, even while other checks run beside it.

use std::time::Duration;

use idemspec_proxy::{ProxyConfig, ProxyEvent, ProxyHandle};
use idemspec_scenarios::profile::KeyAt;
use idemspec_scenarios::rules::Rule;

use crate::http_client::TlsSettings;

/// The proxies in front of each base URL, sharing one rule list.
pub(crate) struct FaultProxy {
    handles: Vec<ProxyHandle>,
}

impl FaultProxy {
    /// Starts one proxy per upstream on `127.0.0.1:0`. `key_at`: where the contract puts the key,
    /// which the proxy records as each event's key and compares a rule's `idempotency_key` with.
    /// `tls`: the trust and client certificates an `https://` upstream is reached with, the
    /// certificate picked by the request's [`PRINCIPAL_HEADER`](crate::http_client::PRINCIPAL_HEADER).
    /// Errors: `key_at` names no header HTTP can carry, or a proxy cannot start.
    pub(crate) async fn start(
        upstreams: &[String],
        rules: &[Rule],
        key_at: &KeyAt,
        tls: &TlsSettings,
    ) -> std::io::Result<Self> {
        let mut handles = Vec::with_capacity(upstreams.len());
        for upstream in upstreams {
            let config = ProxyConfig {
                upstream: upstream.trim_end_matches('/').to_owned(),
                rules: rules.to_vec(),
                key_at: key_at.clone(),
                upstream_tls: Some(tls.upstream()),
                // A check's requests have all ended when it shuts its proxy down; a `hang` must
                // not hold the run.
                shutdown_grace: Duration::from_millis(100),
                ..ProxyConfig::default()
            };
            let handle = idemspec_proxy::start(config)
                .await
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            handles.push(handle);
        }
        Ok(Self { handles })
    }

    /// The proxies' base URLs, in the order of the upstreams.
    pub(crate) fn base_urls(&self) -> Vec<String> {
        self.handles
            .iter()
            .map(|h| format!("http://{}", h.addr()))
            .collect()
    }

    /// Every proxy's events, ordered by time of recording within each proxy.
    pub(crate) fn events(&self) -> Vec<ProxyEvent> {
        self.handles.iter().flat_map(|h| h.events()).collect()
    }

    /// Stops the proxies.
    pub(crate) async fn shutdown(self) {
        for h in self.handles {
            h.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's TLS client configs are built once per identity, whatever the number of checks:
    /// every check's proxies share them (each builds none of its own).
    #[tokio::test]
    async fn the_proxies_of_a_run_share_one_config_per_identity() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ca = idemspec_tls::ThrowawayCa::new().expect("a CA");
        let mut tls = TlsSettings {
            trust: idemspec_tls::TrustOptions {
                ca_file: Some(ca.write_ca(dir.path()).expect("the CA written")),
                ..Default::default()
            },
            ..TlsSettings::default()
        };
        for name in ["alice", "bob"] {
            let pair = ca.client_cert(name).expect("a certificate");
            let files = idemspec_tls::write_identity(dir.path(), name, &pair).expect("written");
            tls.identities.insert(name.to_owned(), files);
        }
        let upstreams = [
            "https://127.0.0.1:9".to_owned(),
            "https://localhost:9".to_owned(),
        ];
        let key_at = KeyAt::Header("Idempotency-Key".into());
        for check in 0..3 {
            let proxy = FaultProxy::start(&upstreams, &[], &key_at, &tls)
                .await
                .expect("the proxies start");
            proxy.shutdown().await;
            assert_eq!(
                tls.configs.builds(),
                3,
                "none, alice's and bob's, built once (after check {check})"
            );
        }
    }

    /// The contract's key header reaches the proxy: a rule's `idempotency_key` matches it (the
    /// proxy answers itself, so no upstream is needed) and the event records the key.
    #[tokio::test]
    async fn the_contract_key_header_is_the_proxys() {
        let rules: Vec<Rule> = idemspec_scenarios::from_yaml(
            "rules.yaml",
            "- name: keyed\n  match: {idempotency_key: K1}\n  fault: {respond: {status: 418}}\n",
        )
        .expect("valid rules");
        let upstream = ["http://127.0.0.1:9".to_owned()];
        let header = KeyAt::Header("X-Request-Id".into());
        let tls = TlsSettings::default();
        let proxy = FaultProxy::start(&upstream, &rules, &header, &tls)
            .await
            .expect("the proxy starts");
        let status = reqwest::Client::new()
            .post(&proxy.base_urls()[0])
            .header("X-Request-Id", "K1")
            .send()
            .await
            .expect("an answer")
            .status();
        assert_eq!(status, 418);
        let events = proxy.events();
        assert_eq!(events[0].idempotency_key.as_deref(), Some("K1"));
        assert_eq!(events[0].rule.as_deref(), Some("keyed"));
        proxy.shutdown().await;
        let bad = FaultProxy::start(
            &upstream,
            &rules,
            &KeyAt::Header("X Request Id".into()),
            &tls,
        )
        .await;
        assert!(
            bad.is_err(),
            "a key header that is no header name is refused"
        );
    }
}
