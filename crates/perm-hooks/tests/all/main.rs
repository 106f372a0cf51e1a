#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! Behaviour tests of perm-hooks: pipeline semantics, audit log durability, command hooks,
//! secret redaction over its corpus.

mod audit;
mod backends;
mod command;
mod faults;
mod killswitch;
mod ledger;
mod pipeline;
mod redact;
mod sniff;
