//! `agent-guard gemini-hook`: a Gemini CLI command hook.
//!
//! Gemini CLI's protocol puts `decision` (`allow`, `ask`, `deny`) and `reason` at the top level
//! of the answer. `BeforeTool` is judged by the one composed guard (`allow` is no output: it
//! approves nothing in Gemini anyway); `AfterTool` replaces an output holding secrets with the
//! redacted text (`decision: deny` with the text as reason); every other event is exit 0 with
//! no output. A crash answers deny with exit 2. An ask in a headless `gemini -p` session, which
//! would wait forever, is a deny.

use std::process::ExitCode;

use agent_core::clients::Client;
use perm_rules::Decision;
use serde_json::{Value, json};

use super::hook::{self, Answer, Event, HookArgs, Protocol};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Install it with `agent-guard init gemini` (writes .gemini/settings.json).

Gemini CLI's tools map onto the guard's through one table: run_shell_command -> run_bash
(`dir_path` is its working directory; `is_background` and `additional_permissions` ask),
read_file, write_file, replace, glob, grep_search, list_directory, read_many_files (each include
pattern), web_fetch (each URL in the prompt), invoke_agent -> subagent, save_memory; MCP and
other tools by their own names. Older releases' argument names (`absolute_path`, `path`,
`directory`, `include`, `paths`) are read too; two names for one argument that disagree deny.

Exit status:
  0  an answer was written to stdout (read the JSON), or the event needs none
  2  the call is BLOCKED (the reason is on stderr): bad hook JSON, a bad policy, an internal error";

/// Arguments of `agent-guard gemini-hook`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    #[command(flatten)]
    pub hook: HookArgs,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> ExitCode {
    hook::run(&Gemini, args.hook)
}

struct Gemini;

/// The flags that make `gemini` a headless session.
const HEADLESS_FLAGS: &[&str] = &["-p", "--prompt"];

impl Protocol for Gemini {
    fn client(&self) -> Client {
        Client::Gemini
    }

    fn crash_answer(&self, reason: &str) -> (String, String) {
        (
            json!({"decision": "deny", "reason": reason}).to_string(),
            reason.to_owned(),
        )
    }

    fn answer(&self, event: &Event, args: &HookArgs) -> anyhow::Result<Answer> {
        match event.name.as_str() {
            "BeforeTool" => {
                let j = hook::judge(self.client(), event, args)?;
                Ok(match j.verdict.decision {
                    Decision::Allow => Answer::silent(),
                    // `gemini -p` waits forever for the confirmation an ask needs.
                    Decision::Ask if super::headless::client_has_flag("gemini", HEADLESS_FLAGS) => {
                        Answer::json(json!({"decision": "deny", "reason": format!(
                            "{} (refused: this is a headless `gemini -p` session, where nobody \
                             can confirm; run it interactively, or allow it in the policy)",
                            j.reason()
                        )}))
                    }
                    d => Answer::json(json!({"decision": d.as_str(), "reason": j.reason()})),
                })
            }
            "AfterTool" => {
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
                        "decision": "deny",
                        "reason": format!(
                            "agent-guard: the tool's output contained secrets ({} redacted: {}). Redacted output:\n{}",
                            r.count, r.kinds, r.text
                        ),
                    }))),
                    None => Ok(Answer::silent()),
                }
            }
            "SessionEnd" => {
                if let Err(e) = hook::record_stop(self.client(), event, args) {
                    eprintln!("agent-guard: {e:#}");
                }
                Ok(Answer::silent())
            }
            _ => Ok(Answer::silent()),
        }
    }
}
