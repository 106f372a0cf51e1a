#![doc = include_str!("../README.md")]

mod analyze;
mod builtins;
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
mod vars;
mod verdict;
mod words;

pub use analyze::{Analyzer, simple_commands};

/// The knowledge tables, listed for the tidy tests that require a corpus case per entry.
#[doc(hidden)]
pub mod tidy {
    /// Every pattern of the code-bearing variable table.
    pub fn variable_patterns() -> Vec<&'static str> {
        crate::vars::VAR_EFFECTS.iter().map(|e| e.pattern).collect()
    }
}
pub use cache::CachedAnalyzer;
pub use config::BashConfig;
pub use error::ParseError;
pub use exec::{
    Confinement, ConfinementReport, ExecConfig, ExecError, ExecRequest, ExecResult, LandlockReport,
    LandlockState, Runner, trampoline_main,
};
pub use judge::{PathAccess, PathJudge, PathVerdict};
pub use verdict::{Decision, Finding, Verdict};
