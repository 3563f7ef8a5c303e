//! The HTTP client the runner drives targets with: every request becomes an [`Exchange`] holding the
//! full response (for comparisons) and the [`Evidence`](crate::model::Evidence) record reports show.

mod client;
mod exchange;
mod parse;
mod session;
mod sign;
mod tls;
pub mod xml;

pub use client::{
    client_builder, excerpt, tls_failure, Client, MAX_RESPONSE_BODY, PRINCIPAL_HEADER, TLS_FAILED,
};
pub use exchange::{Exchange, RequestSpec, SentMark};
pub(crate) use parse::too_deep as json_too_deep;
pub use parse::{MAX_JSON_DEPTH, MAX_VALUES};
pub use session::Session;
pub use sign::{host_of, sign_request};
pub use tls::TlsSettings;
