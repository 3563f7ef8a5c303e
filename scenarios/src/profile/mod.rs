//! Target profiles: how any API under test is described (base URLs, principals, operations, hooks,
//! side-effect probe) and the idempotency contract it claims (a preset plus overrides).

mod contract;
mod env;
mod key_at;
mod resource_path;
mod target;
mod wire;

pub use contract::{
    BodyCondition, Contract, ContractSpec, Covered, KeyForm, MismatchAnswer, Preset, Refusal,
    Replays,
};
pub use env::expand_env;
pub use key_at::KeyAt;
pub use resource_path::ResourcePath;
pub use target::{
    id_in_body, ActionOp, ChecksAtOnce, CookieScope, CreateOp, GetOp, HookSpec, Hooks, HttpHook,
    KeyUse, ListOp, Login, LongRunning, Operations, PathOp, PollAt, Principal, ProcessSpec,
    Readiness, SideEffectsProbe, SlowVariant, TargetProfile, Variant, Variants, ID_IN_BODY,
};
pub use wire::{check_header, check_url};
