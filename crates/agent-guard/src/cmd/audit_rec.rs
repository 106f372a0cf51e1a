//! What the hook front ends write to the audit log: a decision row for every judged call (at
//! PreToolUse / BeforeTool, whatever the decision), and an outcome row when the client reports
//! that the call ran (PostToolUse, PostToolUseFailure, AfterTool). The two share the client's
//! call id (Gemini sends none: the reader pairs them by session, tool and input), so the log
//! alone says what was asked, decided, by whom, and what ran.

use agent_core::clients::Client;
use agent_core::{AskResolution, Verdict};
use perm_hooks::{AuditRow, Resolver};
use perm_rules::Decision;
use serde_json::Value;

use super::hook::Event;
use crate::front::Front;

/// Who decided `verdict`, and how, from its deciding step.
fn resolver(verdict: &Verdict) -> (Option<Resolver>, Option<String>) {
    // What lifted an ask (a rule matching each side effect, auto mode's model, a grant) is
    // recorded by the guard itself; only without it is the deciding step read.
    match &verdict.resolved_by {
        Some(AskResolution::Rule { rules }) => {
            return (Some(Resolver::Rule), Some(rules.join(", ")));
        }
        Some(AskResolution::AllowOnce { code }) => {
            return (Some(Resolver::AllowOnce), Some(code.clone()));
        }
        Some(AskResolution::Auto {
            decision,
            model,
            latency_ms,
            reason,
            cached,
        }) => {
            let reused = if *cached { ", reused" } else { "" };
            return (
                Some(Resolver::Auto),
                Some(format!(
                    "{decision} by {model} in {latency_ms} ms{reused}: {reason}"
                )),
            );
        }
        Some(AskResolution::Person { how }) => return (Some(Resolver::Person), Some(how.clone())),
        None => {}
    }
    let Some(step) = verdict.deciding() else {
        return (Some(Resolver::Guard), None);
    };
    if step.layer == "allow-once" {
        return (Some(Resolver::AllowOnce), Some(step.message.clone()));
    }
    if verdict.decision == Decision::Ask {
        // Not resolved yet: a person answers at the client's prompt or on the approval page.
        return (None, None);
    }
    match &step.rule {
        Some(rule) => {
            let at = step
                .source
                .as_deref()
                .map(|s| format!(" at {s}"))
                .unwrap_or_default();
            (Some(Resolver::Rule), Some(format!("{rule}{at}")))
        }
        None => (Some(Resolver::Guard), None),
    }
}

/// The decision row of a judged hook call. `judged` is the guard's verdict; `answered`, the
/// verdict after an approval server's person answered an ask (the same verdict otherwise).
pub(crate) fn decision_row(
    client: Client,
    event: &Event,
    tool: &str,
    input: &Value,
    judged: &Verdict,
    answered: &Verdict,
    ref_code: Option<&str>,
) -> AuditRow {
    let mut row = AuditRow::decided(judged.decision, judged.code(), &judged.summary());
    row.session_id.clone_from(&event.session_id);
    row.agent_name = super::hook::agent_of(event);
    row.tool_name = tool.to_owned();
    row.call_id = super::hook::string_field(event, "tool_use_id");
    row.set_input(input);
    row.client = client_id(client).to_owned();
    row.layer = judged.deciding().map(|s| s.layer.to_owned());
    let (by, how) = resolver(judged);
    row.resolved_by = by;
    row.resolution = how;
    if judged.decision == Decision::Ask && answered.decision != Decision::Ask {
        row.resolved_by = Some(Resolver::Person);
        row.resolution = Some(format!(
            "{} via the approval server: {}",
            if answered.decision == Decision::Allow {
                "allowed"
            } else {
                "refused"
            },
            answered.summary()
        ));
    }
    row.ref_code = ref_code.map(str::to_owned);
    row
}

/// The client as stored in the `client` column (the name its hook subcommand carries).
pub(crate) fn client_id(client: Client) -> &'static str {
    match client {
        Client::ClaudeCode => "claude-code",
        Client::Codex => "codex",
        Client::Gemini => "gemini",
    }
}

/// Queues `row` in the front's audit log, when it has one.
pub(crate) fn record(front: &Front, row: AuditRow) {
    if let Some(log) = front.guard().executor().audit() {
        front.block_on(log.record(row));
    }
}

/// True when the client's after-tool event reports a failure: Claude Code's own failure
/// event, or a response that says so (a non-zero exit code, `success: false`, an error).
pub(crate) fn is_failure(event: &Event) -> bool {
    if event.name.contains("Failure") {
        return true;
    }
    let Some(Value::Object(r)) = &event.tool_response else {
        return false;
    };
    let nonzero = |k: &str| r.get(k).and_then(Value::as_i64).is_some_and(|c| c != 0);
    nonzero("exit_code")
        || nonzero("exitCode")
        || r.get("success").and_then(Value::as_bool) == Some(false)
        || r.get("error").is_some_and(|e| !e.is_null() && e != "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, response: Value) -> Event {
        let text = serde_json::json!({
            "hook_event_name": name, "session_id": "s", "cwd": "/",
            "tool_name": "Bash", "tool_input": {}, "tool_response": response,
        })
        .to_string();
        Event::parse(&text).unwrap()
    }

    #[test]
    fn failures_are_read_from_the_event_or_the_response() {
        assert!(is_failure(&event("PostToolUseFailure", Value::Null)));
        assert!(is_failure(&event(
            "PostToolUse",
            serde_json::json!({"exit_code": 2})
        )));
        assert!(is_failure(&event(
            "AfterTool",
            serde_json::json!({"error": "boom"})
        )));
        assert!(is_failure(&event(
            "PostToolUse",
            serde_json::json!({"success": false})
        )));
        assert!(!is_failure(&event(
            "PostToolUse",
            serde_json::json!({"exit_code": 0, "error": null})
        )));
        assert!(!is_failure(&event(
            "AfterTool",
            serde_json::json!("plain text")
        )));
    }
}
