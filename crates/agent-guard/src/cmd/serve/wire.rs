//! The JSON the approval server and its clients exchange. One definition for both sides, so the
//! `run`/hook clients and the server cannot drift apart.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One layer's step of the verdict that asked (agent-core's `Step`, as owned strings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireStep {
    pub layer: String,
    #[serde(default)]
    pub saw: String,
    pub decision: String,
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl From<&agent_core::Step> for WireStep {
    fn from(s: &agent_core::Step) -> WireStep {
        WireStep {
            layer: s.layer.to_owned(),
            saw: s.saw.clone(),
            decision: s.decision.as_str().to_owned(),
            code: s.code.clone(),
            message: s.message.clone(),
            rule: s.rule.clone(),
            source: s.source.clone(),
        }
    }
}

/// `POST /api/requests`: a client's Ask. The response comes when a person (or the deadline)
/// answers it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewRequest {
    /// The session the call belongs to.
    pub session: String,
    /// The agent asking (`lead` or a subagent).
    #[serde(default)]
    pub agent: String,
    /// The client (`run`, `claude-code`, `codex`, ...).
    #[serde(default)]
    pub client: String,
    /// The call's id in its session.
    #[serde(default)]
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The final arguments (redacted by the server before anyone sees them).
    pub args: Value,
    /// Why the guard asks (the deciding step, in words).
    #[serde(default)]
    pub message: String,
    /// The whole layer trace.
    #[serde(default)]
    pub steps: Vec<WireStep>,
    /// How long the client can wait (its own hook timeout); the server's deadline is the
    /// smaller of this and its own.
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

/// The answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Decision {
    Allow,
    Deny,
}

/// How long an answer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Scope {
    /// This call only.
    #[default]
    Once,
    /// This call and every identical call (same session, tool and arguments) after it.
    Session,
}

/// `POST /api/permissions/{id}`: a person's answer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    pub decision: Decision,
    #[serde(default)]
    pub scope: Scope,
}

/// Who ended a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ResolvedBy {
    /// A person answered it.
    User,
    /// Nobody answered before the deadline (a deny).
    Timeout,
    /// An earlier "for session" answer covered it.
    SessionGrant,
    /// Its session was cancelled (a deny).
    Cancelled,
    /// The waiting client went away; nobody is left to run it.
    Withdrawn,
    /// The server stopped (a deny).
    ServerStopped,
}

/// How a request ended: the body of the `POST /api/requests` response and of the
/// `PermissionResolved` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Resolution {
    pub id: String,
    pub session: String,
    pub tool: String,
    pub decision: Decision,
    pub scope: Scope,
    pub by: ResolvedBy,
    /// A sentence a person can act on.
    pub reason: String,
}

/// `POST /api/report`: what a client tells the server about its session besides Asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
pub(crate) enum Report {
    /// A session began (it shows in `GET /api/sessions` before its first Ask).
    SessionStart {
        session: String,
        #[serde(default)]
        agent: String,
        #[serde(default)]
        client: String,
    },
    /// A call finished (or was refused).
    ToolResult {
        session: String,
        call_id: String,
        tool: String,
        is_error: bool,
        #[serde(default)]
        code: Option<String>,
    },
    /// The session ended.
    SessionStop {
        session: String,
        #[serde(default)]
        reason: String,
    },
}

/// `POST /api/chat/cancel`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Cancel {
    pub session: String,
}

/// The bearer token clients send: read from a file, trimmed.
pub(crate) fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read the token file `{}`: {e}", path.display()))?;
    let token = text.trim().to_owned();
    anyhow::ensure!(
        token.len() >= 16 && token.chars().all(|c| c.is_ascii_graphic()),
        "the token file `{}` must hold one token of at least 16 printable characters",
        path.display()
    );
    Ok(token)
}

/// Where `serve` keeps its token and clients look for it when told nothing else.
pub(crate) fn default_token_file() -> std::path::PathBuf {
    let home = std::env::var_os("HOME")
        .map_or_else(|| std::path::PathBuf::from("."), std::path::PathBuf::from);
    home.join(".agent-guard").join("serve.token")
}
