//! Redacting secrets from a tool's response, for every client's after-tool event.
//!
//! Claude Code replaces a tool's output with `hookSpecificOutput.updatedToolOutput` (an MCP
//! tool's with `updatedMCPToolOutput`); a `decision: "block"` alone would still hand the raw
//! output to the model (seen in the real client, tests/clients). So the hook answers the
//! redacted response, same shape, in that field, with a note as `additionalContext`. Codex and
//! Gemini CLI answer with the redacted text as their block/deny reason.

use serde_json::{Value, json};

/// The fields of a Claude Code `PostToolUse` event the redaction uses.
#[derive(Debug)]
pub(crate) struct HookInput {
    pub tool_name: String,
    pub tool_input: Value,
    pub tool_response: Option<Value>,
}

/// A response with its secrets redacted.
pub(crate) struct Redacted {
    /// The response, every secret replaced by `[REDACTED:kind]`.
    pub value: Value,
    /// The same as text.
    pub text: String,
    /// How many secrets were found.
    pub count: usize,
    /// Their kinds, sorted and deduplicated.
    pub kinds: String,
}

/// Redacts `response` under the policy's `[hooks]` (`redact_secrets`, and `[hooks.redaction]`
/// for the detectors and allow-lists) with perm-hooks' scanner, the one the runtime's
/// redaction hook uses. `None` when nothing was found, redaction is off, or the call's path is
/// allow-listed.
pub(crate) fn redact_response(
    hooks: &perm_hooks::HooksConfig,
    tool_input: &Value,
    response: &Value,
) -> anyhow::Result<Option<Redacted>> {
    if !hooks.redact_secrets {
        return Ok(None);
    }
    let scanner = hooks.secret_scanner()?;
    if perm_hooks::call_path(tool_input).is_some_and(|p| scanner.path_allowed(p)) {
        return Ok(None);
    }
    let (value, findings) = scanner.redact_json(response);
    if findings.is_empty() {
        return Ok(None);
    }
    let mut kinds: Vec<&str> = findings.iter().map(|f| &*f.detector).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let text = match &value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other)?,
    };
    Ok(Some(Redacted {
        count: findings.len(),
        kinds: kinds.join(", "),
        value,
        text,
    }))
}

/// The answer to a Claude Code `PostToolUse` event.
pub(crate) fn post_tool_use(
    input: &HookInput,
    hooks: &perm_hooks::HooksConfig,
) -> anyhow::Result<Value> {
    let Some(response) = &input.tool_response else {
        anyhow::bail!(
            "malformed hook JSON on stdin: `tool_response` is missing from a PostToolUse event"
        );
    };
    let Some(r) = redact_response(hooks, &input.tool_input, response)? else {
        return Ok(json!({}));
    };
    let tool = &input.tool_name;
    // `updatedToolOutput` replaces what the model sees (a `decision: block` would not: the
    // raw output still reaches it). It keeps the response's shape, so the tool's own fields
    // stay; MCP tools read `updatedMCPToolOutput`.
    let note = format!(
        "agent-guard: the output of `{tool}` contained secrets ({} redacted: {}); \
         do not repeat, store or use them",
        r.count, r.kinds
    );
    let field = if tool.starts_with("mcp__") {
        "updatedMCPToolOutput"
    } else {
        "updatedToolOutput"
    };
    let mut specific = serde_json::Map::new();
    specific.insert("hookEventName".to_owned(), json!("PostToolUse"));
    specific.insert("additionalContext".to_owned(), json!(note));
    specific.insert(field.to_owned(), r.value);
    Ok(json!({ "hookSpecificOutput": specific }))
}
