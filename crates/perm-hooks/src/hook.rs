//! The hook trait, the contexts agent-core fills and the actions hooks return.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a hook could not do its job. Distinct from a deliberate [`PreToolUseAction::Block`]:
/// the registry applies the hook's `on_error` policy to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookError(pub String);

impl HookError {
    /// A failure with a message a person can act on.
    pub fn new(message: impl Into<String>) -> Self {
        HookError(message.into())
    }
}

impl std::fmt::Display for HookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HookError {}

/// What a hook method returns.
pub type HookResult<T = ()> = Result<T, HookError>;

/// A tool call about to run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PreToolUseContext {
    /// The session (run) id.
    pub session_id: String,
    /// The ReAct step number.
    pub step: u32,
    /// `lead` or the subagent's name.
    pub agent_name: String,
    /// The tool being called.
    pub tool_name: String,
    /// The model's id for this call.
    pub tool_call_id: String,
    /// The call's arguments; hooks see the previous hook's mutation.
    pub args: Value,
    /// The working directory of the session, when known.
    pub cwd: Option<PathBuf>,
    /// The transcript file, when there is one (passed on to command hooks).
    pub transcript_path: Option<PathBuf>,
}

/// A tool call that has run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PostToolUseContext {
    /// The session (run) id.
    pub session_id: String,
    /// The ReAct step number.
    pub step: u32,
    /// `lead` or the subagent's name.
    pub agent_name: String,
    /// The tool that ran.
    pub tool_name: String,
    /// The model's id for this call.
    pub tool_call_id: String,
    /// The final arguments the tool ran with.
    pub args: Value,
    /// The tool's output; hooks see the previous hook's mutation.
    pub output: String,
    /// Whether the tool reported an error.
    pub is_error: bool,
    /// How long the tool ran.
    pub elapsed: Duration,
    /// The working directory of the session, when known.
    pub cwd: Option<PathBuf>,
    /// The transcript file, when there is one.
    pub transcript_path: Option<PathBuf>,
}

/// A session starting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStartContext {
    /// The session (run) id.
    pub session_id: String,
    /// `lead` or the subagent's name.
    pub agent_name: String,
    /// The working directory, when known.
    pub cwd: Option<PathBuf>,
}

/// A session stopping.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStopContext {
    /// The session (run) id.
    pub session_id: String,
    /// `lead` or the subagent's name.
    pub agent_name: String,
    /// Why it stopped (`completed`, `cancelled`, `step_limit`, ...).
    pub reason: String,
    /// How many steps ran.
    pub steps: u32,
    /// How long the session ran.
    pub elapsed: Duration,
}

/// A ReAct step finished.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepContext {
    /// The session (run) id.
    pub session_id: String,
    /// `lead` or the subagent's name.
    pub agent_name: String,
    /// The step that finished.
    pub step: u32,
}

/// A subagent starting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubagentStartContext {
    /// The parent session id.
    pub session_id: String,
    /// The subagent's own session id.
    pub subagent_session_id: String,
    /// The subagent's name.
    pub subagent_name: String,
    /// The task it was given.
    pub task: String,
}

/// A subagent finished.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubagentStopContext {
    /// The parent session id.
    pub session_id: String,
    /// The subagent's own session id.
    pub subagent_session_id: String,
    /// The subagent's name.
    pub subagent_name: String,
    /// How it ended (`completed`, `failed`, `cancelled`, ...).
    pub outcome: String,
    /// How many steps it ran.
    pub steps: u32,
}

/// Context compaction, before or after.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactContext {
    /// The session (run) id.
    pub session_id: String,
    /// `lead` or the subagent's name.
    pub agent_name: String,
    /// Messages in the context at this point.
    pub message_count: usize,
    /// Estimated tokens in the context at this point.
    pub token_estimate: u64,
}

/// What a pre-tool-use hook wants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PreToolUseAction {
    /// Go on.
    Continue,
    /// Do not run the call; the first Block ends the chain.
    Block {
        /// Shown to the model and the user.
        reason: String,
    },
    /// Replace the arguments and/or add context for the model.
    MutateInput {
        /// The new arguments, or `None` to keep them.
        updated_args: Option<Value>,
        /// Text appended (in hook order) to what the model sees.
        additional_context: Option<String>,
    },
    /// Ask a person before running, even if the rules allow it (precedence P4).
    PermissionRequired {
        /// Why approval is needed.
        message: String,
    },
}

/// What a post-tool-use hook wants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PostToolUseAction {
    /// Keep the output.
    Continue,
    /// Replace the output the model will see.
    MutateOutput {
        /// The new output.
        updated_content: String,
    },
}

/// A programmable interception point. Every method is a no-op by default; a hook overrides
/// the events it cares about. Methods return [`HookResult`] so a hook that cannot decide is
/// reported as a failure, never mistaken for a decision.
#[async_trait]
pub trait AgentHook: Send + Sync {
    /// A stable name used in results, logs and audit rows.
    fn name(&self) -> &str;

    /// Whether this hook has anything to do before tool calls. A hook that answers `false`
    /// is skipped by the pre chain (no task, no timer): the decision path of every call pays
    /// only for hooks that can change it.
    fn wants_pre_tool_use(&self) -> bool {
        true
    }

    /// A session started.
    async fn on_session_start(&self, _ctx: &SessionStartContext) -> HookResult {
        Ok(())
    }

    /// A tool call is about to run.
    async fn pre_tool_use(&self, _ctx: &PreToolUseContext) -> HookResult<PreToolUseAction> {
        Ok(PreToolUseAction::Continue)
    }

    /// A tool call has run.
    async fn post_tool_use(&self, _ctx: &PostToolUseContext) -> HookResult<PostToolUseAction> {
        Ok(PostToolUseAction::Continue)
    }

    /// A ReAct step finished.
    async fn on_step_complete(&self, _ctx: &StepContext) -> HookResult {
        Ok(())
    }

    /// A session stopped.
    async fn on_session_stop(&self, _ctx: &SessionStopContext) -> HookResult {
        Ok(())
    }

    /// A subagent started.
    async fn on_subagent_start(&self, _ctx: &SubagentStartContext) -> HookResult {
        Ok(())
    }

    /// A subagent stopped.
    async fn on_subagent_stop(&self, _ctx: &SubagentStopContext) -> HookResult {
        Ok(())
    }

    /// The context is about to be compacted.
    async fn on_pre_compact(&self, _ctx: &CompactContext) -> HookResult {
        Ok(())
    }

    /// The context was compacted.
    async fn on_post_compact(&self, _ctx: &CompactContext) -> HookResult {
        Ok(())
    }
}
