//! The state shared by every handler.

use std::sync::Arc;

use crate::auth::Auth;
use crate::flaw::{Flaw, Flaws};
use crate::fleet::{CreateMode, Fleet, Operations};
use crate::idempotency::{ClaimSite, IdempotencyConfig, LayerState, Rules};
use crate::injection::Injections;
use crate::metrics::Metrics;
use crate::store::Stores;

/// Shared state (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    /// The database, by domain.
    pub stores: Stores,
    /// The fleet (pool, leases, hypervisor).
    pub fleet: Arc<Fleet>,
    /// The asynchronous creates' operations.
    pub operations: Arc<Operations>,
    /// How a create answers.
    pub creates: CreateMode,
    /// The idempotency layer's settings.
    pub idempotency: Arc<IdempotencyConfig>,
    /// The rules the idempotency layer follows (the contract, bent by `flaws`).
    pub rules: Arc<dyn Rules>,
    /// Deliberate flaws (the router reads the wrappers among them).
    pub flaws: Flaws,
    /// Token checking.
    pub auth: Arc<Auth>,
    /// What the admin API injected (failing, panicking or hanging boots, a crash point).
    pub injections: Arc<Injections>,
    /// The counters and histograms `GET /metrics` serves.
    pub metrics: Arc<Metrics>,
}

impl AppState {
    /// Whether `flaw` is on.
    pub fn has(&self, flaw: Flaw) -> bool {
        self.flaws.has(flaw)
    }

    /// What the idempotency layer works with on a route whose claim is written at `site`, out of
    /// the shared state.
    pub fn idempotency_layer(&self, site: ClaimSite) -> LayerState {
        LayerState {
            config: self.idempotency.clone(),
            rules: self.rules.clone(),
            records: self.stores.records.clone(),
            unguarded: self.stores.unguarded.clone(),
            injections: self.injections.clone(),
            metrics: self.metrics.clone(),
            site,
        }
    }
}
