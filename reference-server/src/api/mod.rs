//! The HTTP API: the public router ([`app`]) and the admin router ([`admin_app`]). Problem bodies
//! and body reading are the edge's ([`crate::edge`]).

mod admin;
mod operations;
mod path_id;
mod router;
mod workers;

pub use admin::admin_app;
pub use router::app;
