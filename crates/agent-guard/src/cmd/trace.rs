//! The composed evaluation shared by `claude-hook`, `test` and `explain`: one tool call through
//! every layer that applies to it, recorded step by step so a person can see who decided.
//!
//! Layers, in the order they are consulted (the overall decision is the strictest step, and
//! the first step with that decision is the one reported as deciding):
//! 1. `perm-rules`: the policy's `[permissions]` rules and mode (always).
//! 2. `credentials`: built-in credential stores (`~/.ssh/**`, `.env`, `*.pem`, ...) are never
//!    read or written through a path tool, whatever the rules say.
//! 3. `fs-sandbox` for path tools (the session cwd plus the policy's `[sandbox]` roots): a read
//!    or listing outside every root is asked about, a write outside is denied, and so is any
//!    other refusal (protected file, read-only root, unresolvable path).
//! 4. `bash-guard` for `run_bash`: the policy's `[bash]` analysis, with the sandbox judging
//!    every path the command reads or writes.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use agent_core::tools::SandboxJudge;
use anyhow::Context as _;
use bash_guard::{Analyzer, BashConfig, PathAccess, PathJudge, PathVerdict};
use fs_sandbox::{Op, Sandbox, SandboxConfig, SandboxError};
use perm_rules::{Decision, PermissionChecker, PermissionMode};
use serde::Serialize;
use serde_json::Value;

use crate::policy::Policy;
use crate::report::{Reason, Report};

/// The guard's tool names (the seed's tool list).
pub(crate) const KNOWN_TOOLS: &[&str] = &[
    "read_file",
    "file_write",
    "file_edit",
    "glob_files",
    "grep_files",
    "run_bash",
    "ask_user",
    "todo_write",
    "save_memory",
    "compress_context",
    "subagent",
    "bg_task_run",
    "web_fetch",
];

/// Tools that only read (they stay allowed in `plan` mode).
pub(crate) const READ_ONLY_TOOLS: &[&str] = &["read_file", "grep_files", "glob_files", "web_fetch"];

/// One layer's view of the call.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Step {
    /// `perm-rules`, `credentials`, `fs-sandbox`, `bash-guard`.
    pub layer: &'static str,
    /// What the layer was asked, in words.
    pub saw: String,
    pub decision: Decision,
    pub code: String,
    pub message: String,
    /// The deciding rule's text, when a rule decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where that rule came from (`file:line`, an environment variable, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Every layer consulted for one call.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Trace {
    pub tool: String,
    pub mode: String,
    pub steps: Vec<Step>,
}

impl Trace {
    /// The strictest decision of any step; an empty trace fails closed.
    pub fn decision(&self) -> Decision {
        self.steps
            .iter()
            .map(|s| s.decision)
            .max()
            .unwrap_or(Decision::Deny)
    }

    /// The first step that gave the overall decision.
    pub fn deciding(&self) -> Option<&Step> {
        let decision = self.decision();
        self.steps.iter().find(|s| s.decision == decision)
    }

    /// Whether nothing but the configured default decided (no rule, no finding).
    pub fn decided_by_default(&self) -> bool {
        self.deciding()
            .is_some_and(|s| s.code.starts_with("default-"))
    }

    /// The deciding step's reason first, then the others that agree with it.
    pub fn reasons(&self) -> Vec<Reason> {
        let decision = self.decision();
        self.steps
            .iter()
            .filter(|s| s.decision == decision)
            .map(|s| Reason::new(s.layer, s.code.clone(), s.message.clone()))
            .collect()
    }

    /// One line for humans: the decision's reason.
    pub fn summary(&self) -> String {
        match self.deciding() {
            Some(step) => format!("[{}] {}: {}", step.layer, step.code, step.message),
            None => "no layer was consulted".to_owned(),
        }
    }

    /// The shared report shape, with the trace attached.
    pub fn report(&self) -> anyhow::Result<Report> {
        let mut report = Report::new(self.decision(), self.reasons())
            .with("tool", self.tool.clone())
            .with("mode", self.mode.clone());
        if let Some(step) = self.deciding() {
            report = report.with("layer", step.layer);
            if let Some(rule) = &step.rule {
                report = report.with("rule", rule.clone());
            }
            if let Some(source) = &step.source {
                report = report.with("source", source.clone());
            }
        }
        Ok(report.with("trace", serde_json::to_value(&self.steps)?))
    }
}

/// A tool call in the guard's vocabulary.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub tool: String,
    pub input: Value,
    /// The caller declares the tool read-only (the seed's read-only tools always are).
    pub read_only: bool,
}

/// The layers built once from a policy.
pub(crate) struct Guard {
    checker: PermissionChecker,
    cwd: PathBuf,
    /// `Err` keeps the reason the sandbox could not be built: every path is then refused.
    sandbox: Result<Arc<Sandbox>, String>,
    analyzer: Analyzer,
}

/// Adapts the sandbox to the narrow interface bash-guard asks about paths through: the CLI's
/// own refusals (no sandbox, a credential path) first, then agent-core's [`SandboxJudge`], the
/// judge the runtime uses, so the hook and the runtime judge a path alike.
pub(crate) struct CliJudge<'a> {
    pub sandbox: &'a Result<Arc<Sandbox>, String>,
}

impl PathJudge for CliJudge<'_> {
    fn judge(&self, path: &str, access: PathAccess, cwd: &Path) -> PathVerdict {
        let sandbox = match self.sandbox {
            Ok(sandbox) => sandbox,
            Err(message) => {
                return PathVerdict::Denied {
                    code: "sandbox_unavailable".to_owned(),
                    message: message.clone(),
                };
            }
        };
        let full = absolutize(cwd, path);
        if is_credential_path(&full) {
            return PathVerdict::Sensitive;
        }
        SandboxJudge::new(Arc::clone(sandbox)).judge(&full.to_string_lossy(), access, cwd)
    }
}

/// The policy's `[bash]` table with `AGENT_BLOCK_NETWORK` applied on top.
pub(crate) fn bash_config(policy: &Policy) -> BashConfig {
    let mut config: BashConfig = policy.doc.bash.clone();
    // As `agent-guard bash`: anything but an explicit false keeps the network blocked.
    if let Ok(value) = std::env::var("AGENT_BLOCK_NETWORK") {
        config.block_network = !matches!(
            value.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        );
    }
    config
}

/// The policy's `[sandbox]` table.
pub(crate) fn sandbox_config(policy: &Policy) -> &SandboxConfig {
    &policy.doc.sandbox
}

/// Builds the permission checker exactly as `check` does: the policy file as the project
/// layer, `AGENT_PERMISSIONS_*` on top, then the mode override.
pub(crate) fn load_checker(
    policy: &Policy,
    mode: Option<&str>,
    cwd: &Path,
) -> anyhow::Result<PermissionChecker> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let mut checker = policy.checker(&env)?;
    if let Some(mode) = mode {
        checker.set_mode(parse_mode(mode)?);
    }
    checker.set_cwd(cwd.display().to_string());
    Ok(checker)
}

pub(crate) fn parse_mode(mode: &str) -> anyhow::Result<PermissionMode> {
    PermissionMode::parse(mode).with_context(|| {
        format!("unknown mode `{mode}`; expected default, acceptEdits, plan, dontAsk or bypassPermissions")
    })
}

impl Guard {
    /// Builds every layer from `policy`, with `cwd` as the session's directory.
    pub fn load(policy: &Policy, mode: Option<&str>, cwd: &Path) -> anyhow::Result<Guard> {
        let sandbox = Sandbox::from_config(sandbox_config(policy), cwd)
            .map(Arc::new)
            .map_err(|e| format!("the sandbox cannot be built for `{}`: {e}", cwd.display()));
        Ok(Guard {
            checker: load_checker(policy, mode, cwd)?,
            cwd: cwd.to_owned(),
            sandbox,
            analyzer: Analyzer::new(bash_config(policy)),
        })
    }

    /// Replaces the sandbox built from the policy (`explain path` adds `--root` flags).
    pub fn set_sandbox(&mut self, sandbox: Result<Sandbox, String>) {
        self.sandbox = sandbox.map(Arc::new);
    }

    /// Replaces the bash analyzer built from the policy (`explain bash --allow-network`).
    pub fn set_analyzer(&mut self, analyzer: Analyzer) {
        self.analyzer = analyzer;
    }

    /// The mode the rules are applied in.
    pub fn mode(&self) -> PermissionMode {
        self.checker.mode()
    }

    /// Runs `call` through every layer that applies to it; `bash` = false leaves bash-guard
    /// out (rules-only policy tests).
    pub fn evaluate(&self, call: &Call, bash: bool) -> Trace {
        let mut steps = vec![self.rules_step(call)];
        if let Some(path) = call_path(call) {
            let resolved = absolutize(&self.cwd, path);
            if let Some(step) = credentials_step(&call.tool, &resolved) {
                steps.push(step);
            }
            steps.push(self.sandbox_step(&call.tool, &resolved));
        }
        if bash && call.tool == "run_bash" {
            steps.push(self.bash_step(call));
        }
        Trace {
            tool: call.tool.clone(),
            mode: self.checker.mode().as_str().to_owned(),
            steps,
        }
    }

    fn sandbox_step(&self, tool: &str, path: &Path) -> Step {
        let op = match tool {
            "file_write" | "file_edit" => Op::Write,
            "glob_files" | "grep_files" if !path.is_file() => Op::List,
            _ => Op::Read,
        };
        let saw = format!("{} `{}`", op.as_str(), path.display());
        let (decision, code, message) = match &self.sandbox {
            Err(message) => (
                Decision::Deny,
                "sandbox_unavailable".to_owned(),
                message.clone(),
            ),
            Ok(sandbox) => match sandbox.check(path, op) {
                Ok(checked) => (
                    Decision::Allow,
                    "inside_root".to_owned(),
                    format!(
                        "`{}` is inside the root `{}`",
                        checked.path().display(),
                        checked.root().path().display()
                    ),
                ),
                // Reading outside the project is sometimes legitimate; a person decides.
                Err(err @ SandboxError::OutsideRoots { .. }) if op != Op::Write => {
                    (Decision::Ask, err.code().to_owned(), err.to_string())
                }
                Err(err) => (Decision::Deny, err.code().to_owned(), err.to_string()),
            },
        };
        Step {
            layer: "fs-sandbox",
            saw,
            decision,
            code,
            message,
            rule: None,
            source: None,
        }
    }

    fn bash_step(&self, call: &Call) -> Step {
        let Some(command) = call.input.get("command").and_then(Value::as_str) else {
            return Step {
                layer: "bash-guard",
                saw: format!("{}", call.input),
                decision: Decision::Deny,
                code: "no_command".to_owned(),
                message: "`run_bash` input has no string `command`".to_owned(),
                rule: None,
                source: None,
            };
        };
        let verdict = self.analyzer.analyze(
            command,
            &self.cwd,
            &CliJudge {
                sandbox: &self.sandbox,
            },
        );
        let decision = match verdict.decision {
            bash_guard::Decision::Allow => Decision::Allow,
            bash_guard::Decision::Ask => Decision::Ask,
            bash_guard::Decision::Deny => Decision::Deny,
        };
        let deciding: Vec<_> = verdict.deciding().collect();
        let code = deciding
            .first()
            .map_or("no_findings", |f| f.code)
            .to_owned();
        let message = if deciding.is_empty() {
            "no simple command was found".to_owned()
        } else {
            deciding
                .iter()
                .map(|f| format!("`{}`: {}", f.subcommand, f.message))
                .collect::<Vec<_>>()
                .join("; ")
        };
        Step {
            layer: "bash-guard",
            saw: format!("`{command}`"),
            decision,
            code,
            message,
            rule: None,
            source: None,
        }
    }

    fn rules_step(&self, call: &Call) -> Step {
        let read_only = call.read_only || READ_ONLY_TOOLS.contains(&call.tool.as_str());
        let result = self.checker.check(&call.tool, Some(&call.input));
        let result = self.checker.apply_mode(result, &call.tool, read_only);
        Step {
            layer: "perm-rules",
            saw: format!("`{}` with {}", call.tool, call.input),
            decision: result.decision,
            code: result.code(),
            message: result.message(),
            rule: result.rule.as_ref().map(|r| r.text().to_owned()),
            source: result.rule.as_ref().map(|r| r.source().to_string()),
        }
    }
}

/// Folds a multi-line error (TOML parse errors quote the source with `|` gutters) into the
/// one line every error of the CLI must be.
pub(crate) fn one_line(err: anyhow::Error) -> anyhow::Error {
    let text = format!("{err:#}");
    let is_gutter = |line: &str| {
        let t = line.trim_start();
        let digits = t.trim_start_matches(|c: char| c.is_ascii_digit());
        t.is_empty()
            || t.starts_with('|')
            || (digits.len() < t.len() && digits.trim_start().starts_with('|'))
    };
    let parts: Vec<&str> = text
        .lines()
        .filter(|l| !is_gutter(l))
        .map(str::trim)
        .collect();
    anyhow::anyhow!("{}", parts.join(": "))
}

/// The path a path tool acts on (`None` for other tools).
pub(crate) fn call_path(call: &Call) -> Option<&str> {
    let key = match call.tool.as_str() {
        "read_file" | "file_write" | "file_edit" => "file_path",
        "glob_files" | "grep_files" => "path",
        _ => return None,
    };
    call.input.get(key).and_then(Value::as_str)
}

/// `path` made absolute against `cwd`, lexically normalised (`.` dropped, `..` applied).
pub(crate) fn absolutize(cwd: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    let joined = if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Directories holding credentials, matched as a component anywhere in the path.
const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
];
/// File names that are credentials wherever they are.
const CREDENTIAL_FILES: &[&str] = &[
    ".env",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    "credentials.json",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
];
const CREDENTIAL_EXTENSIONS: &[&str] = &["pem", "key", "p12", "pfx"];

/// Whether `path` is a credential store a tool must not touch.
pub(crate) fn is_credential_path(path: &Path) -> bool {
    let mut components = path.components().filter_map(|c| c.as_os_str().to_str());
    if components.any(|c| CREDENTIAL_DIRS.contains(&c)) {
        return true;
    }
    if path.components().any(|c| c.as_os_str() == "gcloud") {
        return true;
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    if CREDENTIAL_FILES.contains(&name) || name.starts_with(".env.") {
        return true;
    }
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| CREDENTIAL_EXTENSIONS.contains(&e))
}

fn credentials_step(tool: &str, path: &Path) -> Option<Step> {
    // Searching a whole tree is judged by the sandbox; only a credential file itself is refused.
    if !is_credential_path(path) {
        return None;
    }
    Some(Step {
        layer: "credentials",
        saw: format!("`{tool}` on `{}`", path.display()),
        decision: Decision::Deny,
        code: "credential-path".to_owned(),
        message: format!(
            "`{}` is a credential store; agents never read or write it",
            path.display()
        ),
        rule: None,
        source: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_recognised() {
        for p in [
            "/home/u/.ssh/id_rsa",
            "/p/.env",
            "/p/.env.local",
            "/p/server.pem",
            "/home/u/.aws/credentials",
        ] {
            assert!(is_credential_path(Path::new(p)), "{p}");
        }
        for p in ["/p/src/main.rs", "/p/environment.rs", "/p/.envrc.md"] {
            assert!(!is_credential_path(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn absolutize_applies_dots() {
        assert_eq!(
            absolutize(Path::new("/p"), "a/../b/./c"),
            PathBuf::from("/p/b/c")
        );
        assert_eq!(
            absolutize(Path::new("/p"), "/etc/../x"),
            PathBuf::from("/x")
        );
    }

    #[test]
    fn errors_fold_to_one_line() {
        let err = anyhow::anyhow!(
            "bad policy file `p`: TOML parse error at line 2, column 1\n  |\n2 | denny = []\n  | ^^^^^\nunknown field `denny`\n"
        );
        assert_eq!(
            one_line(err).to_string(),
            "bad policy file `p`: TOML parse error at line 2, column 1: unknown field `denny`"
        );
    }

    #[test]
    fn empty_trace_fails_closed() {
        let t = Trace {
            tool: "x".into(),
            mode: "default".into(),
            steps: vec![],
        };
        assert_eq!(t.decision(), Decision::Deny);
    }
}
