//! `Guard`: the whole stack composed from the layer configurations, so a front end (the CLI's
//! `demo`/`run`, a server) builds it with one call.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bash_guard::{BashConfig, Runner};
use fs_sandbox::{Sandbox, SandboxConfig};
use perm_hooks::{
    AgentHook, AuditLog, AuditRow, HookOptions, HookRegistry, HooksConfig, KillSwitch, OnError,
    SessionStopContext,
};
use perm_rules::PermissionChecker;
use runtime_limits::{CancellationRegistry, LimitsConfig};

use crate::approver::Approver;
use crate::error::Error;
use crate::event::EventSink;
use crate::executor::{Executor, ExecutorConfig};
use crate::model::Model;
use crate::registry::ToolRegistry;
use crate::runtime::{AgentRuntime, BgNotificationQueue, CompactionRequest, RuntimeConfig};
use crate::tool::AgentTool;
use crate::tools::{
    AskUserTool, BashSubjects, BgTaskRunTool, CompressContextTool, FileEditTool, FileWriteTool,
    GlobFilesTool, GrepFilesTool, ReadFileTool, RunBashTool, SaveMemoryTool, SubagentSpawner,
    SubagentTool, TodoList, TodoWriteTool, UserChannel,
};
use crate::verdict::{Call, Verdict};

/// Builds a [`Guard`]. Every layer has a default; set what the policy says.
pub struct GuardBuilder {
    cwd: PathBuf,
    checker: PermissionChecker,
    sandbox: SandboxConfig,
    bash: BashConfig,
    hooks: HooksConfig,
    extra_hooks: Vec<Arc<dyn AgentHook>>,
    limits: LimitsConfig,
    executor: ExecutorConfig,
    approver: Option<Arc<dyn Approver>>,
    user: Option<Arc<dyn UserChannel>>,
    events: Option<Arc<dyn EventSink>>,
    spawner: Option<Arc<dyn SubagentSpawner>>,
    trampoline: Option<(PathBuf, Vec<std::ffi::OsString>)>,
    audit: Option<AuditLog>,
    audit_db: Option<perm_hooks::AuditDb>,
    kill: Option<KillSwitch>,
    ledger: Option<Arc<dyn crate::SessionLedger>>,
    ledger_from_audit: bool,
    extra_tools: Vec<Arc<dyn AgentTool>>,
    max_file_size: usize,
    auto: crate::auto::AutoConfig,
    auto_transport: Option<Arc<dyn crate::auto::AutoTransport>>,
    auto_state_dir: Option<PathBuf>,
}

impl std::fmt::Debug for GuardBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardBuilder")
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

/// The composed stack: the tool registry, the executor with every guard, the sandbox and the
/// shared state the built-in tools and the loop use.
#[derive(Clone)]
pub struct Guard {
    executor: Executor,
    sandbox: Arc<Sandbox>,
    limits: LimitsConfig,
    events: Option<Arc<dyn EventSink>>,
    notifications: BgNotificationQueue,
    compaction: CompactionRequest,
    todos: TodoList,
    cancellations: Arc<CancellationRegistry>,
    /// The audit database `[hooks] audit` opened.
    audit_target: Option<perm_hooks::AuditTarget>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("executor", &self.executor)
            .finish_non_exhaustive()
    }
}

impl GuardBuilder {
    /// A builder for a stack working in `cwd` (the sandbox's default root).
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        GuardBuilder {
            cwd: cwd.into(),
            checker: PermissionChecker::new(),
            sandbox: SandboxConfig::default(),
            bash: BashConfig::default(),
            hooks: HooksConfig {
                audit: false,
                ..HooksConfig::default()
            },
            extra_hooks: Vec::new(),
            limits: LimitsConfig::default(),
            executor: ExecutorConfig::default(),
            approver: None,
            user: None,
            events: None,
            spawner: None,
            trampoline: None,
            audit: None,
            audit_db: None,
            kill: None,
            ledger: None,
            ledger_from_audit: false,
            extra_tools: Vec::new(),
            max_file_size: crate::tools::DEFAULT_MAX_FILE_SIZE,
            auto: crate::auto::AutoConfig::default(),
            auto_transport: None,
            auto_state_dir: None,
        }
    }

    /// Layer 2: the policy checker (build it with `PermissionChecker::from_config`).
    pub fn permissions(mut self, checker: PermissionChecker) -> Self {
        self.checker = checker;
        self
    }
    /// Layer 4: the `[sandbox]` table.
    pub fn sandbox(mut self, config: SandboxConfig) -> Self {
        self.sandbox = config;
        self
    }
    /// Layer 5: the `[bash]` table.
    pub fn bash(mut self, config: BashConfig) -> Self {
        self.bash = config;
        self
    }
    /// Layer 3: the `[hooks]` table (command hooks, redaction, the audit database).
    pub fn hooks(mut self, config: HooksConfig) -> Self {
        self.hooks = config;
        self
    }
    /// An extra hook, registered after the configured ones.
    pub fn hook(mut self, hook: Arc<dyn AgentHook>) -> Self {
        self.extra_hooks.push(hook);
        self
    }
    /// Layer 7: the `[limits]` table.
    pub fn limits(mut self, config: LimitsConfig) -> Self {
        self.limits = config;
        self
    }
    /// Executor settings (tool timeout, output limit, library dir).
    pub fn executor_config(mut self, config: ExecutorConfig) -> Self {
        self.executor = config;
        self
    }
    /// Who answers Asks.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }
    /// Where `ask_user` questions go.
    pub fn user_channel(mut self, channel: Arc<dyn UserChannel>) -> Self {
        self.user = Some(channel);
        self
    }
    /// Where events go.
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }
    /// Enables the `subagent` tool.
    pub fn subagents(mut self, spawner: Arc<dyn SubagentSpawner>) -> Self {
        self.spawner = Some(spawner);
        self
    }
    /// The sandbox trampoline `run_bash` confines its children with.
    pub fn trampoline(mut self, exe: impl Into<PathBuf>) -> Self {
        self.trampoline = Some((exe.into(), Vec::new()));
        self
    }
    /// A trampoline that needs leading arguments, e.g. the `agent-guard` binary itself with
    /// `["__sandbox-exec"]`.
    pub fn trampoline_with_args<I, S>(mut self, exe: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString>,
    {
        self.trampoline = Some((exe.into(), args.into_iter().map(Into::into).collect()));
        self
    }
    /// An already open audit log (instead of opening `[hooks] audit_db`).
    pub fn audit(mut self, log: AuditLog) -> Self {
        self.audit = Some(log);
        self
    }
    /// An audit database opened before, by a process that keeps one across calls
    /// ([`perm_hooks::AuditDb::open_held`]): when `[hooks] audit` opens that very target and
    /// [`perm_hooks::AuditDb::is_current`] confirms the file and its schema are as its open
    /// checked them, the guard uses it instead of opening the target again.
    pub fn audit_db(mut self, db: perm_hooks::AuditDb) -> Self {
        self.audit_db = Some(db);
        self
    }
    /// The audit database [`GuardBuilder::build`] opens: `None` when `[hooks] audit` is off
    /// or a log was given.
    pub fn audit_target(&self) -> Result<Option<perm_hooks::AuditTarget>, Error> {
        audit_target(self.audit.as_ref(), &self.hooks, &self.cwd)
    }
    /// The fleet kill switch (`agent-guard cancel`): calls of a cancelled session are denied.
    /// Opened on the audit database when `[hooks] audit` opens one and none is given.
    pub fn kill_switch(mut self, kill: KillSwitch) -> Self {
        self.kill = Some(kill);
        self
    }
    /// Hook mode's session ledger (per-session call counts, duplicate runs and allow-once
    /// grants across hook processes), judged with the `[limits]` table. Only calls that carry
    /// a [`crate::LedgerUse`] consult it.
    pub fn session_ledger(mut self, ledger: Arc<dyn crate::SessionLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }
    /// Keep the session ledger in the audit database when `[hooks] audit` opens one (the
    /// agent hooks); without an audit database there is no ledger.
    pub fn ledger_from_audit(mut self, on: bool) -> Self {
        self.ledger_from_audit = on;
        self
    }
    /// Auto mode (the `[auto]` table); off without an `endpoint`.
    pub fn auto(mut self, config: crate::auto::AutoConfig) -> Self {
        self.auto = config;
        self
    }
    /// How auto mode reaches its model (default: HTTP to the configured endpoint).
    pub fn auto_transport(mut self, transport: Arc<dyn crate::auto::AutoTransport>) -> Self {
        self.auto_transport = Some(transport);
        self
    }
    /// Where auto mode keeps its per-session answers and refusal counts (default:
    /// [`crate::auto::default_state_dir`]).
    pub fn auto_state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.auto_state_dir = Some(dir.into());
        self
    }
    /// An extra tool.
    pub fn tool(mut self, tool: Arc<dyn AgentTool>) -> Self {
        self.extra_tools.push(tool);
        self
    }
    /// `max_file_size` of `file_write` and `file_edit`, in bytes.
    pub fn max_file_size(mut self, bytes: usize) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Composes the stack. Opens the audit database when `[hooks] audit` is on.
    pub async fn build(self) -> Result<Guard, Error> {
        // One scanner for the sniffer, the redaction hook and auto mode: a policy's own
        // detector set is compiled (and its examples checked) once, not per user.
        let scanner = self.hooks.shared_scanner().map_err(hooks_err)?;
        // Files are sniffed with the redaction's detectors before a read is allowed.
        let sniffer = crate::DetectorSniffer::new(scanner.clone());
        let sandbox = Arc::new(
            self.sandbox
                .builder(&self.cwd)
                .content_sniffer(Arc::new(sniffer))
                .build()
                .map_err(|e| Error::Config {
                    layer: "sandbox",
                    message: e.to_string(),
                })?,
        );
        let mut hooks = HookRegistry::new();
        for (hook, options) in self.hooks.command_hooks().map_err(hooks_err)? {
            hooks.register_with(hook, options);
        }
        if self.hooks.redact_secrets {
            // A redaction that fails must withhold the output, never pass it through unredacted.
            hooks.register_with(
                Arc::new(perm_hooks::RedactionHook::new(scanner.clone())),
                HookOptions {
                    pre_on_error: OnError::Deny,
                    post_on_error: OnError::Deny,
                    ..HookOptions::default()
                },
            );
        }
        for hook in self.extra_hooks {
            hooks.register(hook);
        }
        let mut kill = self.kill;
        let mut ledger = self.ledger;
        let mut opened = None;
        let target = audit_target(self.audit.as_ref(), &self.hooks, &self.cwd)?;
        let audit = match (self.audit, target) {
            (Some(log), _) => Some(log),
            (None, Some(target)) => {
                // One open (integrity, schema, migrations) for the log, the ledger and the
                // kill switch: a hook process opened the same file three times before.
                let db = match self.audit_db {
                    Some(held) if *held.target() == target && held.is_current().await => held,
                    _ => perm_hooks::AuditDb::open(&target)
                        .await
                        .map_err(hooks_err)?,
                };
                opened = Some(target);
                if ledger.is_none() && self.ledger_from_audit {
                    ledger = Some(Arc::new(perm_hooks::Ledger::on(&db)));
                }
                if kill.is_none() {
                    kill = Some(KillSwitch::on(&db).await.map_err(hooks_err)?);
                }
                Some(AuditLog::on(&db))
            }
            (None, None) => None,
        };
        let mut checker = self.checker;
        checker.set_cwd(sandbox.cwd().display().to_string());

        let notifications = BgNotificationQueue::new();
        let compaction = CompactionRequest::default();
        let todos = TodoList::default();
        let mut runner = Runner::new(self.bash.exec.clone());
        if let Some((exe, args)) = self.trampoline {
            runner = runner.with_trampoline_args(exe, args);
        }
        let bash_tool = Arc::new(RunBashTool::new(self.bash, Arc::clone(&sandbox), runner));
        // The rules split a command with the verdict that judges it: one parse for both.
        let subjects: Arc<dyn perm_rules::ContentSubjects> = Arc::new(BashSubjects::sharing(
            Arc::clone(bash_tool.analyzer()),
            sandbox.cwd().to_path_buf(),
        ));
        checker.set_subjects(Arc::clone(&subjects));
        let ask = match self.user {
            Some(ch) => AskUserTool::new(ch),
            None => AskUserTool::default(),
        };
        let mut tools: Vec<Arc<dyn AgentTool>> = vec![
            Arc::new(ReadFileTool),
            Arc::new(GrepFilesTool),
            Arc::new(GlobFilesTool),
            Arc::new(FileWriteTool {
                max_file_size: self.max_file_size,
            }),
            Arc::new(FileEditTool {
                max_file_size: self.max_file_size,
            }),
            Arc::clone(&bash_tool) as Arc<dyn AgentTool>,
            Arc::new(ask),
            Arc::new(TodoWriteTool {
                todos: Arc::clone(&todos),
            }),
            Arc::new(SaveMemoryTool),
            Arc::new(CompressContextTool {
                request: compaction.clone(),
            }),
            Arc::new(BgTaskRunTool::new(notifications.clone())),
        ];
        if let Some(spawner) = self.spawner {
            tools.push(Arc::new(SubagentTool::new(spawner)));
        }
        tools.extend(self.extra_tools);
        let mut registry = ToolRegistry::new();
        for tool in tools {
            registry.register(tool)?;
        }
        let mut executor = Executor::new(registry)
            .with_checker(Arc::new(checker))
            .with_subjects(Arc::clone(&subjects))
            .with_hooks(Arc::new(hooks))
            .with_sandbox(Arc::clone(&sandbox))
            .with_bash(Arc::clone(bash_tool.analyzer()))
            .with_home(std::env::var_os("HOME").map(PathBuf::from))
            .with_config(self.executor);
        if let Some(approver) = self.approver {
            executor = executor.with_approver(approver);
        }
        if let Some(audit) = audit {
            executor = executor.with_audit(audit);
        }
        if let Some(kill) = kill {
            executor = executor.with_kill_switch(kill);
        }
        if let Some(ledger) = ledger {
            executor = executor.with_ledger(ledger, &self.limits);
        }
        if self.auto.enabled() {
            let auto_err = |message: String| Error::Config {
                layer: "auto",
                message,
            };
            self.auto.validate().map_err(auto_err)?;
            let transport = match self.auto_transport {
                Some(t) => t,
                None => http_transport(&self.auto).map_err(auto_err)?,
            };
            let state = self.auto_state_dir.or_else(crate::auto::default_state_dir);
            let scanner = scanner.into_arc();
            executor = executor.with_auto(crate::auto::AutoMode::new(
                self.auto, transport, state, scanner,
            ));
        }
        Ok(Guard {
            executor,
            sandbox,
            limits: self.limits,
            events: self.events,
            notifications,
            compaction,
            todos,
            cancellations: Arc::new(CancellationRegistry::new()),
            audit_target: opened,
        })
    }
}

#[cfg(feature = "openai")]
fn http_transport(
    config: &crate::auto::AutoConfig,
) -> Result<Arc<dyn crate::auto::AutoTransport>, String> {
    Ok(Arc::new(crate::auto::HttpTransport::new(config)?))
}

#[cfg(not(feature = "openai"))]
fn http_transport(
    _: &crate::auto::AutoConfig,
) -> Result<Arc<dyn crate::auto::AutoTransport>, String> {
    Err("`[auto]` needs agent-core's `openai` feature (an HTTP client)".to_owned())
}

/// A hooks-layer failure (configuration, the audit database) as the guard reports it.
fn hooks_err(e: perm_hooks::Error) -> Error {
    Error::Config {
        layer: "hooks",
        message: e.to_string(),
    }
}

/// The audit database a guard opens: `None` when a log was given or `[hooks] audit` is off;
/// the policy's path resolved against `cwd` (a URL is never joined to it).
fn audit_target(
    given: Option<&AuditLog>,
    hooks: &HooksConfig,
    cwd: &Path,
) -> Result<Option<perm_hooks::AuditTarget>, Error> {
    if given.is_some() || !hooks.audit {
        return Ok(None);
    }
    let path = hooks.audit_db_path().map_err(hooks_err)?;
    Ok(Some(perm_hooks::AuditTarget::parse(path).resolve(cwd)))
}

impl Guard {
    /// A builder for a stack working in `cwd`.
    pub fn builder(cwd: impl Into<PathBuf>) -> GuardBuilder {
        GuardBuilder::new(cwd)
    }

    /// The audit database `[hooks] audit` opened for this guard (none when the log was given
    /// to the builder, or is off).
    pub fn audit_target(&self) -> Option<&perm_hooks::AuditTarget> {
        self.audit_target.as_ref()
    }

    /// The executor (every guard of layers 1-5).
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// Takes `call` through every layer and returns the verdict: the one composition the
    /// runtime's executor and every front end (hooks, `test`, `explain`) decide by.
    pub async fn evaluate(&self, call: &Call) -> Verdict {
        self.executor.evaluate(call).await
    }

    /// Records a verdict in the audit log (when there is one): a refused or asked call as a
    /// `DENIED` row with the deciding code. An allowed call is recorded when it has run (the
    /// executor, or a client's after-tool event via [`Guard::record_run`]).
    pub async fn record(&self, call: &Call, verdict: &Verdict) {
        let Some(audit) = self.executor.audit() else {
            return;
        };
        if verdict.decision == perm_rules::Decision::Allow {
            return;
        }
        audit
            .record(AuditRow::denied(
                &call.session_id,
                call.step,
                &call.agent_name,
                &call.tool,
                verdict.decision,
                verdict.code(),
                &verdict.summary(),
            ))
            .await;
    }

    /// Records a call a client ran (its after-tool event).
    pub async fn record_run(&self, ctx: &perm_hooks::PostToolUseContext) {
        if let Some(audit) = self.executor.audit() {
            audit.record(AuditRow::tool_call(ctx)).await;
        }
    }

    /// Records the end of a session (`SESSION_STOP`).
    pub async fn record_stop(&self, ctx: &SessionStopContext) {
        if let Some(audit) = self.executor.audit() {
            audit.record(AuditRow::session_stop(ctx)).await;
        }
    }

    /// Waits until every audit row queued so far is committed, and reports like
    /// [`Guard::shutdown`], without closing the database: for a process that exits next.
    /// Closing a SQLite pool makes its last connection checkpoint the write-ahead log into the
    /// database file (two `fsync`s and the log's removal), which a short-lived hook process
    /// paid on every call; a committed row is durable without it. The log is checkpointed
    /// once it has grown, so the processes that follow do not each replay a long one.
    pub async fn flush(&self) -> Result<(), Error> {
        match self.executor.audit() {
            Some(audit) => audit.flush_for_exit().await.map_err(hooks_err),
            None => Ok(()),
        }
    }

    /// Writes every queued audit row; an error when any acknowledged row was lost.
    pub async fn shutdown(&self) -> Result<(), Error> {
        match self.executor.audit() {
            Some(audit) => audit.shutdown().await.map_err(hooks_err),
            None => Ok(()),
        }
    }

    /// The sandbox.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// The limits.
    pub fn limits(&self) -> &LimitsConfig {
        &self.limits
    }

    /// The todo list `todo_write` maintains.
    pub fn todos(&self) -> &TodoList {
        &self.todos
    }

    /// The seed's `cancelled_runs`: pass `cancellations().token(session)` to
    /// [`AgentRuntime::run_turn`], call `insert(session)` to cancel it (from an API handler),
    /// and `remove(session)` when the session stops.
    pub fn cancellations(&self) -> &Arc<CancellationRegistry> {
        &self.cancellations
    }

    /// The queue background tasks report to.
    pub fn notifications(&self) -> &BgNotificationQueue {
        &self.notifications
    }

    /// A lead-agent runtime over `model` with this stack.
    pub fn runtime(&self, model: Arc<dyn Model>) -> AgentRuntime {
        let config = RuntimeConfig {
            limits: self.limits.clone(),
            library_dir: self.executor.config().library_dir.clone(),
            ..RuntimeConfig::default()
        };
        let mut rt = AgentRuntime::new(model, self.executor.clone(), config)
            .with_sandbox(Arc::clone(&self.sandbox))
            .with_notifications(self.notifications.clone())
            .with_compaction_request(self.compaction.clone());
        if let Some(sink) = &self.events {
            rt = rt.with_events(Arc::clone(sink));
        }
        rt
    }
}
