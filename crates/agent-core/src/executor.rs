//! The guarded executor: validate, PreToolUse hooks, the permission phase, partitioned
//! execution with interrupts and timeouts, PostToolUse hooks, output shrinking, audit.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use bash_guard::CachedAnalyzer;
use fs_sandbox::Sandbox;
use perm_hooks::{AuditLog, AuditRow, HookRegistry, KillSwitch, PostToolUseContext};
use perm_rules::{
    ContentSubjects, Decision, HookBlock, HookPermissionRequest, PermissionChecker,
    PermissionResult, PermissionRule, Resolution,
};
use serde_json::Value;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::approver::{self, ApprovalRequest, Approver, DEFAULT_APPROVAL_TIMEOUT};
use crate::context::ToolContext;
use crate::event::AgentEvent;
use crate::model::{Message, ToolCall};
use crate::output::shrink_output;
use crate::registry::ToolRegistry;
use crate::schema;
use crate::tool::{AgentTool, InterruptBehavior, ToolError, ToolOutput};
use crate::verdict::Call;

/// The default per-tool timeout (`AGENT_TOOL_TIMEOUT_SECS`), 120 s.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// The default size above which a result is persisted and stubbed.
pub const DEFAULT_MAX_TOOL_OUTPUT_CHARS: usize = 20_000;

/// Executor settings.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// Per-tool timeout (`AGENT_TOOL_TIMEOUT_SECS`; the caller reads the environment).
    pub tool_timeout: Duration,
    /// How long a person has to answer an Ask (120 s; timeout = deny).
    pub approval_timeout: Duration,
    /// Results longer than this are persisted (or truncated) and stubbed.
    pub max_tool_output_chars: usize,
    /// Where large results go: `{library_dir}/tool-results/{id}.txt`.
    pub library_dir: Option<PathBuf>,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            max_tool_output_chars: DEFAULT_MAX_TOOL_OUTPUT_CHARS,
            library_dir: None,
        }
    }
}

impl ExecutorConfig {
    /// Parses an `AGENT_TOOL_TIMEOUT_SECS` value; anything but a positive integer is the default.
    pub fn timeout_from_env_value(value: Option<&str>) -> Duration {
        value
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&s| s > 0)
            .map_or(DEFAULT_TOOL_TIMEOUT, Duration::from_secs)
    }
}

/// A screen run in the validate phase, before hooks see the call (duplicate detection).
pub trait CallScreen: Send {
    /// `Some((code, message))` refuses the call.
    fn screen(&mut self, tool: &str, args: &Value) -> Option<(String, String)>;
}

/// How one call ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallResult {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// What the model sees (output, stub, or error text).
    pub content: String,
    /// Whether it is an error result.
    pub is_error: bool,
    /// The reason code of an error result (`p0-config-deny`, `tool-timeout`, ...).
    pub code: Option<String>,
    /// The resolved permission decision (`None` when the call never reached the permission
    /// phase: unknown tool, bad arguments, duplicate).
    pub decision: Option<Decision>,
    /// Whether the tool's `execute` was entered.
    pub executed: bool,
    /// The arguments the tool ran with (after hooks).
    pub final_args: Value,
    /// The layer whose verdict decided a refused or asked call (`fs-sandbox`, `bash-guard`,
    /// `perm-rules`, ...); `None` when the call ran or never reached the verdict.
    pub layer: Option<String>,
}

impl ToolCallResult {
    /// The result as a conversation message.
    pub fn to_message(&self) -> Message {
        Message::Tool {
            tool_call_id: self.call_id.clone(),
            name: self.tool.clone(),
            content: self.content.clone(),
            is_error: self.is_error,
        }
    }
}

struct Queued {
    index: usize,
    call_id: String,
    tool: Arc<dyn AgentTool>,
    args: Value,
    decision: Decision,
    code: String,
    additional_context: String,
}

/// Runs tool calls through every guard layer.
///
/// Order of the phases for each call: validate (known tool, schema, duplicate screen) -> the
/// verdict, [`Executor::evaluate`] (PreToolUse hooks, rules through
/// [`perm_rules::resolve_permission_precedence`], fs-sandbox, bash-guard, network, the mode) ->
/// schema re-check of the final arguments -> Deny: error result, Ask:
/// [`AgentEvent::PermissionRequest`] and the [`Approver`], Allow: queued.
/// Queued calls are partitioned into batches (consecutive concurrency-safe calls together,
/// others alone) and run; results come back in call order.
#[derive(Clone)]
pub struct Executor {
    // One allocation shared by every clone: the executor is cloned into each call's context.
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    registry: ToolRegistry,
    checker: Arc<PermissionChecker>,
    session: Arc<RwLock<PermissionChecker>>,
    subjects: Option<Arc<dyn ContentSubjects>>,
    hooks: Arc<HookRegistry>,
    approver: Option<Arc<dyn Approver>>,
    audit: Option<AuditLog>,
    config: ExecutorConfig,
    sandbox: Option<Arc<Sandbox>>,
    bash: Option<Arc<CachedAnalyzer>>,
    home: Option<PathBuf>,
    kill: Option<KillSwitch>,
    ledger: Option<crate::ledger::Wired>,
    auto: Option<Arc<crate::auto::AutoMode>>,
    /// The user's own requests per session, as the runtime's loop was given them (auto mode
    /// shows them to its model; never a tool result).
    requests: Arc<RwLock<std::collections::HashMap<String, Vec<String>>>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("registry", &self.inner.registry)
            .field("checker", &self.inner.checker)
            .field("hooks", &self.inner.hooks)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor over `registry` with an allow-everything checker, no hooks, no approver
    /// (Ask = deny), no audit log.
    pub fn new(registry: ToolRegistry) -> Self {
        Executor {
            inner: Arc::new(Inner {
                registry,
                checker: Arc::new(PermissionChecker::new()),
                session: Arc::new(RwLock::new(PermissionChecker::new())),
                subjects: None,
                hooks: Arc::new(HookRegistry::new()),
                approver: None,
                audit: None,
                config: ExecutorConfig::default(),
                sandbox: None,
                bash: None,
                home: None,
                kill: None,
                ledger: None,
                auto: None,
                requests: Arc::default(),
            }),
        }
    }

    /// With the policy checker (P0, P4.5, P7, P8 and the mode).
    pub fn with_checker(mut self, checker: Arc<PermissionChecker>) -> Self {
        Arc::make_mut(&mut self.inner).checker = checker;
        self
    }

    /// With the provider that splits a call into content subjects for tool-level rules
    /// (the checker carries its own).
    pub fn with_subjects(mut self, subjects: Arc<dyn ContentSubjects>) -> Self {
        Arc::make_mut(&mut self.inner).subjects = Some(subjects);
        self
    }

    /// With the hook pipeline.
    pub fn with_hooks(mut self, hooks: Arc<HookRegistry>) -> Self {
        Arc::make_mut(&mut self.inner).hooks = hooks;
        self
    }

    /// With the approver asked on Ask.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        Arc::make_mut(&mut self.inner).approver = Some(approver);
        self
    }

    /// Without an approver (every Ask is denied).
    pub fn without_approver(mut self) -> Self {
        Arc::make_mut(&mut self.inner).approver = None;
        self
    }

    /// With the audit log every call (refused or run) writes a row to.
    pub fn with_audit(mut self, audit: AuditLog) -> Self {
        Arc::make_mut(&mut self.inner).audit = Some(audit);
        self
    }

    /// With settings.
    pub fn with_config(mut self, config: ExecutorConfig) -> Self {
        Arc::make_mut(&mut self.inner).config = config;
        self
    }

    /// The same guards over another (restricted) registry, sharing the session rules.
    pub fn with_registry(mut self, registry: ToolRegistry) -> Self {
        Arc::make_mut(&mut self.inner).registry = registry;
        self
    }

    /// With the filesystem sandbox every path argument is judged by (without one, every path
    /// argument is refused).
    pub fn with_sandbox(mut self, sandbox: Arc<Sandbox>) -> Self {
        Arc::make_mut(&mut self.inner).sandbox = Some(sandbox);
        self
    }

    /// With the bash analyzer `run_bash` commands are judged by (without one, every command is
    /// refused).
    pub fn with_bash(mut self, analyzer: Arc<CachedAnalyzer>) -> Self {
        Arc::make_mut(&mut self.inner).bash = Some(analyzer);
        self
    }

    /// With the home directory `~` means in path arguments (the environment's `HOME`; never
    /// the working directory).
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        Arc::make_mut(&mut self.inner).home = home;
        self
    }

    /// With the fleet kill switch: every call of a cancelled session is denied (`cancelled`).
    pub fn with_kill_switch(mut self, kill: KillSwitch) -> Self {
        Arc::make_mut(&mut self.inner).kill = Some(kill);
        self
    }

    /// Hook mode's session ledger (call counts, duplicate runs, allow-once grants across
    /// processes), judged with `limits`. The runtime's own loop keeps these in memory and
    /// needs none.
    pub fn with_ledger(
        mut self,
        ledger: Arc<dyn crate::SessionLedger>,
        limits: &runtime_limits::LimitsConfig,
    ) -> Self {
        Arc::make_mut(&mut self.inner).ledger = Some(crate::ledger::Wired {
            ledger,
            limits: runtime_limits::SessionLimits::from_config(limits),
        });
        self
    }

    /// With auto mode: a model resolves asks that are a known side effect.
    pub fn with_auto(mut self, auto: crate::auto::AutoMode) -> Self {
        Arc::make_mut(&mut self.inner).auto = Some(Arc::new(auto));
        self
    }

    /// Auto mode, when configured.
    pub fn auto(&self) -> Option<&Arc<crate::auto::AutoMode>> {
        self.inner.auto.as_ref()
    }

    /// Records the user's own requests of `session` (the runtime's loop, at each turn), for
    /// auto mode.
    pub fn set_user_requests(&self, session: &str, requests: Vec<String>) {
        let mut map = self
            .inner
            .requests
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.insert(session.to_owned(), requests);
    }

    pub(crate) fn user_requests(&self, session: &str) -> Vec<String> {
        let map = self
            .inner
            .requests
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(session).cloned().unwrap_or_default()
    }

    /// The session ledger, when one is wired.
    pub fn session_ledger(&self) -> Option<&Arc<dyn crate::SessionLedger>> {
        self.inner.ledger.as_ref().map(|w| &w.ledger)
    }

    pub(crate) fn ledger_wiring(&self) -> Option<&crate::ledger::Wired> {
        self.inner.ledger.as_ref()
    }

    /// The kill switch.
    pub fn kill_switch(&self) -> Option<&KillSwitch> {
        self.inner.kill.as_ref()
    }

    /// The sandbox path arguments are judged by.
    pub fn sandbox(&self) -> Option<&Arc<Sandbox>> {
        self.inner.sandbox.as_ref()
    }

    /// The bash analyzer.
    pub fn bash(&self) -> Option<&Arc<CachedAnalyzer>> {
        self.inner.bash.as_ref()
    }

    /// The home directory.
    pub fn home(&self) -> Option<&std::path::Path> {
        self.inner.home.as_deref()
    }

    /// Adds a session rule (P2 / P5), e.g. from an API call during the run.
    pub fn add_session_rule(&self, rule: PermissionRule) {
        let mut session = self
            .inner
            .session
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        session.add_rule(rule);
    }

    /// The registry.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The policy checker.
    pub fn checker(&self) -> &Arc<PermissionChecker> {
        &self.inner.checker
    }

    /// The hook pipeline.
    pub fn hooks(&self) -> &Arc<HookRegistry> {
        &self.inner.hooks
    }

    /// The audit log.
    pub fn audit(&self) -> Option<&AuditLog> {
        self.inner.audit.as_ref()
    }

    /// The approver.
    pub fn approver(&self) -> Option<&Arc<dyn Approver>> {
        self.inner.approver.as_ref()
    }

    /// The settings.
    pub fn config(&self) -> &ExecutorConfig {
        &self.inner.config
    }

    /// The permission phase alone, on final arguments: what the call would resolve to.
    pub fn resolve(
        &self,
        tool: &dyn AgentTool,
        args: &Value,
        hook_block: Option<HookBlock>,
        hook_requests: Vec<HookPermissionRequest>,
    ) -> Resolution {
        self.resolve_rules(
            tool.name(),
            Some(tool),
            tool.is_read_only(),
            args,
            crate::verdict::HookVerdicts {
                block: hook_block,
                requests: hook_requests,
            },
            self.inner.checker.mode(),
        )
    }

    /// The session rules' result, when there are session rules.
    pub(crate) fn session_result(&self, name: &str, args: &Value) -> Option<PermissionResult> {
        let session = self
            .inner
            .session
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (session.rules().next().is_some()).then(|| session.check(name, Some(args)))
    }

    /// The first Allow rule, of the policy and then of the session, that matches the one
    /// content `subject` of `tool` (a simple command of a bash call).
    pub(crate) fn allow_rule_for(&self, tool: &str, subject: &str) -> Option<String> {
        if let Some(rule) = self.checker().allow_rule_for(tool, subject) {
            return Some(rule.text().to_owned());
        }
        let session = self
            .inner
            .session
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        session
            .allow_rule_for(tool, subject)
            .map(|r| r.text().to_owned())
    }

    pub(crate) fn tool_level(
        &self,
        tool: &dyn AgentTool,
        args: &Value,
    ) -> Option<PermissionResult> {
        let rules = tool.check_permissions(args);
        if rules.is_empty() {
            return None;
        }
        let name = tool.name();
        let mut subjects = None;
        let mut best: Option<PermissionRule> = None;
        for rule in rules {
            if !rule.matches_tool(name) {
                continue;
            }
            if rule.has_content() {
                let subj = subjects.get_or_insert_with(|| match &self.inner.subjects {
                    Some(s) => s.subjects(name, args),
                    None => perm_rules::DefaultSubjects.subjects(name, args),
                });
                if !rule.matches_content(subj, None) {
                    continue;
                }
            }
            if best.as_ref().is_none_or(|b| rule.kind() > b.kind()) {
                best = Some(rule);
            }
        }
        best.map(|rule| PermissionResult {
            decision: rule.kind().decision(),
            rule: Some(Arc::new(rule)),
            changed_by_mode: None,
        })
    }

    /// Runs `calls` (one model turn) and returns one result per call, in call order.
    pub async fn execute_parallel(
        &self,
        calls: &[ToolCall],
        ctx: &ToolContext,
        mut screen: Option<&mut dyn CallScreen>,
    ) -> Vec<ToolCallResult> {
        let mut results: Vec<Option<ToolCallResult>> = vec![None; calls.len()];
        let mut queue: Vec<Queued> = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            match self.prepare(index, call, ctx, &mut screen).await {
                Ok(queued) => queue.push(queued),
                Err(refused) => {
                    if let Some(slot) = results.get_mut(index) {
                        *slot = Some(refused);
                    }
                }
            }
        }
        for batch in partition(queue) {
            if ctx.cancel.is_cancelled() {
                // Nothing new starts after a cancel; running Block tools were let finish.
                for q in batch {
                    let r = self.finish_unrun(&q, ctx, ToolError::Cancelled).await;
                    if let Some(slot) = results.get_mut(q.index) {
                        *slot = Some(r);
                    }
                }
                continue;
            }
            for (q, outcome, elapsed) in self.run_batch(batch, ctx).await {
                let r = self.finish(&q, ctx, outcome, elapsed).await;
                if let Some(slot) = results.get_mut(q.index) {
                    *slot = Some(r);
                }
            }
        }
        results
            .into_iter()
            .zip(calls)
            .map(|(r, call)| {
                r.unwrap_or_else(|| refused(call, "internal", "the call produced no result", None))
            })
            .collect()
    }

    async fn prepare(
        &self,
        index: usize,
        call: &ToolCall,
        ctx: &ToolContext,
        screen: &mut Option<&mut dyn CallScreen>,
    ) -> Result<Queued, ToolCallResult> {
        let Some(tool) = self.inner.registry.get(&call.name).cloned() else {
            // The verdict still decides a refusal's reason: a call the guard denies is reported
            // as denied (with the same code a hook would give), whether or not the tool exists.
            let verdict = self.evaluate(&guard_call(call, ctx, false)).await;
            if verdict.decision == Decision::Deny {
                let msg = format!("`{}` was denied: {}", call.name, verdict.summary());
                let mut r = self
                    .refuse(call, ctx, verdict.code(), &msg, Some(Decision::Deny))
                    .await;
                r.layer = Some(verdict.layer().to_owned());
                return Err(r);
            }
            let msg = format!(
                "unknown tool `{}`; it is not available to this agent",
                call.name
            );
            return Err(self.refuse(call, ctx, "unknown-tool", &msg, None).await);
        };
        let schema = tool.parameters();
        if let Err(why) = schema::validate(&schema, &call.arguments) {
            let msg = format!("invalid arguments for `{}`: {why}", call.name);
            return Err(self.refuse(call, ctx, "invalid-args", &msg, None).await);
        }
        if let Some(screen) = screen.as_mut()
            && let Some((code, msg)) = screen.screen(&call.name, &call.arguments)
        {
            return Err(self.refuse(call, ctx, &code, &msg, None).await);
        }
        let verdict = self
            .evaluate(&guard_call(call, ctx, tool.is_read_only()))
            .await;
        let final_args = verdict.final_args.clone();
        // A hook may rewrite the arguments into something the schema forbids.
        if let Err(why) = schema::validate(&schema, &final_args) {
            let msg = format!(
                "a hook rewrote the arguments of `{}` into invalid ones: {why}",
                call.name
            );
            let mut r = self
                .refuse(call, ctx, "hook-invalid-args", &msg, Some(Decision::Deny))
                .await;
            r.final_args = final_args;
            return Err(r);
        }
        let code = verdict.code().to_owned();
        let reason = verdict
            .deciding()
            .map(|s| format!("[{}] {}", s.layer, s.message))
            .unwrap_or_default();
        match verdict.decision {
            Decision::Deny => {
                let msg = format!("`{}` was denied: {reason}", call.name);
                let mut r = self
                    .refuse(call, ctx, &code, &msg, Some(Decision::Deny))
                    .await;
                r.final_args = final_args;
                r.layer = Some(verdict.layer().to_owned());
                return Err(r);
            }
            Decision::Ask => {
                let request = ApprovalRequest {
                    session_id: ctx.session_id.clone(),
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    args: final_args.clone(),
                    message: reason.clone(),
                    agent_name: ctx.agent_name.clone(),
                    steps: verdict.steps.clone(),
                };
                if !ctx.silent {
                    ctx.emit(AgentEvent::PermissionRequest {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        args: final_args.clone(),
                        message: request.message.clone(),
                    });
                }
                let outcome = approver::ask(
                    self.inner.approver.as_deref(),
                    ctx.silent,
                    &request,
                    self.inner.config.approval_timeout,
                )
                .await;
                if !outcome.is_approved() {
                    let msg = format!("{} ({reason})", outcome.message(&call.name));
                    let mut r = self
                        .refuse(call, ctx, outcome.code(), &msg, Some(Decision::Ask))
                        .await;
                    r.final_args = final_args;
                    r.layer = Some(verdict.layer().to_owned());
                    return Err(r);
                }
            }
            Decision::Allow => {}
        }
        Ok(Queued {
            index,
            call_id: call.id.clone(),
            tool,
            args: final_args,
            decision: verdict.decision,
            code,
            additional_context: verdict.additional_context,
        })
    }

    async fn refuse(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        code: &str,
        message: &str,
        decision: Option<Decision>,
    ) -> ToolCallResult {
        if let Some(audit) = &self.inner.audit {
            let mut row = AuditRow::denied(
                &ctx.session_id,
                ctx.step,
                &ctx.agent_name,
                &call.name,
                decision.unwrap_or(Decision::Deny),
                code,
                message,
            );
            // What was refused (the log redacts and bounds it).
            row.input = call.arguments.to_string();
            row.call_id.clone_from(&call.id);
            audit.record(row).await;
        }
        ctx.emit(AgentEvent::ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            is_error: true,
            code: Some(code.to_owned()),
        });
        refused(call, code, message, decision)
    }

    async fn run_batch(
        &self,
        batch: Vec<Queued>,
        ctx: &ToolContext,
    ) -> Vec<(Queued, Result<ToolOutput, ToolError>, Duration)> {
        let abort = CancellationToken::new();
        let aborter: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
        let mut set = JoinSet::new();
        let count = batch.len();
        let mut slots: Vec<Option<Queued>> = Vec::with_capacity(count);
        for (pos, q) in batch.into_iter().enumerate() {
            ctx.emit(AgentEvent::ToolStarted {
                call_id: q.call_id.clone(),
                tool: q.tool.name().to_owned(),
            });
            let mut call_ctx = ctx.clone();
            call_ctx.call_id = q.call_id.clone();
            call_ctx.executor = Some(self.clone());
            call_ctx.run_cancel = ctx.cancel.clone();
            let tool = Arc::clone(&q.tool);
            let args = q.args.clone();
            let user = ctx.cancel.clone();
            let abort = abort.clone();
            let aborter = Arc::clone(&aborter);
            let timeout = self.inner.config.tool_timeout;
            set.spawn(async move {
                let started = Instant::now();
                let out = run_tool(tool, args, call_ctx, user, abort, aborter, timeout).await;
                (pos, out, started.elapsed())
            });
            slots.push(Some(q));
        }
        let mut done: Vec<Option<(Result<ToolOutput, ToolError>, Duration)>> = vec![None; count];
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((pos, out, elapsed)) => {
                    if let Some(slot) = done.get_mut(pos) {
                        *slot = Some((out, elapsed));
                    }
                }
                Err(err) => tracing::error!(%err, "tool task failed to join"),
            }
        }
        slots
            .into_iter()
            .zip(done)
            .filter_map(|(q, d)| {
                let q = q?;
                let (out, elapsed) = d.unwrap_or((
                    Err(ToolError::Failed("the tool panicked".into())),
                    Duration::ZERO,
                ));
                Some((q, out, elapsed))
            })
            .collect()
    }

    async fn finish_unrun(&self, q: &Queued, ctx: &ToolContext, err: ToolError) -> ToolCallResult {
        let call = ToolCall {
            id: q.call_id.clone(),
            name: q.tool.name().to_owned(),
            arguments: q.args.clone(),
        };
        let mut r = self
            .refuse(&call, ctx, err.code(), &err.to_string(), Some(q.decision))
            .await;
        r.final_args = q.args.clone();
        r
    }

    async fn finish(
        &self,
        q: &Queued,
        ctx: &ToolContext,
        outcome: Result<ToolOutput, ToolError>,
        elapsed: Duration,
    ) -> ToolCallResult {
        let name = q.tool.name().to_owned();
        let (raw, is_error, code) = match outcome {
            Ok(out) => (out.content, false, None),
            Err(err) => (format!("error: {err}"), true, Some(err.code().to_owned())),
        };
        let post_ctx = PostToolUseContext {
            session_id: ctx.session_id.clone(),
            step: ctx.step,
            agent_name: ctx.agent_name.clone(),
            tool_name: name.clone(),
            tool_call_id: q.call_id.clone(),
            args: q.args.clone(),
            output: raw,
            is_error,
            elapsed,
            cwd: ctx.sandbox.as_ref().map(|s| s.cwd().to_path_buf()),
            transcript_path: None,
        };
        let post = self.inner.hooks.run_post_tool_use(post_ctx.clone()).await;
        // A failed post hook under `deny`/`block` withholds the output: report it as an error.
        let (is_error, code) = match &post.withheld {
            Some(failure) => (true, Some(failure.code().to_owned())),
            None => (is_error, code),
        };
        let mut content = post.final_output;
        if !q.additional_context.is_empty() {
            content.push_str("\n\n[hook context] ");
            content.push_str(&q.additional_context);
        }
        let content = shrink_output(
            content,
            self.inner.config.max_tool_output_chars,
            self.inner.config.library_dir.as_deref(),
            &q.call_id,
        );
        if let Some(audit) = &self.inner.audit {
            let mut row = AuditRow::tool_call(&PostToolUseContext {
                output: content.clone(),
                is_error,
                ..post_ctx
            });
            row.decision = Some(q.decision);
            row.reason_code = Some(code.clone().unwrap_or_else(|| q.code.clone()));
            audit.record(row).await;
        }
        ctx.emit(AgentEvent::ToolResult {
            call_id: q.call_id.clone(),
            tool: name.clone(),
            is_error,
            code: code.clone(),
        });
        ToolCallResult {
            call_id: q.call_id.clone(),
            tool: name,
            content,
            is_error,
            code,
            decision: Some(q.decision),
            executed: true,
            final_args: q.args.clone(),
            layer: None,
        }
    }
}

/// A model's tool call in the guard's vocabulary, in the context it runs in.
fn guard_call(call: &ToolCall, ctx: &ToolContext, read_only: bool) -> Call {
    Call {
        tool: call.name.clone(),
        args: call.arguments.clone(),
        session_id: ctx.session_id.clone(),
        agent_name: ctx.agent_name.clone(),
        call_id: call.id.clone(),
        step: ctx.step,
        cwd: ctx.sandbox.as_ref().map(|s| s.cwd().to_path_buf()),
        read_only,
        client: Vec::new(),
        // The loop keeps its limits in memory (the call screen); no session ledger.
        ledger: None,
        // Auto mode reads the loop's requests from the executor (`set_user_requests`).
        requests: None,
    }
}

fn refused(
    call: &ToolCall,
    code: &str,
    message: &str,
    decision: Option<Decision>,
) -> ToolCallResult {
    ToolCallResult {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        content: format!("error [{code}]: {message}"),
        is_error: true,
        code: Some(code.to_owned()),
        decision,
        executed: false,
        final_args: call.arguments.clone(),
        layer: None,
    }
}

/// Consecutive concurrency-safe calls form one batch; every other call is a batch of its own.
fn partition(queue: Vec<Queued>) -> Vec<Vec<Queued>> {
    let mut batches: Vec<Vec<Queued>> = Vec::new();
    let mut last_safe = false;
    for q in queue {
        let safe = q.tool.is_concurrency_safe(&q.args);
        match batches.last_mut() {
            Some(batch) if safe && last_safe => batch.push(q),
            _ => batches.push(vec![q]),
        }
        last_safe = safe;
    }
    batches
}

async fn run_tool(
    tool: Arc<dyn AgentTool>,
    args: Value,
    mut ctx: ToolContext,
    user: CancellationToken,
    abort: CancellationToken,
    aborter: Arc<OnceLock<String>>,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    // The tool's own token: fired on the interrupts it is meant to honour, so a Block tool's
    // child processes are not killed by a user cancel.
    let token = CancellationToken::new();
    ctx.cancel = token.clone();
    let name = tool.name().to_owned();
    let secs = timeout.as_secs();
    let run = async {
        match tokio::time::timeout(timeout, tool.execute(args, &ctx)).await {
            Ok(r) => r,
            Err(_) => Err(ToolError::Timeout(secs)),
        }
    };
    let out = match tool.interrupt_behavior() {
        InterruptBehavior::Block => run.await,
        InterruptBehavior::Cancel => {
            tokio::select! {
                biased;
                () = user.cancelled() => Err(ToolError::Cancelled),
                () = abort.cancelled() => Err(ToolError::SiblingAborted(
                    aborter.get().cloned().unwrap_or_default(),
                )),
                r = run => r,
            }
        }
    };
    token.cancel();
    if out.is_err()
        && tool.causes_sibling_abort()
        && !matches!(out, Err(ToolError::SiblingAborted(_)))
    {
        let _ = aborter.set(name);
        abort.cancel();
    }
    out
}
