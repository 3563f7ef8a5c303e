//! A test API's TLS edge: its connections served over HTTPS with a throwaway CA's certificate,
//! and, for mutual TLS, the verified client certificate naming the principal (the request's
//! `X-Api-Key` is replaced by the key of the principal the certificate belongs to, so a request
//! is whoever its certificate says, whatever headers it carries).

use std::sync::Arc;

use axum::http::HeaderValue;
use axum::Router;
use hyper::service::Service as _;
use idemspec_tls::rustls::pki_types::pem::PemObject;
use idemspec_tls::rustls::pki_types::CertificateDer;
use idemspec_tls::tokio_rustls::TlsAcceptor;
use idemspec_tls::ThrowawayCa;
use tokio::net::TcpStream;

/// How an API serves TLS: its acceptor, and which client certificate is which principal.
pub struct TlsEdge {
    acceptor: TlsAcceptor,
    /// A client certificate (DER) and the API key of the principal it names.
    principals: Vec<(CertificateDer<'static>, HeaderValue)>,
}

impl TlsEdge {
    /// HTTPS with `ca`'s certificate for `localhost` and `127.0.0.1`; with `client_certs`
    /// (`(certificate PEM, API key)` pairs), client certificates issued by `ca` are required and
    /// each names the principal of its key.
    pub fn new(ca: &ThrowawayCa, client_certs: &[(String, &str)]) -> Arc<Self> {
        let (cert, key) = ca
            .server_cert(&["localhost", "127.0.0.1"])
            .expect("a server certificate");
        Self::with_cert(ca, &(cert, key), client_certs)
    }

    /// As [`TlsEdge::new`], presenting `cert` (a `(certificate, key)` PEM pair) instead: an
    /// expired one, or one for other names.
    pub fn with_cert(
        ca: &ThrowawayCa,
        (cert, key): &(String, String),
        client_certs: &[(String, &str)],
    ) -> Arc<Self> {
        let mutual = !client_certs.is_empty();
        let ca_pem = ca.ca_pem();
        let config = idemspec_tls::server_config_pem(cert, key, mutual.then_some(&*ca_pem), mutual)
            .expect("a server config");
        let principals = client_certs
            .iter()
            .map(|(pem, api_key)| {
                let der =
                    CertificateDer::from_pem_slice(pem.as_bytes()).expect("a PEM certificate");
                (der, HeaderValue::from_str(api_key).expect("a header value"))
            })
            .collect();
        Arc::new(Self {
            acceptor: TlsAcceptor::from(config),
            principals,
        })
    }

    /// Serves one accepted connection: the handshake, then `router` over HTTP/1.1, each request
    /// named by the client certificate where the edge is mutual. A failed handshake closes it.
    pub async fn serve(self: Arc<Self>, stream: TcpStream, router: Router) {
        let Ok(tls) = self.acceptor.accept(stream).await else {
            return;
        };
        let named = tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|leaf| self.principals.iter().find(|(der, _)| der == leaf))
            .map(|(_, key)| key.clone());
        let mutual = !self.principals.is_empty();
        let inner = hyper_util::service::TowerToHyperService::new(router);
        let service = hyper::service::service_fn(move |mut request: hyper::Request<_>| {
            if mutual {
                request.headers_mut().remove("x-api-key");
                if let Some(key) = &named {
                    request.headers_mut().insert("x-api-key", key.clone());
                }
            }
            inner.call(request)
        });
        let io = hyper_util::rt::TokioIo::new(tls);
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, service)
            .await;
    }
}
