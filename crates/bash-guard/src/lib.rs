#![doc = include_str!("../README.md")]

mod analyze;
mod awk;
mod backstop;
mod builtins;
mod cache;
mod classify;
mod config;
mod destination;
mod error;
pub mod exec;
#[doc(hidden)]
pub mod fuzz;
mod git;
mod judge;
mod limits;
mod sed;
mod table;
mod vars;
mod verdict;
mod words;

pub use analyze::{Analyzer, simple_commands};

/// What catastrophic command `text` holds (a recursive removal or permission change of `/`,
/// the home directory or the project, a write onto a device, a fork bomb; in shell, Python,
/// Perl, Ruby, Node or PowerShell spellings), found without parsing it. This is the backstop
/// the analyzer runs on code it cannot read; callers with code in another language (a
/// PowerShell command, a REPL snippet) run it too.
pub fn catastrophic_text(text: &str) -> Option<&'static str> {
    backstop::catastrophic(text)
}

/// The knowledge tables, listed for the tidy tests that require a corpus case per entry.
#[doc(hidden)]
pub mod tidy {
    /// Every pattern of the code-bearing variable table.
    pub fn variable_patterns() -> Vec<&'static str> {
        crate::vars::VAR_EFFECTS.iter().map(|e| e.pattern).collect()
    }

    /// Every `(command, option)` of the command table whose option has an effect (reads,
    /// writes, runs, lists files, keeps running, asks), written as `--long` or `-s`.
    pub fn effect_options() -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (name, spec) in crate::table::table().into_iter().flatten() {
            for o in &spec.opts {
                let e = o.effects;
                if e.read || e.write || e.exec || e.file_list || e.long_running || e.ask {
                    out.push((name.clone(), o.display()));
                }
            }
        }
        out.sort();
        out
    }

    /// Whether the command table parsed.
    pub fn table_parses() -> bool {
        crate::table::table().is_some()
    }
}
pub use cache::{CachedAnalyzer, simple_commands_cached};
pub use config::BashConfig;
pub use error::ParseError;
pub use exec::{
    Confinement, ConfinementReport, ExecConfig, ExecError, ExecRequest, ExecResult, LandlockReport,
    LandlockState, Runner, trampoline_main,
};
pub use judge::{PathAccess, PathJudge, PathVerdict};
pub use verdict::{Decision, Finding, Verdict};
