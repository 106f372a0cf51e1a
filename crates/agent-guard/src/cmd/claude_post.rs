//! `PostToolUse`: redact secrets from a tool's response.
//!
//! Claude Code cannot replace the output of its built-in tools from a hook (only
//! `updatedMCPToolOutput` for MCP tools exists). So when the response of a built-in tool
//! holds a secret, the hook answers `decision: "block"` with a reason, which Claude Code feeds
//! back to the model, plus the redacted text as `additionalContext`; for an `mcp__*` tool it
//! also sends the redacted response as `updatedMCPToolOutput`, which does replace it.

use serde_json::{Value, json};

use super::claude_hook::HookInput;

/// The answer to a `PostToolUse` event under the policy's `[hooks]` (`redact_secrets`, and
/// `[hooks.redaction]` for the detectors and allow-lists); the scanner is perm-hooks' own, the
/// one the runtime's redaction hook uses.
pub(crate) fn post_tool_use(
    input: &HookInput,
    hooks: &perm_hooks::HooksConfig,
) -> anyhow::Result<Value> {
    let Some(response) = &input.tool_response else {
        anyhow::bail!(
            "malformed hook JSON on stdin: `tool_response` is missing from a PostToolUse event"
        );
    };
    if !hooks.redact_secrets {
        return Ok(json!({}));
    }
    let scanner = hooks.secret_scanner()?;
    if perm_hooks::call_path(&input.tool_input).is_some_and(|p| scanner.path_allowed(p)) {
        return Ok(json!({}));
    }
    let (redacted, findings) = scanner.redact_json(response);
    if findings.is_empty() {
        return Ok(json!({}));
    }
    let mut kinds: Vec<&str> = findings.iter().map(|f| &*f.detector).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let changed = findings.len();
    let kinds = kinds.join(", ");
    let tool = &input.tool_name;
    let reason = format!(
        "agent-guard: the output of `{tool}` contained secrets ({changed} redacted: {kinds}); \
         do not repeat, store or use them; the redacted output follows as additional context"
    );
    let redacted_text = match &redacted {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other)?,
    };
    let mut specific = json!({
        "hookEventName": "PostToolUse",
        "additionalContext": format!("redacted output of `{tool}`:\n{redacted_text}"),
    });
    if tool.starts_with("mcp__")
        && let Some(obj) = specific.as_object_mut()
    {
        obj.insert("updatedMCPToolOutput".to_owned(), redacted);
    }
    Ok(json!({
        "decision": "block",
        "reason": reason,
        "hookSpecificOutput": specific,
    }))
}
