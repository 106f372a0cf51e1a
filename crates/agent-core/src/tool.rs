//! Layer 1: the tool contract.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolContext;

/// What a running tool does when the user cancels the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InterruptBehavior {
    /// Stop at once (read-only tools, or writes that are safe to abandon).
    Cancel,
    /// Ignore the interrupt and run to completion (writes that must commit whole).
    Block,
}

/// A tool's successful output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The text handed back to the model.
    pub content: String,
}

impl ToolOutput {
    /// An output with `content`.
    pub fn text(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
        }
    }
}

/// Why a tool call produced no output. Every variant has a stable [`ToolError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's schema or contract.
    #[error("invalid arguments: {0}")]
    InvalidArgs(String),
    /// A guard layer refused (sandbox, bash analysis, silent context, ...).
    #[error("{message}")]
    Denied {
        /// Stable reason code, e.g. `sandbox-outside-roots`.
        code: String,
        /// What a person can do about it.
        message: String,
    },
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The user cancelled the turn while the tool ran.
    #[error("cancelled by the user")]
    Cancelled,
    /// A sibling tool of the same batch failed and asked for its siblings to stop.
    #[error("aborted: sibling tool `{0}` failed")]
    SiblingAborted(String),
    /// The per-tool timeout fired.
    #[error("timed out after {0} s")]
    Timeout(u64),
}

impl ToolError {
    /// A denial with `code` and `message`.
    pub fn denied(code: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError::Denied {
            code: code.into(),
            message: message.into(),
        }
    }

    /// The stable machine-readable reason code.
    pub fn code(&self) -> &str {
        match self {
            ToolError::InvalidArgs(_) => "invalid-args",
            ToolError::Denied { code, .. } => code,
            ToolError::Failed(_) => "tool-failed",
            ToolError::Cancelled => "cancelled",
            ToolError::SiblingAborted(_) => "sibling-aborted",
            ToolError::Timeout(_) => "tool-timeout",
        }
    }
}

/// A tool's declaration as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The tool name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments (an `object` schema).
    pub parameters: Value,
}

/// A tool the agent may call. Object-safe: tools live in a registry as `Arc<dyn AgentTool>`.
///
/// The four safety methods are layer 1 of the stack; their defaults are the conservative ones
/// of the spec (cancellable, serial, no own rules, no sibling abort).
#[async_trait]
pub trait AgentTool: Send + Sync {
    /// The unique name (`read_file`).
    fn name(&self) -> &str;

    /// One paragraph for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments; the executor validates calls against it before any hook
    /// or rule sees them.
    fn parameters(&self) -> Value;

    /// Runs the call. File access goes through `ctx`'s sandbox; `ctx.cancel` fires on an
    /// interrupt the tool is expected to honour.
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// What happens on a user interrupt. Default [`InterruptBehavior::Cancel`].
    fn interrupt_behavior(&self) -> InterruptBehavior {
        InterruptBehavior::Cancel
    }

    /// Whether this call may run in parallel with its neighbours. Default `false`.
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        false
    }

    /// The tool's own rules for this call (precedence rows P1 and P6). Default none.
    fn check_permissions(&self, _args: &Value) -> Vec<perm_rules::PermissionRule> {
        Vec::new()
    }

    /// Whether a failure of this tool stops its running siblings. Default `false`.
    fn causes_sibling_abort(&self) -> bool {
        false
    }

    /// Whether the tool never changes anything (what `plan` mode lets through). Default `false`.
    fn is_read_only(&self) -> bool {
        false
    }

    /// The declaration handed to the model.
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}
