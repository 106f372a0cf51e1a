#![doc = include_str!("../README.md")]

mod analyze;
mod awk;
mod backstop;
mod build_opts;
mod builtins;
mod cache;
mod classify;
mod config;
mod destination;
mod error;
pub mod exec;
mod fastlex;
mod fastparse;
#[doc(hidden)]
pub mod fuzz;
mod judge;
mod limits;
mod pathglob;
mod sed;
mod stores;
mod table;
mod vars;
mod vartable;
mod verdict;
mod walker;
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
        crate::vartable::VAR_EFFECTS
            .iter()
            .map(|e| e.pattern)
            .collect()
    }

    /// The long option names of a command's table entry (its top level), for the test that
    /// compares them with the program's own `--help`; `None` when the table has no entry.
    pub fn long_options(command: &str) -> Option<Vec<String>> {
        let spec = crate::table::spec(command)?;
        Some(spec.opts.iter().filter_map(|o| o.long.clone()).collect())
    }

    /// Every `(command, option)` of the command table whose option has an effect (reads,
    /// writes, runs, lists files, keeps running, asks ...: anything but only giving a
    /// pattern), written as `--long` or `-s`; primaries as `-name`, keys as `key`.
    pub fn effect_options() -> Vec<(String, String)> {
        let mut out = Vec::new();
        fn specs<'a>(
            spec: &'a crate::table::CommandSpec,
            out: &mut Vec<&'a crate::table::CommandSpec>,
        ) {
            out.push(spec);
            for s in spec.subs.values() {
                specs(s, out);
            }
        }
        for (name, top) in crate::table::table().into_iter().flatten() {
            let mut all = Vec::new();
            specs(top, &mut all);
            for spec in all {
                for o in &spec.opts {
                    if o.effects.any() {
                        out.push((name.clone(), o.display()));
                    }
                }
                for p in &spec.primaries {
                    if p.effects.any() {
                        out.push((name.clone(), format!("-{}", p.name.trim_end_matches('*'))));
                    }
                }
                for (key, e) in &spec.keys {
                    if e.read || e.write {
                        out.push((name.clone(), key.clone()));
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Every command of the command table and every subcommand, as `git` and `git log`
    /// (the `*` fallback is `git *`), each needing a corpus case.
    pub fn table_entries() -> Vec<String> {
        fn walk(prefix: &str, spec: &crate::table::CommandSpec, out: &mut Vec<String>) {
            out.push(prefix.to_owned());
            for (name, s) in &spec.subs {
                walk(&format!("{prefix} {name}"), s, out);
            }
        }
        let mut out = Vec::new();
        for (name, spec) in crate::table::table().into_iter().flatten() {
            walk(name, spec, &mut out);
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
    LandlockState, Runner, StartedTrampoline, Trampoline, trampoline_main, trampoline_status,
};
pub use judge::{PathAccess, PathJudge, PathVerdict};
pub use verdict::{ASK_KINDS, AskKind, AskKindEntry, Decision, Finding, Verdict, ask_kind};
