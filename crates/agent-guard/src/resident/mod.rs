//! The resident hook guard: a per-user fork server that judges hook calls handed to it by the
//! small `agent-guard-hook` entry, so a tool call does not pay for starting the whole CLI.

mod report;
pub(crate) mod server;
#[allow(dead_code)] // the entry's half of the wire (its tests run here)
pub(crate) mod wire;

pub(crate) use report::{Note, Wait, exit, hand_wait, hook_process, note};
