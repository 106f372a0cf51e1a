#![doc = include_str!("../README.md")]

mod analyze;
mod cache;
mod classify;
mod config;
mod error;
pub mod exec;
#[doc(hidden)]
pub mod fuzz;
mod git;
mod judge;
mod limits;
mod sed;
mod verdict;
mod words;

pub use analyze::{Analyzer, simple_commands};
pub use cache::CachedAnalyzer;
pub use config::BashConfig;
pub use error::ParseError;
pub use exec::{
    Confinement, ConfinementReport, ExecConfig, ExecError, ExecRequest, ExecResult, LandlockReport,
    LandlockState, Runner, trampoline_main,
};
pub use judge::{PathAccess, PathJudge, PathVerdict};
pub use verdict::{Decision, Finding, Verdict};
