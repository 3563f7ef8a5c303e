//! The HTTP client the runner drives targets with: every request becomes an [`Exchange`] holding the
//! full response (for comparisons) and the [`Evidence`](crate::model::Evidence) record reports show.

mod client;
mod exchange;
mod parse;
mod session;
mod sign;
pub mod xml;

pub use client::{excerpt, Client, MAX_RESPONSE_BODY};
pub use exchange::{Exchange, RequestSpec, SentMark};
pub use parse::MAX_VALUES;
pub use session::Session;
pub use sign::{host_of, sign_request};
