//! The seed's built-in hooks: cancellation and metrics.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;

use crate::hook::{
    AgentHook, HookResult, PostToolUseAction, PostToolUseContext, PreToolUseAction,
    PreToolUseContext, SessionStartContext, SessionStopContext, StepContext,
};

/// Which sessions are cancelled. A trait so agent-core can back it by its own cancellation
/// registry; [`CancelledSet`] is the in-memory default.
pub trait CancellationSource: Send + Sync {
    /// Whether `session_id` was cancelled.
    fn is_cancelled(&self, session_id: &str) -> bool;
    /// Forgets `session_id` (its session stopped).
    fn clear(&self, session_id: &str);
}

/// A shared set of cancelled session ids.
#[derive(Debug, Default)]
pub struct CancelledSet {
    ids: Mutex<HashSet<String>>,
}

impl CancelledSet {
    /// An empty set.
    pub fn new() -> Self {
        CancelledSet::default()
    }

    /// Marks `session_id` cancelled.
    pub fn cancel(&self, session_id: &str) {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session_id.to_owned());
    }
}

impl CancellationSource for CancelledSet {
    fn is_cancelled(&self, session_id: &str) -> bool {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(session_id)
    }

    fn clear(&self, session_id: &str) {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session_id);
    }
}

/// Blocks every tool call of a cancelled session; forgets the session when it stops.
pub struct CancellationHook {
    source: Arc<dyn CancellationSource>,
}

impl CancellationHook {
    /// A hook reading `source`.
    pub fn new(source: Arc<dyn CancellationSource>) -> Self {
        CancellationHook { source }
    }
}

#[async_trait]
impl AgentHook for CancellationHook {
    fn name(&self) -> &str {
        "cancellation"
    }

    async fn pre_tool_use(&self, ctx: &PreToolUseContext) -> HookResult<PreToolUseAction> {
        if self.source.is_cancelled(&ctx.session_id) {
            return Ok(PreToolUseAction::Block {
                reason: format!("session `{}` was cancelled", ctx.session_id),
            });
        }
        Ok(PreToolUseAction::Continue)
    }

    async fn on_session_stop(&self, ctx: &SessionStopContext) -> HookResult {
        self.source.clear(&ctx.session_id);
        Ok(())
    }
}

/// Per-tool counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolMetrics {
    /// Calls that ran.
    pub calls: u64,
    /// Calls that reported an error.
    pub errors: u64,
    /// Sum of run times.
    pub total_latency: Duration,
    /// Longest run time.
    pub max_latency: Duration,
}

/// A copy of the metrics at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MetricsSnapshot {
    /// Sessions started.
    pub sessions_started: u64,
    /// Tool calls that ran.
    pub tool_calls: u64,
    /// Tool calls that reported an error.
    pub tool_errors: u64,
    /// Steps completed.
    pub steps: u64,
    /// Counters by tool name.
    pub per_tool: BTreeMap<String, ToolMetrics>,
    /// Why the last session stopped.
    pub last_stop_reason: Option<String>,
    /// Audit rows that could not be queued or written (see [`crate::AuditLog::dropped`]).
    pub audit_rows_dropped: u64,
}

/// Counts tool calls, errors and per-tool latency; logs a summary every three steps.
#[derive(Default)]
pub struct MetricsHook {
    data: Mutex<MetricsSnapshot>,
    audit_drops: Option<Arc<AtomicU64>>,
}

impl MetricsHook {
    /// Empty metrics.
    pub fn new() -> Self {
        MetricsHook::default()
    }

    /// Reports the audit log's dropped-row counter in snapshots.
    pub fn with_audit(mut self, audit: &crate::AuditLog) -> Self {
        self.audit_drops = Some(audit.dropped_counter());
        self
    }

    /// The metrics now.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let mut snap = self
            .data
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        snap.audit_rows_dropped = self
            .audit_drops
            .as_ref()
            .map_or(0, |d| d.load(Ordering::Relaxed));
        snap
    }

    fn with_data<R>(&self, f: impl FnOnce(&mut MetricsSnapshot) -> R) -> R {
        f(&mut self.data.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait]
impl AgentHook for MetricsHook {
    fn name(&self) -> &str {
        "metrics"
    }

    async fn on_session_start(&self, _ctx: &SessionStartContext) -> HookResult {
        self.with_data(|d| d.sessions_started += 1);
        Ok(())
    }

    async fn post_tool_use(&self, ctx: &PostToolUseContext) -> HookResult<PostToolUseAction> {
        self.with_data(|d| {
            d.tool_calls += 1;
            let tool = d.per_tool.entry(ctx.tool_name.clone()).or_default();
            tool.calls += 1;
            tool.total_latency += ctx.elapsed;
            tool.max_latency = tool.max_latency.max(ctx.elapsed);
            if ctx.is_error {
                tool.errors += 1;
                d.tool_errors += 1;
            }
        });
        Ok(PostToolUseAction::Continue)
    }

    async fn on_step_complete(&self, ctx: &StepContext) -> HookResult {
        self.with_data(|d| d.steps += 1);
        if ctx.step > 0 && ctx.step.is_multiple_of(3) {
            let snap = self.snapshot();
            tracing::info!(
                session_id = %ctx.session_id,
                step = ctx.step,
                tool_calls = snap.tool_calls,
                tool_errors = snap.tool_errors,
                audit_rows_dropped = snap.audit_rows_dropped,
                "metrics summary"
            );
        }
        Ok(())
    }

    async fn on_session_stop(&self, ctx: &SessionStopContext) -> HookResult {
        self.with_data(|d| d.last_stop_reason = Some(ctx.reason.clone()));
        tracing::info!(session_id = %ctx.session_id, reason = %ctx.reason, steps = ctx.steps, "session stopped");
        Ok(())
    }
}
