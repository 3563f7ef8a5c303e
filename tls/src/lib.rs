//! TLS for every edge idemspec speaks on, in one place: the trust a client extends
//! ([`TrustOptions`]), the certificate it shows ([`IdentityFiles`]), the configs rustls is given,
//! throwaway certificate authorities for tests and `--tls` runs, and handshake failures told in
//! words that say what to do. rustls on the ring provider; no OpenSSL.
