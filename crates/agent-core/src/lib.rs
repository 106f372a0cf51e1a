#![doc = include_str!("../README.md")]

pub mod apply_patch;
mod approver;
pub mod auto;
pub mod clients;
mod compose;
mod context;
mod error;
mod event;
mod executor;
mod guard;
mod ledger;
mod lift;
mod model;
pub mod network;
#[cfg(feature = "openai")]
mod openai;
mod output;
mod policy;
mod registry;
mod runtime;
mod schema;
mod sniff;
mod tool;
pub mod tools;
mod verdict;

pub use approver::{
    Approval, ApprovalOutcome, ApprovalReceiver, ApprovalRequest, Approver, ChannelApprover,
    DEFAULT_APPROVAL_TIMEOUT, FixedApprover, ask,
};
pub use context::{RemainingBudget, ToolContext};
pub use error::Error;
pub use event::{AgentEvent, ChannelSink, EventSink};
pub use executor::{
    CallScreen, DEFAULT_MAX_TOOL_OUTPUT_CHARS, DEFAULT_TOOL_TIMEOUT, Executor, ExecutorConfig,
    ToolCallResult,
};
pub use guard::{Guard, GuardBuilder};
pub use ledger::{CATASTROPHIC, LIFTABLE_DENIES, SessionLedger, not_liftable_because};
pub use lift::{
    AskItem, AskKind, AskResolution, CONFIGURED_ASKS, STEP_ASK_KINDS, only_side_effects,
    step_ask_kind,
};
pub use model::{
    AssistantMessage, Message, Model, ModelError, ModelRequest, ScriptedModel, ToolCall, Usage,
};
#[cfg(feature = "openai")]
pub use openai::OpenAiModel;
pub use output::{result_path, safe_file_stem, shrink_output, truncate_chars};
pub use policy::{Policy, PolicyDoc};
pub use registry::ToolRegistry;
pub use runtime::{
    AgentRuntime, BgNotificationQueue, CompactionRequest, RuntimeConfig, StopReason, TurnOutcome,
};
pub use sniff::{DetectorSniffer, PROJECT_TOLERATED};
pub use tool::{AgentTool, InterruptBehavior, ToolError, ToolOutput, ToolSchema};
pub use tools::{SubagentRequest, SubagentSpawner};
pub use verdict::{
    Call, ClientFinding, LedgerUse, PATH_ARGS, PATTERN_ARGS, PathArg, PatternArg, Step, URL_ARGS,
    Verdict, sandbox_refusal_decision,
};
