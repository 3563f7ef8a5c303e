//! Target profiles: how any API under test is described (base URLs, principals, operations, hooks,
//! side-effect probe) and the idempotency contract it claims (a preset plus overrides). Each part
//! is one file with its rules beside it; `target.rs` holds the whole profile and asks them.

mod checks_at_once;
pub mod content_coding;
mod contract;
mod create;
mod documented;
mod env;
mod file;
mod hooks;
mod key_at;
mod long_running;
mod method;
mod operations;
mod principal;
mod process;
mod resource_path;
mod side_effects;
mod sign;
mod target;
mod tls;
mod token;
mod wire;

pub use checks_at_once::{ChecksAtOnce, MAX_CHECKS_AT_ONCE};
pub use contract::{
    BodyCondition, Contract, ContractSpec, Covered, ErrorShape, InFlightWait, InFlightWaitSpec,
    KeyForm, MismatchAnswer, Preset, Promise, Refusal, ReplayBody, ReplayBy, Replays, Retention,
    RetentionCase, StoredStatus, MAX_IN_FLIGHT_WAIT, MAX_KEY_MAX_LEN, WAIT_SLACK,
};
pub use create::{CreateOp, SlowVariant, Variant, Variants};
pub use documented::{check_known as check_documented_checks, Deviation, MAX_SAYS};
pub use env::expand_env;
pub(crate) use file::load_profile;
pub use hooks::{HookSpec, Hooks, HttpHook};
pub use key_at::KeyAt;
pub use long_running::{LongRunningOperation, PollAt};
pub use operations::{id_in_body, ActionOp, GetOp, KeyUse, ListOp, Operations, PathOp, ID_IN_BODY};
pub use principal::{CookieScope, Login, Principal, SessionStart};
pub use process::{ProcessSpec, Readiness};
pub use resource_path::ResourcePath;
pub use side_effects::SideEffectsProbe;
pub use sign::{AwsSigV4, Sign};
pub use target::TargetProfile;
pub use tls::{profile_dir, resolve, shared_certificates, ClientIdentity, TlsSpec};
pub use token::{ClientCredentials, Token, MIN_TOKEN_EVERY};
pub use wire::{check_header, check_url};
