//! The idemspec crate's one integration-test binary.

mod alt_api_cli;
mod ci_action;
mod claims;
mod cli;
mod client;
mod client_tls;
mod contract_reading;
mod flaw_matrix;
mod html_report;
mod layer_policies;
mod layers;
mod lifeline;
mod reach;
mod reference_run;
mod reference_tls;
mod replicas;
mod report;
mod signing;
mod storm_keys;
mod support;
mod tidy;
mod tls;
mod toxiproxy_clients;
mod trust;
mod user_scenarios;
mod verdicts;
