//! The request fingerprint: SHA-256 over method, path, query and the raw body bytes.
//!
//! Raw bytes, not a canonical form: canonicalising (re-ordering JSON keys, dropping whitespace) can
//! merge requests the API treats as different. Each part is length-prefixed so that no two different
//! (method, path, query, body) tuples share an input.

use sha2::{Digest, Sha256};

/// A hex-encoded SHA-256 request fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// Fingerprints one request.
    pub fn of(method: &str, path: &str, query: &str, body: &[u8]) -> Self {
        let mut h = Sha256::new();
        for part in [method.as_bytes(), path.as_bytes(), query.as_bytes(), body] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        Self(hex::encode(h.finalize()))
    }

    /// The 64 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn differs_by_each_part() {
        let base = Fingerprint::of("POST", "/v1/workers", "", b"{}");
        assert_ne!(base, Fingerprint::of("PUT", "/v1/workers", "", b"{}"));
        assert_ne!(base, Fingerprint::of("POST", "/v1/workers/x", "", b"{}"));
        assert_ne!(base, Fingerprint::of("POST", "/v1/workers", "a=1", b"{}"));
        assert_ne!(base, Fingerprint::of("POST", "/v1/workers", "", b"{ }"));
        // Framing: moving bytes between parts changes the fingerprint.
        assert_ne!(
            Fingerprint::of("POST", "/a", "b", b""),
            Fingerprint::of("POST", "/ab", "", b"")
        );
    }

    proptest! {
        #[test]
        fn stable(body in proptest::collection::vec(any::<u8>(), 0..512), q in "[a-z=&]{0,20}") {
            prop_assert_eq!(
                Fingerprint::of("POST", "/v1/workers", &q, &body),
                Fingerprint::of("POST", "/v1/workers", &q, &body)
            );
        }
    }
}
