#![doc = include_str!("../README.md")]

mod runner;

pub use runner::{DEFAULT_MAX_DEPTH, Error, SubAgentRunner, SubagentType};
