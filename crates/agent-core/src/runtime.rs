//! `AgentRuntime::run_turn`: the ReAct loop with layer 7's limits.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use perm_hooks::{CompactContext, SessionStartContext, SessionStopContext, StepContext};
use runtime_limits::{
    Action, CompactionCircuitBreaker, DuplicateDetector, Intervention, LimitsConfig, StepLimit,
    TokenBudget,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::context::{RemainingBudget, ToolContext};
use crate::event::{AgentEvent, EventSink};
use crate::executor::{CallScreen, Executor, ToolCallResult};
use crate::model::{AssistantMessage, Message, Model, ModelRequest};

/// How a background task's output is marked when the loop hands it to the model.
const BG_PREFIX: &str = "[background task]";

/// Results of background tasks waiting to be shown to the model. They are injected as user
/// messages right before the next model call; a background task never touches the
/// conversation itself.
#[derive(Debug, Clone, Default)]
pub struct BgNotificationQueue {
    inner: Arc<Mutex<VecDeque<String>>>,
}

impl BgNotificationQueue {
    /// An empty queue.
    pub fn new() -> Self {
        BgNotificationQueue::default()
    }

    /// Queues a notification.
    pub fn push(&self, text: impl Into<String>) {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back(text.into());
    }

    /// Takes every queued notification.
    pub fn drain(&self) -> Vec<String> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
            .collect()
    }

    /// How many are waiting.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Whether none are waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A flag the `compress_context` tool raises; the loop compacts after the step.
#[derive(Debug, Clone, Default)]
pub struct CompactionRequest(Arc<AtomicBool>);

impl CompactionRequest {
    /// Asks for a compaction after the current step.
    pub fn request(&self) {
        self.0.store(true, Ordering::Release);
    }

    fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}

/// Why a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered without tool calls.
    Answered,
    /// A limit forced a final answer (`max_steps`, `token_hard_limit`, `diminishing_returns`).
    Forced(String),
    /// The user cancelled the run.
    Cancelled,
    /// The model failed.
    ModelError(String),
}

impl StopReason {
    /// The stable code (`answered`, `max_steps`, `cancelled`, `model_error`, ...).
    pub fn code(&self) -> &str {
        match self {
            StopReason::Answered => "answered",
            StopReason::Forced(code) => code,
            StopReason::Cancelled => "cancelled",
            StopReason::ModelError(_) => "model_error",
        }
    }
}

/// What a turn produced.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The final text.
    pub answer: String,
    /// Why the turn ended.
    pub stop: StopReason,
    /// Steps taken (model calls with tools offered).
    pub steps: u32,
    /// Estimated tokens in the context at the end.
    pub tokens_used: u64,
    /// Every tool result of the turn, in order.
    pub results: Vec<ToolCallResult>,
    /// Every intervention of layer 7, in order.
    pub interventions: Vec<Intervention>,
}

/// Settings of a runtime.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Layer 7 limits.
    pub limits: LimitsConfig,
    /// Messages kept verbatim at the end of the conversation when compacting.
    pub compaction_keep_last: usize,
    /// The agent's name in hooks and audit rows (`lead`).
    pub agent_name: String,
    /// Subagent depth (0 for the lead).
    pub depth: u32,
    /// A silent run: no user (Ask = deny, `ask_user` errors), no events.
    pub silent: bool,
    /// The library directory (persisted results, memory).
    pub library_dir: Option<PathBuf>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            limits: LimitsConfig::default(),
            compaction_keep_last: 6,
            agent_name: "lead".to_owned(),
            depth: 0,
            silent: false,
            library_dir: None,
        }
    }
}

struct DupScreen<'a>(&'a mut DuplicateDetector, &'a mut Vec<Intervention>);

impl CallScreen for DupScreen<'_> {
    fn screen(&mut self, tool: &str, args: &Value) -> Option<(String, String)> {
        let iv = self.0.on_call(tool, args)?;
        let out = (iv.action() == Action::RefuseCall).then(|| (iv.code().to_owned(), iv.message()));
        self.1.push(iv);
        out
    }
}

/// The ReAct loop: model -> guarded tool calls -> model, under layer 7's limits.
pub struct AgentRuntime {
    model: Arc<dyn Model>,
    executor: Executor,
    config: RuntimeConfig,
    events: Option<Arc<dyn EventSink>>,
    sandbox: Option<Arc<fs_sandbox::Sandbox>>,
    notifications: BgNotificationQueue,
    compaction: CompactionRequest,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("executor", &self.executor)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn estimate(messages: &[Message]) -> u64 {
    messages.iter().map(Message::estimate_tokens).sum()
}

fn usize_tokens(t: u64) -> usize {
    usize::try_from(t).unwrap_or(usize::MAX)
}

impl AgentRuntime {
    /// A runtime over `model` and `executor`.
    pub fn new(model: Arc<dyn Model>, executor: Executor, config: RuntimeConfig) -> Self {
        AgentRuntime {
            model,
            executor,
            config,
            events: None,
            sandbox: None,
            notifications: BgNotificationQueue::new(),
            compaction: CompactionRequest::default(),
        }
    }

    /// With an event sink (ignored in a silent run).
    pub fn with_events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }

    /// With the sandbox handed to every tool.
    pub fn with_sandbox(mut self, sandbox: Arc<fs_sandbox::Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// With a shared notification queue (the one `bg_task_run` pushes to).
    pub fn with_notifications(mut self, queue: BgNotificationQueue) -> Self {
        self.notifications = queue;
        self
    }

    /// With a shared compaction flag (the one `compress_context` raises).
    pub fn with_compaction_request(mut self, flag: CompactionRequest) -> Self {
        self.compaction = flag;
        self
    }

    /// The executor.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The settings.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The notification queue.
    pub fn notifications(&self) -> &BgNotificationQueue {
        &self.notifications
    }

    fn emit(&self, event: AgentEvent) {
        if !self.config.silent
            && let Some(sink) = &self.events
        {
            sink.emit(event);
        }
    }

    fn base_context(&self, session_id: &str, cancel: &CancellationToken) -> ToolContext {
        let mut ctx = if self.config.silent {
            ToolContext::silent()
        } else {
            ToolContext::new(session_id)
        };
        if !self.config.silent {
            ctx.events = self.events.clone();
        }
        ctx.session_id = session_id.to_owned();
        ctx.agent_name = self.config.agent_name.clone();
        ctx.depth = self.config.depth;
        ctx.cancel = cancel.clone();
        ctx.run_cancel = cancel.clone();
        ctx.sandbox = self.sandbox.clone();
        ctx.library_dir = self.config.library_dir.clone();
        ctx
    }

    /// Keeps the system prompt, the first user message and the last `keep` messages, replacing
    /// the rest with a marker. A tool result is never separated from its assistant turn.
    async fn compact(&self, session_id: &str, messages: &mut Vec<Message>) -> Result<(), String> {
        let hooks = self.executor.hooks();
        let before = CompactContext {
            session_id: session_id.to_owned(),
            agent_name: self.config.agent_name.clone(),
            message_count: messages.len(),
            token_estimate: estimate(messages),
        };
        hooks.pre_compact(&before).await;
        let head = messages
            .iter()
            .position(|m| matches!(m, Message::User { .. }))
            .map_or(0, |i| i + 1);
        let mut cut = messages
            .len()
            .saturating_sub(self.config.compaction_keep_last)
            .max(head);
        while matches!(messages.get(cut), Some(Message::Tool { .. })) {
            cut += 1;
        }
        if cut <= head + 1 {
            return Err("nothing to compact".to_owned());
        }
        let removed = cut - head;
        let tail = messages.split_off(cut);
        messages.truncate(head);
        messages.push(Message::user(format!(
            "[context compacted: {removed} earlier messages were removed to stay within the token budget]"
        )));
        messages.extend(tail);
        hooks
            .post_compact(&CompactContext {
                message_count: messages.len(),
                token_estimate: estimate(messages),
                ..before
            })
            .await;
        Ok(())
    }

    /// Runs one user turn: `messages` holds the conversation (system prompt and the new user
    /// message already pushed) and grows with every assistant turn and tool result.
    pub async fn run_turn(
        &self,
        session_id: &str,
        messages: &mut Vec<Message>,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let limits = &self.config.limits;
        let hooks = self.executor.hooks();
        let started = std::time::Instant::now();
        // Auto mode shows its model the user's own requests: the user messages the turn starts
        // with, minus what the loop injected on the user's behalf (background task output).
        if self.executor.auto().is_some() {
            let requests = messages
                .iter()
                .filter_map(|m| match m {
                    Message::User { content } if !content.starts_with(BG_PREFIX) => {
                        Some(content.clone())
                    }
                    _ => None,
                })
                .collect();
            self.executor.set_user_requests(session_id, requests);
        }
        hooks
            .session_start(&SessionStartContext {
                session_id: session_id.to_owned(),
                agent_name: self.config.agent_name.clone(),
                cwd: self.sandbox.as_ref().map(|s| s.cwd().to_path_buf()),
            })
            .await;
        let mut dup = DuplicateDetector::new(
            limits.duplicate_threshold,
            limits.repeated_error_threshold,
            limits.duplicate_exempt.iter().map(String::as_str),
        );
        let mut budget = TokenBudget::new(
            limits.token_soft_limit,
            limits.token_hard_limit,
            limits.nudge_levels,
            limits.diminishing_steps,
            limits.min_new_tokens,
        );
        let step_limit = StepLimit::new(limits.max_steps);
        let mut breaker = CompactionCircuitBreaker::new(
            limits.compaction_failures,
            limits.compaction_cooldown_steps,
        );
        let schemas = self.executor.registry().schemas();
        let mut results = Vec::new();
        let mut interventions: Vec<Intervention> = Vec::new();
        let mut forced: Option<Intervention> = None;
        let mut step: u32 = 0;
        // What the model last reported (prompt + completion); the estimate is a floor.
        let mut reported: u64 = 0;
        let outcome = loop {
            step = step.saturating_add(1);
            if cancel.is_cancelled() {
                self.emit(AgentEvent::Error {
                    code: "cancelled".into(),
                    message: "the run was cancelled by the user".into(),
                });
                break (String::new(), StopReason::Cancelled);
            }
            if forced.is_none()
                && let Some(iv) = step_limit.check(step)
            {
                forced = Some(iv);
            }
            for note in self.notifications.drain() {
                messages.push(Message::user(format!("{BG_PREFIX} {note}")));
            }
            if forced.is_none() {
                let may_compact = !breaker.is_open(u64::from(step));
                let used = estimate(messages).max(reported);
                match budget.set_used(usize_tokens(used), may_compact) {
                    Some(iv) if iv.action() == Action::Compact => {
                        interventions.push(iv);
                        match self.compact(session_id, messages).await {
                            Ok(()) => {
                                breaker.record_success();
                                reported = 0;
                            }
                            Err(why) => {
                                tracing::warn!(%why, "compaction failed");
                                breaker.record_failure(u64::from(step));
                            }
                        }
                        let after = estimate(messages).max(reported);
                        if let Some(iv) = budget.set_used(usize_tokens(after), false)
                            && iv.is_stop()
                        {
                            forced = Some(iv);
                        }
                    }
                    Some(iv) if iv.is_stop() => forced = Some(iv),
                    Some(iv) => {
                        messages.push(Message::user(iv.message()));
                        interventions.push(iv);
                    }
                    None => {}
                }
            }
            if let Some(iv) = forced.take() {
                let code = iv.code().to_owned();
                messages.push(Message::user(iv.message()));
                interventions.push(iv);
                let answer = match self
                    .model
                    .complete(ModelRequest {
                        messages,
                        tools: &[],
                    })
                    .await
                {
                    Ok(mut m) => {
                        m.tool_calls.clear();
                        let text = m.content.clone();
                        messages.push(Message::Assistant(m));
                        text
                    }
                    Err(err) => err.to_string(),
                };
                break (answer, StopReason::Forced(code));
            }
            let reply: AssistantMessage = match self
                .model
                .complete(ModelRequest {
                    messages,
                    tools: &schemas,
                })
                .await
            {
                Ok(m) => m,
                Err(err) => {
                    self.emit(AgentEvent::Error {
                        code: "model_error".into(),
                        message: err.to_string(),
                    });
                    break (String::new(), StopReason::ModelError(err.to_string()));
                }
            };
            if let Some(usage) = reply.usage {
                reported = usage.prompt_tokens.saturating_add(usage.completion_tokens);
            }
            let calls = reply.tool_calls.clone();
            messages.push(Message::Assistant(reply.clone()));
            if calls.is_empty() {
                break (reply.content, StopReason::Answered);
            }
            let mut ctx = self.base_context(session_id, cancel);
            ctx.step = step;
            let used = estimate(messages);
            ctx.budget = RemainingBudget {
                steps: limits.max_steps.saturating_sub(step),
                tokens: (limits.token_hard_limit as u64).saturating_sub(used),
            };
            let step_results = {
                let mut screen = DupScreen(&mut dup, &mut interventions);
                self.executor
                    .execute_parallel(&calls, &ctx, Some(&mut screen))
                    .await
            };
            for r in &step_results {
                messages.push(r.to_message());
                if r.executed {
                    budget.record_output(&r.content, None);
                }
                if let Some(iv) = dup.on_result(&r.tool, &r.content, r.is_error) {
                    messages.push(Message::user(iv.message()));
                    interventions.push(iv);
                }
            }
            results.extend(step_results);
            hooks
                .step_complete(&StepContext {
                    session_id: session_id.to_owned(),
                    agent_name: self.config.agent_name.clone(),
                    step,
                })
                .await;
            if self.compaction.take() {
                match self.compact(session_id, messages).await {
                    Ok(()) => {
                        breaker.record_success();
                        reported = 0;
                    }
                    Err(_) => breaker.record_failure(u64::from(step)),
                }
            }
            if let Some(iv) = budget.end_step() {
                forced = Some(iv);
            }
        };
        let (answer, stop) = outcome;
        if stop != StopReason::Cancelled && !answer.is_empty() {
            self.emit(AgentEvent::Answer {
                content: answer.clone(),
            });
        }
        let stop_ctx = SessionStopContext {
            session_id: session_id.to_owned(),
            agent_name: self.config.agent_name.clone(),
            reason: stop.code().to_owned(),
            steps: step,
            elapsed: started.elapsed(),
        };
        hooks.session_stop(&stop_ctx).await;
        // The audit log is the executor's, not a registered hook: the seed's `SESSION_STOP`
        // row is written here, on every way a session ends.
        if let Some(audit) = self.executor.audit() {
            audit
                .record(perm_hooks::AuditRow::session_stop(&stop_ctx))
                .await;
        }
        TurnOutcome {
            answer,
            stop,
            steps: step,
            tokens_used: estimate(messages),
            results,
            interventions,
        }
    }
}
