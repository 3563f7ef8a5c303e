//! The Idempotency-Key layer: key parsing, fingerprint, record encoding, side-effect sub-keys and the
//! middleware that runs the state machine (none → in flight → completed | failed).

mod after_answer;
mod completion;
mod config;
mod decide;
mod fingerprint;
mod key;
mod layer;
mod record;
mod rules;
mod seed;
mod unit_of_work;

pub use after_answer::{AfterAnswer, KeyRelease};
pub use config::{AnswerFor, ClaimSite, IdempotencyConfig, LayerState};
pub use fingerprint::Fingerprint;
pub use key::{IdempotencyKey, KeyError, IDEMPOTENCY_KEY, MAX_KEY_LEN};
pub use layer::enforce;
pub use record::{is_storable, COMPRESS_ABOVE_BYTES};
pub use rules::{
    ArticleRules, Bend, Bent, ClaimOf, ClaimStores, Claimed, Keyed, OnInFlight, OnMismatch, Rules,
};
pub use seed::OpSeed;
pub use unit_of_work::UnitOfWork;
