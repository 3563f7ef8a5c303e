//! Client configs built once and shared: [`ConfigCache`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rustls::ClientConfig;

use crate::{client_config, IdentityFiles, TlsError, TrustOptions};

/// Client configs built once per trust and identity, shared by every clone of the cache: a run's
/// fault proxies (one per check and base URL) and its clients use one config per identity
/// instead of rebuilding it per check (reading the files again, parsing the platform's roots
/// again). Files are read at the first build; a file changed later is not read again through the
/// same cache. Two caches always compare equal: a cache is no setting.
#[derive(Clone, Default)]
pub struct ConfigCache {
    inner: Arc<Mutex<Built>>,
}

/// Key of one config: `(trust, identity)`.
type Key = (TrustOptions, Option<IdentityFiles>);

#[derive(Default)]
struct Built {
    configs: HashMap<Key, Arc<ClientConfig>>,
    /// How many configs were built (a failed build counts none).
    builds: usize,
}

impl ConfigCache {
    /// [`client_config`] for `trust` and `identity`, built at the first call for them and the
    /// same `Arc` after.
    ///
    /// # Errors
    /// As [`client_config`]; a failed build is not kept, the next call tries again.
    pub fn client_config(
        &self,
        trust: &TrustOptions,
        identity: Option<&IdentityFiles>,
    ) -> Result<Arc<ClientConfig>, TlsError> {
        let key = (trust.clone(), identity.cloned());
        let mut built = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(config) = built.configs.get(&key) {
            return Ok(config.clone());
        }
        let config = client_config(trust, identity)?;
        built.builds += 1;
        built.configs.insert(key, config.clone());
        Ok(config)
    }

    /// How many configs this cache (and its clones) built.
    pub fn builds(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .builds
    }
}

impl std::fmt::Debug for ConfigCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigCache")
            .field("builds", &self.builds())
            .finish()
    }
}

impl PartialEq for ConfigCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ConfigCache {}
