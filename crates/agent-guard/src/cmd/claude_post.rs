//! `PostToolUse`: redact secrets from a tool's response.
//!
//! Claude Code cannot replace the output of its built-in tools from a hook (only
//! `updatedMCPToolOutput` for MCP tools exists). So when the response of a built-in tool
//! holds a secret, the hook answers `decision: "block"` with a reason, which Claude Code feeds
//! back to the model, plus the redacted text as `additionalContext`; for an `mcp__*` tool it
//! also sends the redacted response as `updatedMCPToolOutput`, which does replace it.

use serde_json::{Value, json};

use super::claude_hook::HookInput;

/// Redacts every string inside `value`; returns how many strings changed.
fn redact_value(value: &mut Value) -> usize {
    match value {
        Value::String(s) => {
            let redacted = perm_hooks::redact_secrets(s);
            if redacted.as_ref() == s.as_str() {
                0
            } else {
                *s = redacted.into_owned();
                1
            }
        }
        Value::Array(items) => items.iter_mut().map(redact_value).sum(),
        Value::Object(map) => map.values_mut().map(redact_value).sum(),
        _ => 0,
    }
}

/// A tool response with its secrets redacted, as text, and how many fields changed; `None`
/// when nothing changed (or `redact` is off). Codex's and Gemini's hooks answer with it.
pub(crate) fn redacted_text(
    response: &Value,
    redact: bool,
) -> anyhow::Result<Option<(usize, String)>> {
    if !redact {
        return Ok(None);
    }
    let mut redacted = response.clone();
    let changed = redact_value(&mut redacted);
    if changed == 0 {
        return Ok(None);
    }
    let text = match &redacted {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other)?,
    };
    Ok(Some((changed, text)))
}

/// The answer to a `PostToolUse` event; `redact` is the policy's `[hooks] redact_secrets`.
pub(crate) fn post_tool_use(input: &HookInput, redact: bool) -> anyhow::Result<Value> {
    let Some(response) = &input.tool_response else {
        anyhow::bail!(
            "malformed hook JSON on stdin: `tool_response` is missing from a PostToolUse event"
        );
    };
    if !redact {
        return Ok(json!({}));
    }
    let mut redacted = response.clone();
    let changed = redact_value(&mut redacted);
    if changed == 0 {
        return Ok(json!({}));
    }
    let tool = &input.tool_name;
    let reason = format!(
        "agent-guard: the output of `{tool}` contained secrets ({changed} field(s) redacted); \
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
