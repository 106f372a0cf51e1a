//! `agent-guard claude-hook`: a drop-in Claude Code command hook for every event.
//!
//! Claude Code runs the hook with one JSON event on stdin. `PreToolUse` gets
//! `hookSpecificOutput.permissionDecision` (allow, ask or deny) from the one composed guard;
//! `PermissionRequest` gets `hookSpecificOutput.decision.behavior` (deny, or allow when an
//! explicit rule allows; otherwise Claude Code's own prompt); `PostToolUse` redacts secrets;
//! every other event, known or future, is answered with exit 0 and no decision. A crash or an
//! internal error answers deny with exit 2, which Claude Code treats as a block.

use std::process::ExitCode;

use agent_core::clients::Client;
use perm_rules::Decision;
use serde_json::{Value, json};

use super::claude_post::{self, HookInput};
use super::hook::{self, Answer, Event, HookArgs, Protocol};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Install it for every event with `agent-guard init claude`, or by hand in .claude/settings.json:
  {\"hooks\": {\"PreToolUse\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\",
    \"command\": \"agent-guard claude-hook --policy /path/policy.toml\"}]}]}}

Claude Code's tools map onto the guard's through one table (agent-core's clients module):
Bash and Monitor -> run_bash, Read -> read_file, Write -> file_write, Edit/MultiEdit/
NotebookEdit -> file_edit, Glob -> glob_files, Grep -> grep_files, WebFetch -> web_fetch,
Agent/Task -> subagent, the legacy LS -> glob_files (its `path`), BashOutput/KillShell ->
task_output/task_stop, PowerShell/REPL/Workflow -> asked unless an explicit allow rule names
them; any other tool is judged by the rules under its own name (e.g. `mcp__github__create_issue`).
`run_in_background` asks; `dangerouslyDisableSandbox` turns an allow into an ask.

A call that only the policy's `default = \"allow\"` would allow gets no permissionDecision, so
Claude Code's own permission prompt still applies; an explicit allow rule answers \"allow\".

Exit status:
  0  an answer was written to stdout (read the JSON), or the event needs none
  2  the call is BLOCKED: bad hook JSON, a bad policy file, or an internal error";

/// Arguments of `agent-guard claude-hook`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    #[command(flatten)]
    pub hook: HookArgs,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> ExitCode {
    hook::run(&Claude, args.hook)
}

/// Claude Code's protocol.
pub(crate) struct Claude;

impl Protocol for Claude {
    fn client(&self) -> Client {
        Client::ClaudeCode
    }

    fn crash_answer(&self, reason: &str) -> (String, String) {
        let json = json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }});
        (json.to_string(), reason.to_owned())
    }

    fn answer(&self, event: &Event, args: &HookArgs) -> anyhow::Result<Answer> {
        match event.name.as_str() {
            "PreToolUse" => {
                let j = hook::judge(self.client(), event, args)?;
                let v = &j.verdict;
                if v.decided_by_default() {
                    return Ok(Answer::json(json!({})));
                }
                Ok(Answer::json(json!({"hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": v.decision.as_str(),
                    "permissionDecisionReason": j.reason(),
                }})))
            }
            "PermissionRequest" => {
                let j = hook::judge(self.client(), event, args)?;
                let v = &j.verdict;
                let decision = match v.decision {
                    Decision::Deny => json!({"behavior": "deny", "message": j.reason()}),
                    Decision::Allow if !v.decided_by_default() => json!({"behavior": "allow"}),
                    // The guard would ask too: leave it to the person Claude Code asks.
                    _ => return Ok(Answer::json(json!({}))),
                };
                Ok(Answer::json(json!({"hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": decision,
                }})))
            }
            "PostToolUse" => {
                if let Err(e) = hook::record_run(self.client(), event, args) {
                    eprintln!("agent-guard: {e:#}");
                }
                let policy = Policy::load(args.policy.as_deref())?;
                let input = HookInput {
                    tool_name: event.tool_name.clone().unwrap_or_default(),
                    tool_input: event.tool_input.clone().unwrap_or(Value::Null),
                    tool_response: event.tool_response.clone(),
                };
                Ok(Answer::json(claude_post::post_tool_use(
                    &input,
                    &policy.doc.hooks,
                )?))
            }
            "PostToolUseFailure" => {
                if let Err(e) = hook::record_run(self.client(), event, args) {
                    eprintln!("agent-guard: {e:#}");
                }
                Ok(Answer::silent())
            }
            "SessionEnd" | "Stop" => {
                // Never blocks: a Stop answered with exit 2 would keep Claude going.
                if let Err(e) = hook::record_stop(self.client(), event, args) {
                    eprintln!("agent-guard: {e:#}");
                }
                Ok(Answer::silent())
            }
            // Every other event (and any future one) needs no decision from the guard.
            _ => Ok(Answer::silent()),
        }
    }
}
