//! The runner: one isolated child ReAct loop per `subagent` call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_core::{
    AgentRuntime, Message, Model, RuntimeConfig, StopReason, SubagentRequest, SubagentSpawner,
    ToolContext, ToolError,
};
use async_trait::async_trait;
use perm_hooks::{SubagentStartContext, SubagentStopContext};
use runtime_limits::LimitsConfig;

/// How deep subagents may nest by default: the lead (depth 0) may spawn, a child may not.
pub const DEFAULT_MAX_DEPTH: u32 = 1;

/// Errors of configuring a runner.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Two types with one name.
    #[error("a subagent type named `{0}` is already defined")]
    DuplicateType(String),
}

/// A kind of subagent: its prompt, the tools it may see, its own step cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentType {
    /// The name the model passes as `kind`.
    pub name: String,
    /// The child's system prompt.
    pub system_prompt: String,
    /// The only tools the child sees (a name not in the parent's registry is ignored, so a
    /// child never gains a tool its parent lacks).
    pub tools: Vec<String>,
    /// A step cap of its own (further capped by what the parent has left).
    pub max_steps: Option<u32>,
}

impl SubagentType {
    /// The read-only `explore` type: `read_file`, `grep_files`, `glob_files`.
    pub fn explore() -> Self {
        SubagentType {
            name: "explore".into(),
            system_prompt: "You are a read-only research subagent. Explore the files you need and \
                answer the task concisely. You cannot ask the user anything or change files."
                .into(),
            tools: vec!["read_file".into(), "grep_files".into(), "glob_files".into()],
            max_steps: Some(6),
        }
    }
}

/// Runs subagents with the spec's isolation:
///
/// | dimension | child |
/// |---|---|
/// | messages | fresh: `[system_prompt, user_prompt]` only |
/// | tools | the parent's registry restricted to the type's allowlist (`subagent` removed at the depth limit) |
/// | tool context | silent: no session events, `ask_user` errors |
/// | permission checker, session rules, hooks, audit | the parent's executor's, shared (`Arc`) |
/// | Ask | denied at once (silent context, no approver) |
/// | duplicate detection, token budget, compaction | its own `AgentRuntime` state |
/// | budget | steps and tokens carved out of what the parent has left |
///
/// It implements agent-core's [`SubagentSpawner`], so `agent_core::tools::SubagentTool` can call
/// it without agent-core depending on this crate.
pub struct SubAgentRunner {
    model: Arc<dyn Model>,
    models: BTreeMap<String, Arc<dyn Model>>,
    types: BTreeMap<String, SubagentType>,
    limits: LimitsConfig,
    max_depth: u32,
    next: AtomicU64,
}

impl std::fmt::Debug for SubAgentRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgentRunner")
            .field("types", &self.types)
            .field("max_depth", &self.max_depth)
            .finish_non_exhaustive()
    }
}

impl SubAgentRunner {
    /// A runner whose children talk to `model`, with the `explore` type and the default depth.
    pub fn new(model: Arc<dyn Model>) -> Self {
        let mut types = BTreeMap::new();
        let explore = SubagentType::explore();
        types.insert(explore.name.clone(), explore);
        SubAgentRunner {
            model,
            models: BTreeMap::new(),
            types,
            limits: LimitsConfig::default(),
            max_depth: DEFAULT_MAX_DEPTH,
            next: AtomicU64::new(1),
        }
    }

    /// Adds a type.
    pub fn with_type(mut self, kind: SubagentType) -> Result<Self, Error> {
        if self.types.contains_key(&kind.name) {
            return Err(Error::DuplicateType(kind.name));
        }
        self.types.insert(kind.name.clone(), kind);
        Ok(self)
    }

    /// A different model for children of `kind`.
    pub fn with_model_for(mut self, kind: &str, model: Arc<dyn Model>) -> Self {
        self.models.insert(kind.to_owned(), model);
        self
    }

    /// The limits children start from (then capped by the parent's remaining budget).
    pub fn with_limits(mut self, limits: LimitsConfig) -> Self {
        self.limits = limits;
        self
    }

    /// The nesting limit: a context at this depth cannot spawn.
    pub fn with_max_depth(mut self, depth: u32) -> Self {
        self.max_depth = depth;
        self
    }

    /// The child's limits: its own, capped by what the parent has left.
    fn carve(&self, kind: &SubagentType, parent: &ToolContext) -> LimitsConfig {
        let mut limits = self.limits.clone();
        let own = kind.max_steps.unwrap_or(limits.max_steps);
        limits.max_steps = own.min(parent.budget.steps);
        let left = usize::try_from(parent.budget.tokens).unwrap_or(usize::MAX);
        limits.token_hard_limit = limits.token_hard_limit.min(left);
        limits.token_soft_limit = limits
            .token_soft_limit
            .min(limits.token_hard_limit.saturating_mul(4) / 5);
        limits
    }
}

#[async_trait]
impl SubagentSpawner for SubAgentRunner {
    fn kinds(&self) -> Vec<String> {
        self.types.keys().cloned().collect()
    }

    async fn spawn(
        &self,
        request: SubagentRequest,
        parent: &ToolContext,
    ) -> Result<String, ToolError> {
        if parent.depth >= self.max_depth {
            return Err(ToolError::denied(
                "subagent-depth-limit",
                format!(
                    "a subagent at depth {} cannot start another (the limit is {})",
                    parent.depth, self.max_depth
                ),
            ));
        }
        let kind = self.types.get(&request.kind).ok_or_else(|| {
            ToolError::InvalidArgs(format!("unknown subagent type `{}`", request.kind))
        })?;
        let executor = parent.executor.clone().ok_or_else(|| {
            ToolError::denied(
                "subagent-no-executor",
                "the calling context has no executor to inherit",
            )
        })?;
        let limits = self.carve(kind, parent);
        if limits.max_steps == 0 || limits.token_hard_limit == 0 {
            return Err(ToolError::denied(
                "subagent-no-budget",
                "the parent has no steps or tokens left to give a subagent",
            ));
        }
        let depth = parent.depth + 1;
        let mut registry = executor.registry().restrict(&kind.tools);
        if depth >= self.max_depth {
            registry = registry.without(&["subagent"]);
        }
        let hooks = Arc::clone(executor.hooks());
        let child_exec = executor.with_registry(registry).without_approver();
        let config = RuntimeConfig {
            limits,
            agent_name: kind.name.clone(),
            depth,
            silent: true,
            library_dir: parent.library_dir.clone(),
            ..RuntimeConfig::default()
        };
        let model = self
            .models
            .get(&kind.name)
            .cloned()
            .unwrap_or_else(|| Arc::clone(&self.model));
        let mut runtime = AgentRuntime::new(model, child_exec, config);
        if let Some(sandbox) = &parent.sandbox {
            runtime = runtime.with_sandbox(Arc::clone(sandbox));
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let child_session = format!("{}/{}-{n}", parent.session_id, kind.name);
        hooks
            .subagent_start(&SubagentStartContext {
                session_id: parent.session_id.clone(),
                subagent_session_id: child_session.clone(),
                subagent_name: kind.name.clone(),
                task: request.prompt.clone(),
            })
            .await;
        let mut messages = vec![
            Message::system(kind.system_prompt.clone()),
            Message::user(request.prompt),
        ];
        // The user's cancel stops the child's loop at its next step (its Block tools finish);
        // the subagent tool itself is Block, so its own token does not fire on a cancel.
        let cancel = parent.run_cancel.child_token();
        let outcome = runtime
            .run_turn(&child_session, &mut messages, &cancel)
            .await;
        hooks
            .subagent_stop(&SubagentStopContext {
                session_id: parent.session_id.clone(),
                subagent_session_id: child_session,
                subagent_name: kind.name.clone(),
                outcome: outcome.stop.code().to_owned(),
                steps: outcome.steps,
            })
            .await;
        match outcome.stop {
            StopReason::Cancelled => Err(ToolError::Cancelled),
            StopReason::ModelError(e) => {
                Err(ToolError::Failed(format!("subagent model error: {e}")))
            }
            _ => Ok(outcome.answer),
        }
    }
}
