//! `agent-guard lint`: find rules that cannot do what their author meant.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use perm_rules::{ConfigLayer, Origin, PermissionChecker, PermissionRule, RuleKind};
use serde::Serialize;

use crate::front::{KNOWN_TOOLS, absolutize, sandbox_config};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Checks:
  shadowed           an allow (or ask) rule that a broader deny (or ask) rule always beats:
                     Deny > Ask > Allow whatever the order, so it can never decide
  duplicate          the same rule twice in one list
  allows-everything  an allow rule for a shell, interpreter or wrapper (`run_bash(python:*)`,
                     `run_bash(bash:*)`, `run_bash(env:*)`, `run_bash(xargs:*)`, ...), for all of
                     `run_bash`, or for every tool (`*`): it allows arbitrary code
  unknown-tool       a tool name that is not one of the guard's tools (or `mcp__*`)
  outside-roots      an allow rule for an absolute path outside every [sandbox] root: the
                     sandbox refuses (or asks about) it whatever the rule says

Only the file's rules are linted (`AGENT_PERMISSIONS_*` are ignored), so the verdict is the
same on every machine.

Exit status:
  0  no problems found
  1  problems found (listed on stdout)
  2  a bad policy file";

/// Arguments of `agent-guard lint`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The policy file to lint.
    pub policy: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One problem with one rule.
#[derive(Debug, Serialize)]
struct Problem {
    /// The rule's place in the merged rule list, to report in policy order.
    #[serde(skip)]
    index: usize,
    code: &'static str,
    rule: String,
    kind: RuleKind,
    source: String,
    message: String,
}

/// Programs that run whatever code or command their arguments name.
const RUNS_ANYTHING: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "python", "python2", "python3",
    "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua", "awk", "gawk", "mawk", "env",
    "xargs", "eval", "exec", "command", "builtin", "nohup", "nice", "timeout", "time", "watch",
    "sudo", "doas", "su", "npx", "busybox", "find", "parallel", "make",
];

/// Claude Code's tool names, pointing to the guard's, for `did you mean`.
const CLAUDE_NAMES: &[(&str, &str)] = &[
    ("Bash", "run_bash"),
    ("Read", "read_file"),
    ("Write", "file_write"),
    ("Edit", "file_edit"),
    ("MultiEdit", "file_edit"),
    ("Glob", "glob_files"),
    ("Grep", "grep_files"),
    ("WebFetch", "web_fetch"),
    ("Task", "subagent"),
    ("TodoWrite", "todo_write"),
];

const PATH_TOOLS: &[&str] = &[
    "read_file",
    "file_write",
    "file_edit",
    "glob_files",
    "grep_files",
];

/// `*` and `?` glob matching over a tool name (enough for tool-name patterns).
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.split_first(), name.split_first()) {
        (None, None) => true,
        (Some((b'*', rest)), _) => {
            glob_match(rest, name)
                || name
                    .split_first()
                    .is_some_and(|(_, n)| glob_match(pattern, n))
        }
        (Some((b'?', rest)), Some((_, n))) => glob_match(rest, n),
        (Some((p, rest)), Some((c, n))) => p == c && glob_match(rest, n),
        _ => false,
    }
}

fn tool_covers(broad: &PermissionRule, narrow: &PermissionRule) -> bool {
    if broad.is_tool_glob() {
        if narrow.is_tool_glob() {
            return broad.tool_pattern() == "*" || broad.tool_pattern() == narrow.tool_pattern();
        }
        return glob_match(
            broad.tool_pattern().as_bytes(),
            narrow.tool_pattern().as_bytes(),
        );
    }
    !narrow.is_tool_glob() && broad.tool_pattern() == narrow.tool_pattern()
}

/// A bash specifier as (words, is-prefix).
fn bash_spec(spec: &str) -> (Vec<&str>, bool) {
    let (text, prefix) = match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
        Some(p) => (p, true),
        None => (spec, false),
    };
    (text.split_whitespace().collect(), prefix)
}

/// Whether every call `narrow`'s content matches is matched by `broad`'s content too.
fn content_covers(broad: &PermissionRule, narrow: &PermissionRule) -> bool {
    let Some(b) = broad.specifier() else {
        return true;
    };
    let Some(n) = narrow.specifier() else {
        return false;
    };
    if b == n {
        return true;
    }
    if narrow.tool_pattern() == "run_bash" && !narrow.is_tool_glob() {
        let (bw, bp) = bash_spec(b);
        let (nw, _) = bash_spec(n);
        return bp && nw.len() >= bw.len() && nw.iter().zip(&bw).all(|(x, y)| x == y);
    }
    if PATH_TOOLS.contains(&narrow.tool_pattern()) {
        if b == "**" || b == "/**" && n.starts_with('/') {
            return true;
        }
        if let Some(dir) = b.strip_suffix("/**")
            && !dir.contains(['*', '?', '[', '{'])
        {
            return n
                .strip_prefix(dir)
                .is_some_and(|rest| rest.starts_with('/'));
        }
    }
    false
}

fn problem(index: usize, code: &'static str, rule: &PermissionRule, message: String) -> Problem {
    Problem {
        index,
        code,
        rule: rule.text().to_owned(),
        kind: rule.kind(),
        source: rule.source().to_string(),
        message,
    }
}

fn shadowing(rules: &[&PermissionRule], out: &mut Vec<Problem>) {
    for (i, narrow) in rules.iter().enumerate() {
        if narrow.kind() == RuleKind::Deny {
            continue;
        }
        let shadow = rules.iter().enumerate().find(|(j, broad)| {
            *j != i
                && broad.kind() > narrow.kind()
                && tool_covers(broad, narrow)
                && content_covers(broad, narrow)
        });
        if let Some((_, broad)) = shadow {
            out.push(problem(
                i,
                "shadowed",
                narrow,
                format!(
                    "can never decide: {} always wins ({} beats {} whatever the order)",
                    broad.describe(),
                    broad.kind().as_str(),
                    narrow.kind().as_str()
                ),
            ));
            continue;
        }
        let duplicate = rules
            .iter()
            .take(i)
            .find(|r| r.kind() == narrow.kind() && r.text() == narrow.text());
        if let Some(first) = duplicate {
            out.push(problem(
                i,
                "duplicate",
                narrow,
                format!("repeats {}", first.describe()),
            ));
        }
    }
}

fn allows_everything(rule: &PermissionRule) -> Option<String> {
    if rule.kind() != RuleKind::Allow {
        return None;
    }
    if rule.is_tool_glob() && rule.tool_pattern() == "*" && rule.specifier().is_none() {
        return Some("allows every tool, including `run_bash` and every MCP tool".to_owned());
    }
    if !glob_match(rule.tool_pattern().as_bytes(), b"run_bash") {
        return None;
    }
    let Some(spec) = rule.specifier() else {
        return Some(
            "allows every bash command; allow command prefixes instead (`run_bash(git diff:*)`)"
                .to_owned(),
        );
    };
    let (words, prefix) = bash_spec(spec);
    let program = words.first().map(|w| w.rsplit('/').next().unwrap_or(w))?;
    if !RUNS_ANYTHING.contains(&program) {
        return None;
    }
    // `python3 -m pytest:*` narrows what runs; `python:*` or `bash -c:*` does not.
    let code_flag = words
        .get(1)
        .is_some_and(|w| matches!(*w, "-c" | "-e" | "--eval" | "-p" | "--print" | "-exec"));
    let open = prefix && (words.len() == 1 || (words.len() == 2 && code_flag));
    open.then(|| {
        format!("`{program}` runs whatever its arguments say, so this allows arbitrary code; allow the exact commands instead")
    })
}

fn unknown_tool(rule: &PermissionRule) -> Option<String> {
    let pattern = rule.tool_pattern();
    if pattern.starts_with("mcp__") {
        return None;
    }
    if rule.is_tool_glob() {
        let hits = KNOWN_TOOLS
            .iter()
            .any(|t| glob_match(pattern.as_bytes(), t.as_bytes()));
        return (!hits)
            .then(|| format!("the tool pattern `{pattern}` matches none of the guard's tools"));
    }
    if KNOWN_TOOLS.contains(&pattern) {
        return None;
    }
    let hint = CLAUDE_NAMES
        .iter()
        .find(|(claude, _)| *claude == pattern)
        .map(|(_, guard)| {
            format!(
                "; did you mean `{guard}`? (claude-hook maps Claude Code's `{pattern}` onto it)"
            )
        })
        .unwrap_or_default();
    Some(format!(
        "`{pattern}` is not one of the guard's tools ({}){hint}",
        KNOWN_TOOLS.join(", ")
    ))
}

fn outside_roots(rule: &PermissionRule, roots: &[PathBuf], home: Option<&Path>) -> Option<String> {
    if rule.kind() != RuleKind::Allow || !PATH_TOOLS.contains(&rule.tool_pattern()) {
        return None;
    }
    let spec = rule.specifier()?;
    let literal: String = spec
        .chars()
        .take_while(|c| !matches!(c, '*' | '?' | '[' | '{'))
        .collect();
    let base = if let Some(rest) = literal.strip_prefix("~/") {
        home?.join(rest)
    } else if literal.starts_with('/') {
        PathBuf::from(&literal)
    } else {
        // `./x`, `x/y` and `**/x` are relative to the cwd or match anywhere.
        return None;
    };
    let base = absolutize(Path::new("/"), &base.display().to_string());
    let inside = roots
        .iter()
        .any(|root| base.starts_with(root) || root.starts_with(&base));
    (!inside).then(|| {
        let list: Vec<String> = roots.iter().map(|r| format!("`{}`", r.display())).collect();
        format!("`{spec}` is outside every sandbox root ({}); the sandbox refuses or asks whatever this rule says", list.join(", "))
    })
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_inner(args).map_err(crate::front::one_line)
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let policy = Policy::load(Some(&args.policy))?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    // The file alone: `AGENT_PERMISSIONS_*` of whoever runs the lint must not change its verdict.
    let layer = ConfigLayer::parse(Origin::Project, &policy.source_name(), &policy.text)?;
    let checker = PermissionChecker::from_config(&[layer], &HashMap::new())?;
    let sandbox = sandbox_config(&policy);
    let mut roots: Vec<PathBuf> = sandbox
        .roots
        .iter()
        .chain(&sandbox.read_only_roots)
        .map(|r| absolutize(&cwd, &r.display().to_string()))
        .collect();
    if roots.is_empty() {
        roots.push(cwd.clone());
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let rules: Vec<&PermissionRule> = checker.rules().collect();
    let mut problems = Vec::new();
    shadowing(&rules, &mut problems);
    for (i, rule) in rules.iter().enumerate() {
        if let Some(message) = allows_everything(rule) {
            problems.push(problem(i, "allows-everything", rule, message));
        }
        if let Some(message) = unknown_tool(rule) {
            problems.push(problem(i, "unknown-tool", rule, message));
        }
        if let Some(message) = outside_roots(rule, &roots, home.as_deref()) {
            problems.push(problem(i, "outside-roots", rule, message));
        }
    }
    problems.sort_by_key(|p| p.index);
    if args.json {
        let doc = serde_json::json!({
            "policy": policy.source_name(),
            "rules": rules.len(),
            "problems": problems,
        });
        println!("{}", serde_json::to_string(&doc)?);
    } else {
        for p in &problems {
            println!(
                "{}: {} rule `{}`: {}: {}",
                p.source,
                p.kind.as_str(),
                p.rule,
                p.code,
                p.message
            );
        }
        match problems.len() {
            0 => println!(
                "{}: {} rules, no problems",
                policy.source_name(),
                rules.len()
            ),
            n => println!(
                "{}: {} rules, {n} problem(s)",
                policy.source_name(),
                rules.len()
            ),
        }
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use perm_rules::RuleSource;

    fn rule(kind: RuleKind, text: &str) -> PermissionRule {
        PermissionRule::parse(kind, text, RuleSource::Api).unwrap()
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match(b"run_*", b"run_bash"));
        assert!(glob_match(b"*", b"x"));
        assert!(!glob_match(b"mcp__*", b"run_bash"));
        assert!(glob_match(b"r?ad_file", b"read_file"));
    }

    #[test]
    fn coverage() {
        let deny_bash = rule(RuleKind::Deny, "run_bash");
        let allow_git = rule(RuleKind::Allow, "run_bash(git:*)");
        assert!(tool_covers(&deny_bash, &allow_git) && content_covers(&deny_bash, &allow_git));
        let ask_git = rule(RuleKind::Ask, "run_bash(git:*)");
        let allow_diff = rule(RuleKind::Allow, "run_bash(git diff --stat)");
        assert!(content_covers(&ask_git, &allow_diff));
        let ask_gitx = rule(RuleKind::Ask, "run_bash(git push:*)");
        assert!(!content_covers(&ask_gitx, &allow_diff));
        let deny_etc = rule(RuleKind::Deny, "file_write(/etc/**)");
        let allow_etc = rule(RuleKind::Allow, "file_write(/etc/hosts)");
        assert!(content_covers(&deny_etc, &allow_etc));
        assert!(!content_covers(&allow_etc, &deny_etc));
    }

    #[test]
    fn interpreters() {
        assert!(allows_everything(&rule(RuleKind::Allow, "run_bash(python:*)")).is_some());
        assert!(allows_everything(&rule(RuleKind::Allow, "run_bash(bash -c:*)")).is_some());
        assert!(allows_everything(&rule(RuleKind::Allow, "run_bash")).is_some());
        assert!(
            allows_everything(&rule(RuleKind::Allow, "run_bash(python3 -m pytest:*)")).is_none()
        );
        assert!(allows_everything(&rule(RuleKind::Allow, "run_bash(git diff:*)")).is_none());
        assert!(allows_everything(&rule(RuleKind::Deny, "run_bash(python:*)")).is_none());
    }
}
