//! Events a run emits for a UI or server to stream (the spec's SSE channel, as a trait).

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

/// One event of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A call needs a person's approval; answer through the [`crate::Approver`].
    PermissionRequest {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The final arguments (after hooks).
        args: Value,
        /// Why approval is needed.
        message: String,
    },
    /// A call passed every check and starts.
    ToolStarted {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
    },
    /// Progress text from a running tool.
    ToolProgress {
        /// The call id.
        call_id: String,
        /// The text.
        message: String,
    },
    /// A call finished (or was refused).
    ToolResult {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Whether the result is an error.
        is_error: bool,
        /// The reason code of an error result.
        code: Option<String>,
    },
    /// The assistant's final text for the turn.
    Answer {
        /// The text.
        content: String,
    },
    /// The run stopped on an error, a limit or a cancel.
    Error {
        /// Stable code (`cancelled`, `step-limit`, ...).
        code: String,
        /// The message.
        message: String,
    },
}

/// Receives events. Implementations must not block: a slow consumer loses nothing the audit log
/// keeps, but must never stall the agent.
pub trait EventSink: Send + Sync {
    /// Delivers one event.
    fn emit(&self, event: AgentEvent);
}

/// An [`EventSink`] over an unbounded tokio channel.
#[derive(Debug, Clone)]
pub struct ChannelSink {
    tx: mpsc::UnboundedSender<AgentEvent>,
}

impl ChannelSink {
    /// A sink and the receiver its events arrive on.
    pub fn new() -> (ChannelSink, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ChannelSink { tx }, rx)
    }
}

impl EventSink for ChannelSink {
    fn emit(&self, event: AgentEvent) {
        // A closed receiver means nobody listens any more; the run itself goes on.
        let _ = self.tx.send(event);
    }
}
