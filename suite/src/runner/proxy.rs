//! One embedded fault-injecting proxy per check and base URL, so a check's rules (`nth`, `times`)
//! and event log see only that check's requests, even while other checks run beside it.

use std::time::Duration;

use idemspec_proxy::{ProxyConfig, ProxyEvent, ProxyHandle};
use idemspec_scenarios::rules::Rule;

/// The proxies in front of each base URL, sharing one rule list.
pub(crate) struct FaultProxy {
    handles: Vec<ProxyHandle>,
}

impl FaultProxy {
    /// Starts one proxy per upstream on `127.0.0.1:0`.
    pub(crate) async fn start(upstreams: &[String], rules: &[Rule]) -> std::io::Result<Self> {
        let mut handles = Vec::with_capacity(upstreams.len());
        for upstream in upstreams {
            let config = ProxyConfig {
                upstream: upstream.trim_end_matches('/').to_owned(),
                rules: rules.to_vec(),
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
