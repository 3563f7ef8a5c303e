//! The HTTP client the runner drives targets with: every request becomes an [`Exchange`] holding the
//! full response (for comparisons) and the [`Evidence`](crate::model::Evidence) record reports show.

mod client;
mod exchange;
mod parse;
mod session;
mod tls;
pub mod xml;

pub use client::{
    client_builder, excerpt, tls_failure, Client, MAX_RESPONSE_BODY, PRINCIPAL_HEADER,
};
pub use exchange::{Exchange, RequestSpec, SentMark};
pub use parse::MAX_VALUES;
pub use session::Session;
pub use tls::TlsSettings;
