//! What a tool sees of the run it belongs to.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::event::{AgentEvent, EventSink};

/// What is left of the run's budget when a tool starts (a subagent carves its own out of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RemainingBudget {
    /// Steps the run may still take.
    pub steps: u32,
    /// Tokens the run may still spend.
    pub tokens: u64,
}

/// The context of one tool call.
#[derive(Clone)]
pub struct ToolContext {
    /// The session (empty for a silent subagent context).
    pub session_id: String,
    /// `lead`, or the subagent's name.
    pub agent_name: String,
    /// The id of the call being executed.
    pub call_id: String,
    /// The ReAct step.
    pub step: u32,
    /// A silent context has no user: `ask_user` errors and Ask decisions are denied at once.
    pub silent: bool,
    /// Subagent nesting depth (0 for the lead agent).
    pub depth: u32,
    /// Where events go; `None` for silent contexts.
    pub events: Option<Arc<dyn EventSink>>,
    /// Fires when the call should stop (user cancel for Cancel tools, sibling abort, timeout).
    pub cancel: CancellationToken,
    /// The run's own cancellation (the user's cancel), whatever the tool's interrupt behaviour.
    /// A tool that runs a loop of its own (a subagent) stops that loop at its next step on it,
    /// letting the step's Block tools finish.
    pub run_cancel: CancellationToken,
    /// The filesystem sandbox every file access goes through.
    pub sandbox: Option<Arc<fs_sandbox::Sandbox>>,
    /// The run's budget left at this step.
    pub budget: RemainingBudget,
    /// The agent's library directory (persisted tool results, memory).
    pub library_dir: Option<PathBuf>,
    /// The executor running this call (set by the executor). Subagents and background tasks
    /// run their own calls through it, so they inherit every guard of their parent.
    pub executor: Option<crate::Executor>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id)
            .field("agent_name", &self.agent_name)
            .field("call_id", &self.call_id)
            .field("step", &self.step)
            .field("silent", &self.silent)
            .field("depth", &self.depth)
            .field("events", &self.events.is_some())
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// An interactive context for `session_id` of the lead agent, without events or sandbox.
    pub fn new(session_id: impl Into<String>) -> Self {
        ToolContext {
            session_id: session_id.into(),
            agent_name: "lead".to_owned(),
            call_id: String::new(),
            step: 0,
            silent: false,
            depth: 0,
            events: None,
            cancel: CancellationToken::new(),
            run_cancel: CancellationToken::new(),
            sandbox: None,
            budget: RemainingBudget::default(),
            library_dir: None,
            executor: None,
        }
    }

    /// A silent context: no session, no events, no user to ask.
    pub fn silent() -> Self {
        ToolContext {
            session_id: String::new(),
            silent: true,
            ..ToolContext::new("")
        }
    }

    /// With an event sink.
    pub fn with_events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }

    /// With a sandbox.
    pub fn with_sandbox(mut self, sandbox: Arc<fs_sandbox::Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// With a cancellation token (for the call and the run).
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.run_cancel = cancel.clone();
        self.cancel = cancel;
        self
    }

    /// Emits `event` when there is a sink.
    pub fn emit(&self, event: AgentEvent) {
        if let Some(sink) = &self.events {
            sink.emit(event);
        }
    }

    /// Reports progress of the current call.
    pub fn progress(&self, message: impl Into<String>) {
        self.emit(AgentEvent::ToolProgress {
            call_id: self.call_id.clone(),
            message: message.into(),
        });
    }

    /// The sandbox, or a denial when the context has none (file tools fail closed).
    pub fn require_sandbox(&self) -> Result<&Arc<fs_sandbox::Sandbox>, crate::ToolError> {
        self.sandbox.as_ref().ok_or_else(|| {
            crate::ToolError::denied(
                "no-sandbox",
                "file access is refused: this context has no sandbox configured",
            )
        })
    }
}
