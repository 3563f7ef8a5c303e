//! TLS the proxy originates to an `https://` upstream ([`Originate`]): one client config per
//! identity, the request's `x-idemspec-principal` header choosing which ([`Identity`]).

use std::collections::HashMap;

use http::header::{HeaderMap, HeaderName};
use idemspec_tls::rustls::pki_types::ServerName;
use idemspec_tls::tokio_rustls::{client::TlsStream, TlsConnector};
use tokio::net::TcpStream;

use crate::config::UpstreamTls;
use crate::error::ProxyError;

/// The control header that names the principal a request is made as; it selects the client
/// certificate of the request's upstream connection and is stripped like every `x-idemspec-*`.
pub const PRINCIPAL_HEADER: &str = "x-idemspec-principal";

const PRINCIPAL: HeaderName = HeaderName::from_static(PRINCIPAL_HEADER);

/// How long an upstream may take to finish a TLS handshake it accepted the connection for: as
/// long as the runner's own preflight waits. A stalled upstream gets a 502 naming it, not a
/// request held forever.
pub(crate) const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Which client certificate an upstream connection shows: 0 [`UpstreamTls::client_identity`]
/// (none without one), `i` the `i`-th principal's (in [`UpstreamTls::identities`]' order). A request carries it in its extensions when it is
/// not 0; an idle upstream connection is reused only by a request of the same identity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Identity(pub(crate) usize);

impl Identity {
    /// A request's identity: the one its extensions carry, else none.
    pub(crate) fn of<B>(req: &http::Request<B>) -> Self {
        req.extensions()
            .get::<Identity>()
            .copied()
            .unwrap_or_default()
    }
}

/// How the proxy speaks TLS to its upstream.
pub(crate) struct Originate {
    name: ServerName<'static>,
    /// One per identity: `[0]` shows the default certificate, or none.
    connectors: Vec<TlsConnector>,
    /// A principal's name to its identity.
    principals: HashMap<String, Identity>,
    /// Where the user sets what a handshake failure's words advise.
    advice: idemspec_tls::Advice,
}

impl std::fmt::Debug for Originate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Originate")
            .field("name", &self.name)
            .field("principals", &self.principals)
            .finish_non_exhaustive()
    }
}

impl Originate {
    /// TLS to `host` (the upstream URL's host) with `tls`: every config built now, so a bad file
    /// fails the start, not a request.
    pub(crate) fn new(host: &str, tls: &UpstreamTls) -> Result<Self, ProxyError> {
        let name = tls.trust.server_name_for(host).map_err(ProxyError::Tls)?;
        let default = (tls.configs)
            .client_config(&tls.trust, tls.client_identity.as_ref())
            .map_err(ProxyError::Tls)?;
        let mut connectors = vec![TlsConnector::from(default)];
        let mut principals = HashMap::new();
        for (principal, files) in &tls.identities {
            let config = (tls.configs)
                .client_config(&tls.trust, Some(files))
                .map_err(ProxyError::Tls)?;
            principals.insert(principal.clone(), Identity(connectors.len()));
            connectors.push(TlsConnector::from(config));
        }
        Ok(Self {
            name,
            connectors,
            principals,
            advice: tls.advice,
        })
    }

    /// Where the user sets what a handshake failure's words advise.
    pub(crate) fn advice(&self) -> idemspec_tls::Advice {
        self.advice
    }

    /// The identity a request head asks for: its principal's, or the default one for a
    /// principal without one (or no `x-idemspec-principal`).
    pub(crate) fn identity(&self, headers: &HeaderMap) -> Identity {
        headers
            .get(PRINCIPAL)
            .and_then(|v| v.to_str().ok())
            .and_then(|name| self.principals.get(name.trim()))
            .copied()
            .unwrap_or_default()
    }

    /// The TLS handshake over `tcp`, showing `identity`'s certificate if asked for one, within
    /// [`HANDSHAKE_TIMEOUT`].
    ///
    /// # Errors
    /// The handshake failed, or an upstream that accepted the connection did not finish it in
    /// time (`TimedOut`, saying so).
    pub(crate) async fn connect(
        &self,
        tcp: TcpStream,
        identity: Identity,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let connector = self
            .connectors
            .get(identity.0)
            .unwrap_or(&self.connectors[0]);
        let handshake = connector.connect(self.name.clone(), tcp);
        tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
            .await
            .unwrap_or_else(|_| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "the upstream accepted the connection but did not finish the TLS \
                         handshake within {} s: does its port speak TLS?",
                        HANDSHAKE_TIMEOUT.as_secs()
                    ),
                ))
            })
    }
}
