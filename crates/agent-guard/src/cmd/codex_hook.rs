//! `agent-guard codex-hook`: a Codex CLI command hook.
//!
//! Codex honours only a deny (with a non-empty reason) from `PreToolUse`; `ask` and a bare
//! `allow` are rejected and the call proceeds. So the guard's Ask becomes a deny whose reason
//! says how to allow the call, an Allow is no output at all, and nothing that voids a deny
//! (`continue`, `stopReason`, `suppressOutput`) is ever written. `apply_patch` is parsed and
//! every path in it judged as a write.

use std::process::ExitCode;

use agent_core::clients::Client;
use perm_rules::Decision;
use serde_json::{Value, json};

use super::hook::{self, Answer, Event, HookArgs, Protocol};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Install it with `agent-guard init codex` (writes .codex/hooks.json), then trust it in /hooks.

Codex cannot ask: a call the guard would ask about is denied with a reason that says how to
allow it (an allow rule in the policy). Shell calls (`Bash`, and the model-side names `shell`,
`shell_command`, `exec_command`, `local_shell`, `unified_exec`, `container.exec`; argv arrays
are joined as the shell runs them, `workdir` is the working directory, escalated permissions
ask) are judged by bash-guard;
`apply_patch` is parsed and every path it adds, updates, deletes or moves is judged as a write.

Exit status:
  0  an answer was written to stdout (read the JSON), or the event needs none
  2  the call is BLOCKED (the reason is on stderr): bad hook JSON, a bad policy, an internal error";

/// Arguments of `agent-guard codex-hook`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    #[command(flatten)]
    pub hook: HookArgs,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> ExitCode {
    hook::run(&Codex, args.hook)
}

struct Codex;

fn deny(reason: String) -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": reason,
    }})
}

impl Protocol for Codex {
    fn client(&self) -> Client {
        Client::Codex
    }

    fn crash_answer(&self, reason: &str) -> (String, String) {
        (deny(reason.to_owned()).to_string(), reason.to_owned())
    }

    fn answer(&self, event: &Event, args: &HookArgs) -> anyhow::Result<Answer> {
        match event.name.as_str() {
            "PreToolUse" => {
                let j = hook::judge(self.client(), event, args)?;
                Ok(match j.verdict.decision {
                    Decision::Deny => Answer::json(deny(j.reason())),
                    Decision::Ask => Answer::json(deny(format!(
                        "{} Codex cannot ask for approval, so agent-guard denies what it would ask about \
                         (a person can run it themselves).{}",
                        hook::reason(&j.verdict),
                        j.allow_once
                            .as_deref()
                            .map(|n| format!(" {n}"))
                            .unwrap_or_default()
                    ))),
                    Decision::Allow => Answer::silent(),
                })
            }
            "PermissionRequest" => {
                let j = hook::judge(self.client(), event, args)?;
                let v = &j.verdict;
                let decision = match v.decision {
                    Decision::Deny => json!({"behavior": "deny", "message": j.reason()}),
                    Decision::Allow if !v.decided_by_default() => json!({"behavior": "allow"}),
                    _ => return Ok(Answer::silent()),
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
                let Some(response) = &event.tool_response else {
                    return Ok(Answer::silent());
                };
                let input = event.tool_input.clone().unwrap_or(Value::Null);
                match super::claude_post::redact_response(&policy.doc.hooks, &input, response)? {
                    Some(r) => Ok(Answer::json(json!({
                        "decision": "block",
                        "reason": format!(
                            "agent-guard: the tool's output contained secrets ({} redacted: {}); \
                             do not repeat, store or use them. Redacted output:\n{}",
                            r.count, r.kinds, r.text
                        ),
                    }))),
                    None => Ok(Answer::silent()),
                }
            }
            "Stop" => {
                if let Err(e) = hook::record_stop(self.client(), event, args) {
                    eprintln!("agent-guard: {e:#}");
                }
                Ok(Answer::silent())
            }
            _ => Ok(Answer::silent()),
        }
    }
}
