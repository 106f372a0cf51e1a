//! `agent-guard claude-hook`: a drop-in Claude Code command hook.
//!
//! Claude Code runs the hook with one JSON object on stdin (`session_id`, `transcript_path`,
//! `cwd`, `permission_mode`, `hook_event_name`, `tool_name`, `tool_input`, and for
//! `PostToolUse` also `tool_response`). For `PreToolUse` the answer is
//! `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":..,"permissionDecisionReason":..}}`
//! on stdout with exit 0. Input that cannot be understood is refused with exit 2 and a one-line
//! reason on stderr, which Claude Code treats as a block.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use perm_rules::Decision;
use serde_json::{Map, Value, json};

use super::trace::{Call, Guard, Step, Trace};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Install it in .claude/settings.json (or ~/.claude/settings.json):
  {\"hooks\": {\"PreToolUse\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\",
    \"command\": \"agent-guard claude-hook --policy /path/policy.toml\"}]}]}}

Claude Code's tools map onto the guard's: Bash -> run_bash, Read -> read_file, Write ->
file_write, Edit/MultiEdit/NotebookEdit -> file_edit, Glob -> glob_files, Grep -> grep_files,
WebFetch -> web_fetch (rules `web_fetch(domain:..)`), Task -> subagent, TodoWrite -> todo_write;
any other tool is judged by the rules under its own name (e.g. `mcp__github__create_issue`).

A call that only the policy's `default = \"allow\"` would allow gets no permissionDecision, so
Claude Code's own permission prompt still applies; an explicit allow rule answers \"allow\".

PostToolUse (add the same command under \"PostToolUse\"): when the tool's response holds
secrets, the answer is decision \"block\" with a reason and the redacted text as
additionalContext. Claude Code cannot replace a built-in tool's output, only an MCP tool's
(updatedMCPToolOutput, sent for mcp__* tools). `[hooks] redact_secrets = false` turns it off.

Exit status:
  0  a decision was written to stdout (allow, ask or deny: read the JSON)
  2  bad hook JSON, a bad policy file or an unsupported event: the call is BLOCKED
     (Claude Code treats exit 2 from PreToolUse as a block and shows stderr to Claude)";

/// Arguments of `agent-guard claude-hook`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The policy file; `AGENT_PERMISSIONS_*` apply on top. Without one, only the
    /// environment rules and the built-in layers apply.
    #[arg(long, env = "AGENT_GUARD_POLICY")]
    pub policy: Option<PathBuf>,
    /// Override the policy's mode (Claude Code's own `permission_mode` is not used: Claude
    /// Code applies it itself after the hook).
    #[arg(long)]
    pub mode: Option<String>,
}

/// Hook input larger than this is refused rather than buffered without bound.
const MAX_INPUT: u64 = 32 * 1024 * 1024;

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_inner(args).map_err(super::trace::one_line)
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_INPUT + 1)
        .read_to_string(&mut text)
        .context("cannot read the hook JSON from stdin")?;
    anyhow::ensure!(
        u64::try_from(text.len()).unwrap_or(u64::MAX) <= MAX_INPUT,
        "hook input is larger than {MAX_INPUT} bytes; refusing it"
    );
    let input = HookInput::parse(&text)?;
    let policy = Policy::load(args.policy.as_deref())?;
    let guard = Guard::load(&policy, args.mode.as_deref(), &input.cwd)?;
    let answer = match input.event.as_str() {
        "PreToolUse" => pre_tool_use(&guard, &input),
        "PostToolUse" => super::claude_post::post_tool_use(&input, &policy.doc.hooks)?,
        other => anyhow::bail!(
            "unsupported hook event `{other}`; install `agent-guard claude-hook` for PreToolUse and PostToolUse only"
        ),
    };
    println!("{}", serde_json::to_string(&answer)?);
    Ok(ExitCode::SUCCESS)
}

/// The fields of Claude Code's hook input that the guard uses.
#[derive(Debug)]
pub(crate) struct HookInput {
    pub event: String,
    pub tool_name: String,
    pub tool_input: Value,
    pub tool_response: Option<Value>,
    pub cwd: PathBuf,
}

impl HookInput {
    /// Parses and validates the hook JSON; every problem is one clear line.
    pub fn parse(text: &str) -> anyhow::Result<HookInput> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("malformed hook JSON on stdin: {e}"))?;
        let Value::Object(mut obj) = value else {
            anyhow::bail!("malformed hook JSON on stdin: expected an object");
        };
        let field = |obj: &Map<String, Value>, key: &str| -> anyhow::Result<String> {
            match obj.get(key) {
                Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                Some(_) => anyhow::bail!(
                    "malformed hook JSON on stdin: `{key}` must be a non-empty string"
                ),
                None => anyhow::bail!("malformed hook JSON on stdin: `{key}` is missing"),
            }
        };
        let event = field(&obj, "hook_event_name")?;
        let tool_name = field(&obj, "tool_name")?;
        let tool_input = match obj.remove("tool_input") {
            Some(v @ Value::Object(_)) => v,
            Some(_) => {
                anyhow::bail!("malformed hook JSON on stdin: `tool_input` must be an object")
            }
            None => anyhow::bail!("malformed hook JSON on stdin: `tool_input` is missing"),
        };
        // Claude Code always sends `cwd`; without it the sandbox root would be a guess.
        let cwd = PathBuf::from(field(&obj, "cwd")?);
        anyhow::ensure!(
            cwd.is_absolute(),
            "malformed hook JSON on stdin: `cwd` must be an absolute path, got `{}`",
            cwd.display()
        );
        Ok(HookInput {
            event,
            tool_name,
            tool_input,
            tool_response: obj.remove("tool_response"),
            cwd,
        })
    }
}

/// Translates a Claude Code tool call into the guard's vocabulary. `Err` is a reason to deny:
/// a known tool whose input lacks the field the layers judge.
pub(crate) fn from_claude(tool: &str, input: &Value, cwd: &Path) -> Result<Call, String> {
    let text = |key: &str| -> Result<String, String> {
        match input.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            _ => Err(format!("`{tool}` input has no string `{key}`")),
        }
    };
    let optional_path = |key: &str| -> String {
        input
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map_or_else(|| cwd.display().to_string(), str::to_owned)
    };
    let (name, args) = match tool {
        "Bash" => ("run_bash", json!({ "command": text("command")? })),
        "Read" => ("read_file", json!({ "file_path": text("file_path")? })),
        "Write" => ("file_write", json!({ "file_path": text("file_path")? })),
        "Edit" | "MultiEdit" => ("file_edit", json!({ "file_path": text("file_path")? })),
        "NotebookEdit" => ("file_edit", json!({ "file_path": text("notebook_path")? })),
        "Glob" => {
            let pattern = text("pattern")?;
            // `../../etc/*` searches outside `path`: the sandbox judges the directory the
            // pattern's literal part reaches, not just `path`.
            let base = glob_base(&optional_path("path"), &pattern);
            ("glob_files", json!({ "pattern": pattern, "path": base }))
        }
        "Grep" => (
            "grep_files",
            json!({ "path": optional_path("path"), "pattern": text("pattern")? }),
        ),
        "WebFetch" => ("web_fetch", json!({ "url": text("url")? })),
        "Task" => ("subagent", input.clone()),
        "TodoWrite" => ("todo_write", input.clone()),
        other => (other, input.clone()),
    };
    Ok(Call {
        tool: name.to_owned(),
        input: args,
        read_only: false,
    })
}

/// The directory a glob pattern searches: `path` joined with the pattern's components before
/// the first one holding a glob character.
fn glob_base(path: &str, pattern: &str) -> String {
    let literal: Vec<&str> = pattern
        .split('/')
        .take_while(|c| !c.contains(['*', '?', '[', '{']))
        .collect();
    // The last literal component of a pattern without glob characters is the file itself.
    let dirs = if literal.len() == pattern.split('/').count() {
        literal.len().saturating_sub(1)
    } else {
        literal.len()
    };
    let prefix = literal.get(..dirs).map(|c| c.join("/")).unwrap_or_default();
    if prefix.is_empty() && !pattern.starts_with('/') {
        return path.to_owned();
    }
    let prefix = if pattern.starts_with('/') && !prefix.starts_with('/') {
        format!("/{prefix}")
    } else {
        prefix
    };
    super::trace::absolutize(Path::new(path), &prefix)
        .display()
        .to_string()
}

/// Evaluates a Claude Code call; a call that cannot be translated is a deny step.
pub(crate) fn evaluate_claude(
    guard: &Guard,
    tool: &str,
    input: &Value,
    cwd: &Path,
    bash: bool,
) -> Trace {
    match from_claude(tool, input, cwd) {
        Ok(call) => guard.evaluate(&call, bash),
        Err(message) => Trace {
            tool: tool.to_owned(),
            mode: guard.mode().as_str().to_owned(),
            steps: vec![Step {
                layer: "claude-hook",
                saw: format!("`{tool}` with {input}"),
                decision: Decision::Deny,
                code: "bad-tool-input".to_owned(),
                message,
                rule: None,
                source: None,
            }],
        },
    }
}

fn pre_tool_use(guard: &Guard, input: &HookInput) -> Value {
    let trace = evaluate_claude(guard, &input.tool_name, &input.tool_input, &input.cwd, true);
    let decision = trace.decision();
    if decision == Decision::Allow && trace.decided_by_default() {
        return json!({});
    }
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision.as_str(),
            "permissionDecisionReason": format!("agent-guard: {}", trace.summary()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_base_follows_the_literal_prefix() {
        assert_eq!(glob_base("/p", "**/*.rs"), "/p");
        assert_eq!(glob_base("/p", "src/**/*.rs"), "/p/src");
        assert_eq!(glob_base("/p", "../../etc/*"), "/etc");
        assert_eq!(glob_base("/p", "/etc/ssh/*"), "/etc/ssh");
        assert_eq!(glob_base("/p", "src/main.rs"), "/p/src");
        assert_eq!(glob_base("/p", "/*"), "/");
    }
}
