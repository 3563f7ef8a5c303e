//! The client certificate a connection's TLS handshake verified, as the listener hands it to every
//! request of that connection (a request extension), for [`crate::auth`] to name a principal by.

use x509_parser::prelude::{FromDer, X509Certificate};

/// What a verified client certificate says of who is asking: its subject's common name (CN), or
/// why it names no one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientCertificate {
    /// The subject's first common name, as a UTF-8 string.
    Named(String),
    /// The certificate names no principal: the reason, in words.
    Unnamed(&'static str),
}

impl ClientCertificate {
    /// Reads the end-entity certificate `der` (DER bytes, already verified by the handshake).
    pub fn from_der(der: &[u8]) -> Self {
        let Ok((_, cert)) = X509Certificate::from_der(der) else {
            return Self::Unnamed("the client certificate could not be read");
        };
        let Some(cn) = cert.subject().iter_common_name().next() else {
            return Self::Unnamed("the client certificate's subject has no common name (CN)");
        };
        match cn.as_str() {
            Ok(name) if !name.trim().is_empty() => Self::Named(name.to_owned()),
            Ok(_) => Self::Unnamed("the client certificate's common name (CN) is empty"),
            Err(_) => Self::Unnamed("the client certificate's common name (CN) is not a string"),
        }
    }
}
