//! Side-effect sub-keys derived from the idempotency record.
//!
//! Every downstream effect of a request is keyed by `H(principal, endpoint, key, nonce, purpose)`
//! (purposes `alloc`, `lease`, `boot`, `worker`, `reboot`; `nonce` is the record's, kept across its
//! retries), and each effect is "do or return the existing one", so a retry after a partial failure
//! resumes instead of repeating (the article: "side effects converge").

use sha2::{Digest, Sha256};

/// The seed of one operation's sub-keys, passed to handlers in request extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpSeed {
    bytes: [u8; 32],
    /// No side effect keyed by this seed can exist yet (a random seed, or one salted with the nonce of
    /// a record this request just created): the fleet skips looking for what a previous attempt did.
    fresh: bool,
}

impl OpSeed {
    /// The seed of the record (principal, endpoint, key): every attempt of it derives the same sub-keys.
    pub fn derive(principal: &str, endpoint: &str, key: &str) -> Self {
        let mut h = Sha256::new();
        for part in [principal, endpoint, key] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        Self {
            bytes: h.finalize().into(),
            fresh: false,
        }
    }

    /// This seed mixed with `salt` (the record's nonce: one operation's attempts share it; a key reused
    /// after its record expired is a new operation with new sub-keys).
    pub fn salted(&self, salt: &str) -> Self {
        let mut h = Sha256::new();
        h.update(self.bytes);
        h.update(salt.as_bytes());
        Self {
            bytes: h.finalize().into(),
            fresh: self.fresh,
        }
    }

    /// This seed, marked as the first attempt of its operation (the record's nonce was just made).
    pub fn first_attempt(self) -> Self {
        Self {
            fresh: true,
            ..self
        }
    }

    /// Whether no side effect keyed by this seed can exist yet: a random seed, or one marked
    /// [`OpSeed::first_attempt`]. A retry's seed is never fresh.
    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// A fresh random seed, for requests without a key (each is a new operation).
    pub fn random() -> Self {
        Self {
            bytes: rand::random(),
            fresh: true,
        }
    }

    /// The sub-key for `purpose`, as 24 hex digits.
    pub fn sub_key(&self, purpose: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.bytes);
        h.update(purpose.as_bytes());
        hex::encode(&h.finalize()[..12])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_is_stable_and_scoped() {
        let a = OpSeed::derive("alice", "POST /v1/workers", "k1");
        assert_eq!(
            a.sub_key("lease"),
            OpSeed::derive("alice", "POST /v1/workers", "k1").sub_key("lease")
        );
        assert_ne!(a.sub_key("lease"), a.sub_key("alloc"));
        assert_ne!(a, OpSeed::derive("bob", "POST /v1/workers", "k1"));
        assert_ne!(
            OpSeed::derive("ab", "c", "k"),
            OpSeed::derive("a", "bc", "k")
        );
        assert_ne!(OpSeed::random(), OpSeed::random());
    }

    #[test]
    fn only_a_first_attempt_is_fresh() {
        let derived = OpSeed::derive("alice", "POST /v1/workers", "k1");
        assert!(
            !derived.is_fresh(),
            "a retry derives the same seed: it may resume"
        );
        assert!(!derived.salted("nonce").is_fresh());
        let first = derived.salted("nonce").first_attempt();
        assert!(first.is_fresh());
        assert_eq!(
            first.sub_key("alloc"),
            derived.salted("nonce").sub_key("alloc"),
            "freshness does not change the sub-keys"
        );
        assert!(OpSeed::random().is_fresh());
        assert!(OpSeed::random().salted("nonce").is_fresh());
    }
}
