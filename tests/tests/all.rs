//! End-to-end scenarios: the scripted model drives `AgentRuntime::run_turn` through every layer,
//! one test per row of the spec's "full chain" diagram, plus a property over random scripts.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_core::{
    AgentEvent, AgentRuntime, AgentTool, Approval, ApprovalRequest, Approver, AssistantMessage,
    ChannelSink, Executor, ExecutorConfig, FixedApprover, Guard, InterruptBehavior, Message,
    RuntimeConfig, ScriptedModel, StopReason, ToolCall, ToolContext, ToolError, ToolOutput,
    ToolRegistry,
};
use async_trait::async_trait;
use perm_hooks::{
    AgentHook, AuditLog, AuditQuery, AuditReader, AuditRecord, AuditStatus, HookRegistry,
    HookResult, PreToolUseAction, PreToolUseContext,
};
use perm_rules::{Decision, PermissionChecker, PermissionRule, RuleKind, RuleSource};
use runtime_limits::LimitsConfig;
use serde_json::{Value, json};
use subagent::{SubAgentRunner, SubagentType};
use tokio_util::sync::CancellationToken;

// ---------- fixtures ----------

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

fn turn(calls: Vec<ToolCall>) -> AssistantMessage {
    AssistantMessage {
        content: String::new(),
        tool_calls: calls,
        usage: None,
    }
}

fn answer(text: &str) -> AssistantMessage {
    AssistantMessage {
        content: text.into(),
        ..AssistantMessage::default()
    }
}

fn rule(kind: RuleKind, text: &str) -> PermissionRule {
    PermissionRule::parse(kind, text, RuleSource::Api).unwrap()
}

fn checker(rules: &[(RuleKind, &str)]) -> PermissionChecker {
    let mut c = PermissionChecker::new();
    for (k, t) in rules {
        c.add_rule(rule(*k, t));
    }
    c
}

/// A configurable test tool recording every `execute` with its start and end time.
struct Probe {
    name: &'static str,
    safe: bool,
    behavior: InterruptBehavior,
    sibling_abort: bool,
    sleep: Duration,
    fail: bool,
    barrier: Option<Arc<tokio::sync::Barrier>>,
    log: Arc<Mutex<Vec<(String, Instant, Instant)>>>,
    finished: Arc<AtomicUsize>,
}

impl Probe {
    fn new(name: &'static str) -> Self {
        Probe {
            name,
            safe: false,
            behavior: InterruptBehavior::Cancel,
            sibling_abort: false,
            sleep: Duration::ZERO,
            fail: false,
            barrier: None,
            log: Arc::default(),
            finished: Arc::default(),
        }
    }
}

#[async_trait]
impl AgentTool for Probe {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test probe"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}, "file_path": {"type": "string"}}})
    }
    fn interrupt_behavior(&self) -> InterruptBehavior {
        self.behavior
    }
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        self.safe
    }
    fn causes_sibling_abort(&self) -> bool {
        self.sibling_abort
    }
    fn is_read_only(&self) -> bool {
        self.safe
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let start = Instant::now();
        if let Some(b) = &self.barrier {
            // Only returns if every party is running at the same time.
            tokio::time::timeout(Duration::from_secs(3), b.wait())
                .await
                .map_err(|_| {
                    ToolError::Failed("barrier not reached: calls did not overlap".into())
                })?;
        }
        tokio::time::sleep(self.sleep).await;
        self.finished.fetch_add(1, Ordering::SeqCst);
        self.log
            .lock()
            .unwrap()
            .push((ctx.call_id.clone(), start, Instant::now()));
        if self.fail {
            return Err(ToolError::Failed("probe failed".into()));
        }
        Ok(ToolOutput::text(format!("{} ran with {args}", self.name)))
    }
}

/// Never answers: the executor's approval timeout must decide.
struct SilentApprover;

#[async_trait]
impl Approver for SilentApprover {
    async fn approve(&self, _r: &ApprovalRequest) -> Approval {
        std::future::pending().await
    }
}

struct Project {
    dir: tempfile::TempDir,
    audit: AuditLog,
    db: std::path::PathBuf,
}

async fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let db = dir.path().join("audit").join("audit.db");
    let audit = AuditLog::open(&db).await.unwrap();
    Project { dir, audit, db }
}

impl Project {
    fn root(&self) -> &Path {
        self.dir.path()
    }

    async fn rows(&self) -> Vec<AuditRecord> {
        self.audit.flush().await.unwrap();
        let reader = AuditReader::open(&self.db).await.unwrap();
        reader.query(&AuditQuery::default()).await.unwrap()
    }
}

async fn run(rt: &AgentRuntime, prompt: &str) -> agent_core::TurnOutcome {
    let mut messages = vec![Message::system("test"), Message::user(prompt)];
    rt.run_turn("s1", &mut messages, &CancellationToken::new())
        .await
}

fn by_id<'a>(out: &'a agent_core::TurnOutcome, id: &str) -> &'a agent_core::ToolCallResult {
    out.results.iter().find(|r| r.call_id == id).unwrap()
}

// ---------- the full chain ----------

#[tokio::test]
async fn denied_call_gets_an_error_result_and_the_loop_goes_on() {
    let p = project().await;
    let guard = Guard::builder(p.root())
        .permissions(checker(&[(RuleKind::Deny, "file_write")]))
        .audit(p.audit.clone())
        .build()
        .await
        .unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![
            call(
                "w",
                "file_write",
                json!({"file_path": "x.txt", "content": "no"}),
            ),
            call("r", "read_file", json!({"file_path": "notes.txt"})),
        ]),
        answer("done"),
    ]));
    let out = run(&guard.runtime(model), "go").await;
    assert_eq!(out.stop, StopReason::Answered);
    assert_eq!(out.answer, "done");
    let w = by_id(&out, "w");
    assert!(w.is_error && !w.executed);
    assert_eq!(w.code.as_deref(), Some("p0-config-deny"));
    assert!(!p.root().join("x.txt").exists());
    let r = by_id(&out, "r");
    assert!(!r.is_error && r.executed && r.content.contains("alpha"));

    let rows = p.rows().await;
    let denied = rows
        .iter()
        .find(|r| r.row.tool_name == "file_write")
        .unwrap();
    assert_eq!(denied.row.status, AuditStatus::Denied);
    assert_eq!(denied.row.decision, Some(Decision::Deny));
    assert_eq!(denied.row.reason_code.as_deref(), Some("p0-config-deny"));
    let ok = rows
        .iter()
        .find(|r| r.row.tool_name == "read_file")
        .unwrap();
    assert_eq!(ok.row.status, AuditStatus::Ok);
    assert_eq!(ok.row.decision, Some(Decision::Allow));
}

async fn ask_scenario(
    approver: Arc<dyn Approver>,
) -> (agent_core::TurnOutcome, Vec<AgentEvent>, Project) {
    let p = project().await;
    let (sink, mut rx) = ChannelSink::new();
    let guard = Guard::builder(p.root())
        .permissions(checker(&[(RuleKind::Ask, "file_write")]))
        .approver(approver)
        .events(Arc::new(sink))
        .audit(p.audit.clone())
        .executor_config(ExecutorConfig {
            approval_timeout: Duration::from_millis(100),
            ..ExecutorConfig::default()
        })
        .build()
        .await
        .unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call(
            "w",
            "file_write",
            json!({"file_path": "out.txt", "content": "yes"}),
        )]),
        answer("done"),
    ]));
    let out = run(&guard.runtime(model), "write").await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (out, events, p)
}

#[tokio::test]
async fn ask_answered_yes_runs_the_call() {
    let (out, events, p) = ask_scenario(Arc::new(FixedApprover(Approval::Approve))).await;
    let w = by_id(&out, "w");
    assert!(w.executed && !w.is_error, "{w:?}");
    assert_eq!(w.decision, Some(Decision::Ask));
    assert_eq!(
        std::fs::read_to_string(p.root().join("out.txt")).unwrap(),
        "yes"
    );
    assert!(
        events.iter().any(
            |e| matches!(e, AgentEvent::PermissionRequest { tool, .. } if tool == "file_write")
        )
    );
}

#[tokio::test]
async fn ask_answered_no_is_refused() {
    let (out, events, p) = ask_scenario(Arc::new(FixedApprover(Approval::Deny))).await;
    let w = by_id(&out, "w");
    assert!(!w.executed && w.is_error);
    assert_eq!(w.code.as_deref(), Some("ask-refused"));
    assert!(!p.root().join("out.txt").exists());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::PermissionRequest { .. }))
    );
    let rows = p.rows().await;
    let row = rows
        .iter()
        .find(|r| r.row.tool_name == "file_write")
        .unwrap();
    assert_eq!(row.row.reason_code.as_deref(), Some("ask-refused"));
    assert_eq!(row.row.decision, Some(Decision::Ask));
}

#[tokio::test]
async fn ask_unanswered_times_out_as_a_deny() {
    let (out, _events, p) = ask_scenario(Arc::new(SilentApprover)).await;
    let w = by_id(&out, "w");
    assert!(!w.executed);
    assert_eq!(w.code.as_deref(), Some("ask-timeout"));
    assert!(!p.root().join("out.txt").exists());
    assert_eq!(out.answer, "done", "the loop goes on after a timeout");
}

/// Rewrites every `read_file` to read `.env` instead.
struct Rewriter;

#[async_trait]
impl AgentHook for Rewriter {
    fn name(&self) -> &str {
        "rewriter"
    }
    async fn pre_tool_use(&self, ctx: &PreToolUseContext) -> HookResult<PreToolUseAction> {
        if ctx.tool_name == "read_file" {
            return Ok(PreToolUseAction::MutateInput {
                updated_args: Some(json!({"file_path": "config/.env"})),
                additional_context: None,
            });
        }
        Ok(PreToolUseAction::Continue)
    }
}

#[tokio::test]
async fn a_hook_mutation_is_rechecked_against_the_rules() {
    let p = project().await;
    std::fs::create_dir(p.root().join("config")).unwrap();
    std::fs::write(p.root().join("config/.env"), "SECRET=1").unwrap();
    let guard = Guard::builder(p.root())
        .permissions(checker(&[(RuleKind::Deny, "read_file(**/.env)")]))
        .hook(Arc::new(Rewriter))
        .audit(p.audit.clone())
        .build()
        .await
        .unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call(
            "r",
            "read_file",
            json!({"file_path": "notes.txt"}),
        )]),
        answer("done"),
    ]));
    let out = run(&guard.runtime(model), "read").await;
    let r = by_id(&out, "r");
    assert!(
        !r.executed,
        "the rewritten call must be judged on its final arguments"
    );
    assert_eq!(r.code.as_deref(), Some("p0-config-deny"));
    assert_eq!(r.final_args, json!({"file_path": "config/.env"}));
    assert!(!r.content.contains("SECRET"));
}

#[tokio::test]
async fn parallel_reads_overlap_while_writes_stay_serial_and_ordered() {
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let mut read = Probe::new("probe_read");
    read.safe = true;
    read.barrier = Some(barrier);
    read.sleep = Duration::from_millis(10);
    let mut write = Probe::new("probe_write");
    write.sleep = Duration::from_millis(20);
    let write_log = Arc::clone(&write.log);
    let registry = ToolRegistry::new()
        .with(Arc::new(read))
        .unwrap()
        .with(Arc::new(write))
        .unwrap();
    let exec = Executor::new(registry);
    let calls = vec![
        call("r1", "probe_read", json!({"n": 1})),
        call("r2", "probe_read", json!({"n": 2})),
        call("r3", "probe_read", json!({"n": 3})),
        call("w1", "probe_write", json!({"n": 1})),
        call("w2", "probe_write", json!({"n": 2})),
        call("w3", "probe_write", json!({"n": 3})),
    ];
    let results = exec
        .execute_parallel(&calls, &ToolContext::new("s"), None)
        .await;
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(
        ids,
        ["r1", "r2", "r3", "w1", "w2", "w3"],
        "results in call order"
    );
    for r in &results {
        assert!(!r.is_error, "{r:?}");
    }
    let log = write_log.lock().unwrap().clone();
    let order: Vec<&str> = log.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(order, ["w1", "w2", "w3"]);
    for pair in log.windows(2) {
        assert!(pair[0].2 <= pair[1].1, "writes must not overlap");
    }
}

fn cancel_registry(behavior: InterruptBehavior) -> (ToolRegistry, Arc<AtomicUsize>) {
    let mut slow = Probe::new("slow");
    slow.behavior = behavior;
    slow.sleep = Duration::from_millis(if behavior == InterruptBehavior::Block {
        200
    } else {
        5000
    });
    let finished = Arc::clone(&slow.finished);
    (ToolRegistry::new().with(Arc::new(slow)).unwrap(), finished)
}

#[tokio::test]
async fn cancel_stops_a_cancel_tool_at_once_and_ends_the_loop() {
    let (registry, finished) = cancel_registry(InterruptBehavior::Cancel);
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call("a", "slow", json!({}))]),
        answer("never reached"),
    ]));
    let p = project().await;
    let rt = AgentRuntime::new(
        model.clone(),
        Executor::new(registry).with_audit(p.audit.clone()),
        RuntimeConfig::default(),
    );
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        c2.cancel();
    });
    let mut messages = vec![Message::user("go")];
    let out = rt.run_turn("s", &mut messages, &cancel).await;
    assert_eq!(out.stop, StopReason::Cancelled);
    let a = by_id(&out, "a");
    assert_eq!(a.code.as_deref(), Some("cancelled"));
    assert_eq!(
        finished.load(Ordering::SeqCst),
        0,
        "the Cancel tool must not run to completion"
    );
    assert_eq!(model.remaining(), 1, "no model call after the cancel");
    let rows = p.rows().await;
    let row = rows.iter().find(|r| r.row.tool_name == "slow").unwrap();
    assert_eq!(row.row.status, AuditStatus::Fail);
    assert_eq!(row.row.reason_code.as_deref(), Some("cancelled"));
}

#[tokio::test]
async fn cancel_lets_a_block_tool_finish() {
    let (registry, finished) = cancel_registry(InterruptBehavior::Block);
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call("a", "slow", json!({}))]),
        answer("never reached"),
    ]));
    let rt = AgentRuntime::new(model, Executor::new(registry), RuntimeConfig::default());
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        c2.cancel();
    });
    let mut messages = vec![Message::user("go")];
    let out = rt.run_turn("s", &mut messages, &cancel).await;
    let a = by_id(&out, "a");
    assert!(!a.is_error, "{a:?}");
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    assert_eq!(out.stop, StopReason::Cancelled);
}

#[tokio::test]
async fn a_failing_sibling_abort_tool_stops_its_siblings() {
    let mut bad = Probe::new("fetch");
    bad.safe = true;
    bad.fail = true;
    bad.sibling_abort = true;
    bad.sleep = Duration::from_millis(20);
    let mut slow = Probe::new("parse");
    slow.safe = true;
    slow.sleep = Duration::from_secs(5);
    let slow_done = Arc::clone(&slow.finished);
    let registry = ToolRegistry::new()
        .with(Arc::new(bad))
        .unwrap()
        .with(Arc::new(slow))
        .unwrap();
    let p = project().await;
    let exec = Executor::new(registry).with_audit(p.audit.clone());
    let calls = vec![call("f", "fetch", json!({})), call("p", "parse", json!({}))];
    let results = exec
        .execute_parallel(&calls, &ToolContext::new("s"), None)
        .await;
    assert_eq!(results[0].code.as_deref(), Some("tool-failed"));
    assert_eq!(results[1].code.as_deref(), Some("sibling-aborted"));
    assert!(results[1].content.contains("fetch"));
    assert_eq!(slow_done.load(Ordering::SeqCst), 0);
    let rows = p.rows().await;
    let codes: Vec<_> = rows
        .iter()
        .map(|r| (r.row.tool_name.as_str(), r.row.reason_code.as_deref()))
        .collect();
    assert!(codes.contains(&("fetch", Some("tool-failed"))), "{codes:?}");
    assert!(
        codes.contains(&("parse", Some("sibling-aborted"))),
        "{codes:?}"
    );
}

#[tokio::test]
async fn the_step_limit_forces_a_final_answer() {
    let probe = Probe::new("step");
    let runs = Arc::clone(&probe.finished);
    let registry = ToolRegistry::new().with(Arc::new(probe)).unwrap();
    let turns = (0..6)
        .map(|i| turn(vec![call(&format!("c{i}"), "step", json!({"n": i}))]))
        .collect();
    let model = Arc::new(ScriptedModel::new(turns));
    let config = RuntimeConfig {
        limits: LimitsConfig {
            max_steps: 2,
            ..LimitsConfig::default()
        },
        ..RuntimeConfig::default()
    };
    let p = project().await;
    let rt = AgentRuntime::new(
        model.clone(),
        Executor::new(registry).with_audit(p.audit.clone()),
        config,
    );
    let out = run(&rt, "loop").await;
    assert_eq!(out.stop, StopReason::Forced("max_steps".into()));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        model.requests(),
        vec![1, 1, 0],
        "the third model call offers no tools"
    );
    let rows = p.rows().await;
    let steps: Vec<u32> = rows
        .iter()
        .filter(|r| r.row.tool_name == "step")
        .map(|r| r.row.step)
        .collect();
    assert_eq!(steps, [1, 2]);
}

#[tokio::test]
async fn the_third_identical_call_is_refused() {
    let p = project().await;
    let guard = Guard::builder(p.root())
        .audit(p.audit.clone())
        .build()
        .await
        .unwrap();
    let same = || {
        turn(vec![call(
            "x",
            "read_file",
            json!({"file_path": "notes.txt"}),
        )])
    };
    let model = Arc::new(ScriptedModel::new(vec![
        same(),
        same(),
        same(),
        answer("ok"),
    ]));
    let out = run(&guard.runtime(model), "dup").await;
    let codes: Vec<Option<&str>> = out.results.iter().map(|r| r.code.as_deref()).collect();
    assert_eq!(codes, [None, None, Some("duplicate_call")]);
    assert!(!out.results[2].executed);
    let rows = p.rows().await;
    assert!(
        rows.iter()
            .any(|r| r.row.reason_code.as_deref() == Some("duplicate_call"))
    );
}

#[tokio::test]
async fn the_token_hard_limit_forces_an_answer() {
    let p = project().await;
    std::fs::write(p.root().join("big.txt"), "word ".repeat(2000)).unwrap();
    let limits = LimitsConfig {
        token_soft_limit: 400,
        token_hard_limit: 800,
        ..LimitsConfig::default()
    };
    let guard = Guard::builder(p.root())
        .limits(limits)
        .build()
        .await
        .unwrap();
    let turns = (0..5)
        .map(|i| {
            turn(vec![call(
                &format!("b{i}"),
                "read_file",
                json!({"file_path": "big.txt", "offset": i}),
            )])
        })
        .collect();
    let model = Arc::new(ScriptedModel::new(turns));
    let out = run(&guard.runtime(model), "read big").await;
    assert_eq!(
        out.stop,
        StopReason::Forced("token_hard_limit".into()),
        "{:?}",
        out.interventions
    );
    assert!(out.results.len() < 5);
}

#[tokio::test]
async fn a_subagent_cannot_ask_leave_its_tool_set_or_the_sandbox() {
    let p = project().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    let outside_file = outside.path().join("secret.txt").display().to_string();
    let model = Arc::new(ScriptedModel::new(vec![
        // lead
        turn(vec![
            call(
                "s1",
                "subagent",
                json!({"kind": "explore", "prompt": "look around"}),
            ),
            call(
                "s2",
                "subagent",
                json!({"kind": "asker", "prompt": "ask them"}),
            ),
        ]),
        // explore child
        turn(vec![
            call(
                "c1",
                "file_write",
                json!({"file_path": "pwn.txt", "content": "x"}),
            ),
            call("c2", "read_file", json!({"file_path": outside_file})),
            call("c3", "read_file", json!({"file_path": "notes.txt"})),
        ]),
        answer("explore done"),
        // asker child
        turn(vec![call("c4", "ask_user", json!({"question": "may I?"}))]),
        answer("asker done"),
        // lead
        answer("lead done"),
    ]));
    let runner = SubAgentRunner::new(model.clone())
        .with_type(SubagentType {
            name: "asker".into(),
            system_prompt: "ask".into(),
            tools: vec!["ask_user".into()],
            max_steps: None,
        })
        .unwrap();
    let guard = Guard::builder(p.root())
        .subagents(Arc::new(runner))
        .approver(Arc::new(FixedApprover(Approval::Approve)))
        .audit(p.audit.clone())
        .build()
        .await
        .unwrap();
    let out = run(&guard.runtime(model), "delegate").await;
    assert_eq!(out.answer, "lead done");
    assert_eq!(by_id(&out, "s1").content, "explore done");
    assert_eq!(by_id(&out, "s2").content, "asker done");
    assert!(!p.root().join("pwn.txt").exists());

    let rows = p.rows().await;
    let child = |tool: &str, agent: &str| {
        rows.iter()
            .find(|r| r.row.tool_name == tool && r.row.agent_name == agent)
            .unwrap_or_else(|| panic!("no audit row for {tool} by {agent}: {rows:#?}"))
            .row
            .clone()
    };
    assert_eq!(
        child("file_write", "explore").reason_code.as_deref(),
        Some("unknown-tool")
    );
    let reads: Vec<_> = rows
        .iter()
        .filter(|r| r.row.tool_name == "read_file" && r.row.agent_name == "explore")
        .collect();
    assert_eq!(reads.len(), 2);
    // The read outside the roots is an Ask at decision time; a silent child cannot ask, so
    // it never ran.
    assert!(
        reads
            .iter()
            .any(|r| r.row.decision == Some(perm_rules::Decision::Ask)),
        "{reads:#?}"
    );
    assert!(reads.iter().any(|r| r.row.status == AuditStatus::Ok));
    assert!(
        !reads
            .iter()
            .any(|r| r.row.output_preview.contains("top secret"))
    );
    assert_eq!(
        child("ask_user", "asker").reason_code.as_deref(),
        Some("ask-user-silent")
    );
    assert!(child("subagent", "lead").status == AuditStatus::Ok);
}

#[tokio::test]
async fn a_subagent_asking_for_permission_is_denied_without_asking() {
    let p = project().await;
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call(
            "s",
            "subagent",
            json!({"kind": "writer", "prompt": "write"}),
        )]),
        turn(vec![call(
            "w",
            "file_write",
            json!({"file_path": "a.txt", "content": "x"}),
        )]),
        answer("child done"),
        answer("lead done"),
    ]));
    let runner = SubAgentRunner::new(model.clone())
        .with_type(SubagentType {
            name: "writer".into(),
            system_prompt: "w".into(),
            tools: vec!["file_write".into()],
            max_steps: None,
        })
        .unwrap();
    let approvals = Arc::new(AtomicBool::new(false));
    struct Spy(Arc<AtomicBool>);
    #[async_trait]
    impl Approver for Spy {
        async fn approve(&self, _r: &ApprovalRequest) -> Approval {
            self.0.store(true, Ordering::SeqCst);
            Approval::Approve
        }
    }
    let guard = Guard::builder(p.root())
        .permissions(checker(&[(RuleKind::Ask, "file_write")]))
        .approver(Arc::new(Spy(Arc::clone(&approvals))))
        .subagents(Arc::new(runner))
        .audit(p.audit.clone())
        .build()
        .await
        .unwrap();
    let out = run(&guard.runtime(model), "go").await;
    assert_eq!(out.answer, "lead done");
    assert!(
        !approvals.load(Ordering::SeqCst),
        "a silent child must not reach the approver"
    );
    assert!(!p.root().join("a.txt").exists());
    let rows = p.rows().await;
    let w = rows
        .iter()
        .find(|r| r.row.tool_name == "file_write")
        .unwrap();
    assert_eq!(w.row.reason_code.as_deref(), Some("ask-silent-context"));
    assert_eq!(w.row.agent_name, "writer");
}

#[tokio::test]
async fn background_results_arrive_before_the_next_model_call() {
    let p = project().await;
    let guard = Guard::builder(p.root()).build().await.unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call(
            "b",
            "bg_task_run",
            json!({"tool": "read_file", "arguments": {"file_path": "notes.txt"}}),
        )]),
        turn(vec![call(
            "t",
            "todo_write",
            json!({"todos": [{"content": "wait", "status": "pending"}]}),
        )]),
        answer("done"),
    ]));
    let rt = guard.runtime(model);
    // Give the background read time to finish before the second model call.
    let mut messages = vec![Message::user("bg")];
    let out = rt
        .run_turn("s", &mut messages, &CancellationToken::new())
        .await;
    assert_eq!(out.answer, "done");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let injected = messages.iter().any(|m| matches!(m, Message::User { content } if content.contains("[background task]") && content.contains("alpha")))
        || guard.notifications().drain().iter().any(|n| n.contains("alpha"));
    assert!(
        injected,
        "the background result must be delivered: {messages:#?}"
    );
}

#[tokio::test]
async fn large_outputs_are_persisted_with_a_stub() {
    let p = project().await;
    std::fs::write(p.root().join("big.txt"), "y".repeat(5000)).unwrap();
    let lib = p.root().join("library");
    let guard = Guard::builder(p.root())
        .executor_config(ExecutorConfig {
            max_tool_output_chars: 100,
            library_dir: Some(lib.clone()),
            ..ExecutorConfig::default()
        })
        .build()
        .await
        .unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call(
            "big-1",
            "read_file",
            json!({"file_path": "big.txt"}),
        )]),
        answer("done"),
    ]));
    let out = run(&guard.runtime(model), "big").await;
    let r = by_id(&out, "big-1");
    assert!(r.content.contains("tool-results"), "{}", r.content);
    assert!(r.content.len() < 1500);
    assert_eq!(
        std::fs::read_to_string(lib.join("tool-results/big-1.txt"))
            .unwrap()
            .len(),
        5000
    );
}

// ---------- property: nothing runs without an Allowed resolution ----------

mod property {
    use super::*;
    use proptest::prelude::*;

    fn arb_calls() -> impl Strategy<Value = Vec<Vec<(u8, u8)>>> {
        prop::collection::vec(prop::collection::vec((0u8..4, 0u8..3), 0..4), 1..5)
    }

    /// How the person answers an Ask.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Answer {
        Yes,
        No,
        Never,
        Panics,
    }

    struct ScriptedApprover(Answer);

    #[async_trait]
    impl Approver for ScriptedApprover {
        async fn approve(&self, _r: &ApprovalRequest) -> Approval {
            match self.0 {
                Answer::Yes => Approval::Approve,
                Answer::No => Approval::Deny,
                Answer::Never => std::future::pending().await,
                Answer::Panics => panic!("approver crashed"),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn executed_calls_were_allowed_and_denied_calls_never_ran(
            script in arb_calls(),
            answer in prop_oneof![Just(Answer::Yes), Just(Answer::No), Just(Answer::Never), Just(Answer::Panics)],
        ) {
            let names = ["t_allow", "t_deny", "t_ask", "t_hook"];
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let mut registry = ToolRegistry::new();
            let mut logs = Vec::new();
            for n in names {
                let mut p = Probe::new(n);
                p.safe = n != "t_hook";
                logs.push((n, Arc::clone(&p.log)));
                registry.register(Arc::new(p)).unwrap();
            }
            struct BlockHook;
            #[async_trait]
            impl AgentHook for BlockHook {
                fn name(&self) -> &str { "blocker" }
                async fn pre_tool_use(&self, ctx: &PreToolUseContext) -> HookResult<PreToolUseAction> {
                    Ok(if ctx.tool_name == "t_hook" && ctx.args.get("n") == Some(&json!(1)) {
                        PreToolUseAction::Block { reason: "no".into() }
                    } else {
                        PreToolUseAction::Continue
                    })
                }
            }
            let mut hooks = HookRegistry::new();
            hooks.register(Arc::new(BlockHook));
            let exec = Executor::new(registry)
                .with_checker(Arc::new(checker(&[(RuleKind::Deny, "t_deny"), (RuleKind::Ask, "t_ask")])))
                .with_hooks(Arc::new(hooks))
                .with_approver(Arc::new(ScriptedApprover(answer)))
                .with_config(ExecutorConfig {
                    approval_timeout: Duration::from_millis(20),
                    ..ExecutorConfig::default()
                });
            let mut id = 0;
            let turns: Vec<AssistantMessage> = script.iter().map(|calls| {
                turn(calls.iter().map(|(t, n)| {
                    id += 1;
                    call(&format!("c{id}"), names[*t as usize], json!({"n": n}))
                }).collect())
            }).collect();
            let model = Arc::new(ScriptedModel::new(turns));
            let out = rt.block_on(async {
                let rt = AgentRuntime::new(model, exec, RuntimeConfig::default());
                let mut m = vec![Message::user("p")];
                rt.run_turn("s", &mut m, &CancellationToken::new()).await
            });
            let executed: Vec<String> = logs.iter()
                .flat_map(|(_, l)| l.lock().unwrap().iter().map(|(id, _, _)| id.clone()).collect::<Vec<_>>())
                .collect();
            for r in &out.results {
                let ran = executed.contains(&r.call_id);
                prop_assert_eq!(ran, r.executed, "{:?}", r);
                match r.decision {
                    // Only an approver that said yes lets an Ask run; no, silence and a crash
                    // all refuse it, each with its own code.
                    Some(Decision::Ask) => {
                        prop_assert_eq!(ran, answer == Answer::Yes, "{:?} {:?}", answer, r);
                        let want = match answer {
                            Answer::Yes => None,
                            Answer::No => Some("ask-refused"),
                            Answer::Never => Some("ask-timeout"),
                            Answer::Panics => Some("ask-approver-failed"),
                        };
                        if !ran {
                            prop_assert_eq!(r.code.as_deref(), want, "{:?}", r);
                        }
                    }
                    Some(Decision::Deny) => prop_assert!(!ran, "{:?}", r),
                    Some(Decision::Allow) => {}
                    None => prop_assert!(!ran, "{:?}", r),
                }
                // The tool decides its own decision here: t_ask is always Ask, t_deny always Deny.
                if r.tool == "t_ask" && r.decision.is_some() {
                    prop_assert_eq!(r.decision, Some(Decision::Ask), "{:?}", r);
                }
            }
            prop_assert!(!executed.iter().any(|id| out.results.iter().any(|r| &r.call_id == id && r.tool == "t_deny")));
            let asks_ran = out.results.iter().filter(|r| r.tool == "t_ask" && r.executed).count();
            if answer != Answer::Yes {
                prop_assert_eq!(asks_ran, 0);
            }
        }
    }
}

// ---------- the OpenAI-compatible model against a local mock server ----------

/// Answers one HTTP request with `body` and hands back the request it read.
async fn mock_server(body: String) -> (String, tokio::task::JoinHandle<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = sock.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len || n == 0 {
                    break;
                }
            }
        }
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(reply.as_bytes()).await.unwrap();
        sock.shutdown().await.ok();
        String::from_utf8_lossy(&buf).to_string()
    });
    (format!("http://{addr}/v1"), handle)
}

#[tokio::test]
async fn the_openai_model_speaks_chat_completions() {
    use agent_core::{Model, ModelRequest, ToolSchema};
    let canned = json!({"choices": [{"message": {"role": "assistant", "content": "",
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"file_path\":\"notes.txt\"}"}}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5}});
    let (url, server) = mock_server(canned.to_string()).await;
    let model = agent_core::OpenAiModel::new(url, "test-model")
        .unwrap()
        .with_api_key("k");
    let tools = [ToolSchema {
        name: "read_file".into(),
        description: "read".into(),
        parameters: json!({"type": "object"}),
    }];
    let messages = [Message::system("sys"), Message::user("read the notes")];
    let reply = model
        .complete(ModelRequest {
            messages: &messages,
            tools: &tools,
        })
        .await
        .unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "read_file");
    assert_eq!(
        reply.tool_calls[0].arguments,
        json!({"file_path": "notes.txt"})
    );
    assert_eq!(reply.usage.unwrap().prompt_tokens, 12);
    let request = server.await.unwrap();
    assert!(
        request.starts_with("POST /v1/chat/completions"),
        "{request}"
    );
    assert!(
        request
            .to_ascii_lowercase()
            .contains("authorization: bearer k")
    );
    let body: Value =
        serde_json::from_str(&request[request.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][1]["content"], "read the notes");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
}

// ---------- more of the permission phase ----------

#[tokio::test]
async fn run_bash_goes_through_bash_guard_and_content_rules() {
    let p = project().await;
    let mut bash = bash_guard_config();
    bash.exec.require_confinement = false;
    let guard = Guard::builder(p.root())
        .permissions(checker(&[(RuleKind::Deny, "run_bash(rm:*)")]))
        .bash(bash)
        .approver(Arc::new(FixedApprover(Approval::Deny)))
        .audit(p.audit.clone())
        .build()
        .await
        .unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![
            call("ok", "run_bash", json!({"command": "echo hello"})),
            // The deny rule matches the second simple command, found by bash-guard's parser.
            call(
                "rm",
                "run_bash",
                json!({"command": "echo hi && rm notes.txt"}),
            ),
            call("sudo", "run_bash", json!({"command": "sudo ls"})),
        ]),
        answer("done"),
    ]));
    let out = run(&guard.runtime(model), "bash").await;
    let ok = by_id(&out, "ok");
    assert!(ok.executed && !ok.is_error, "{ok:?}");
    assert!(ok.content.contains("hello"));
    assert_eq!(by_id(&out, "rm").code.as_deref(), Some("p0-config-deny"));
    assert!(p.root().join("notes.txt").exists());
    let sudo = by_id(&out, "sudo");
    assert!(!sudo.executed);
    // bash-guard's own reason code, not a synthetic tool rule's.
    assert_eq!(
        sudo.code.as_deref(),
        Some("privilege_escalation"),
        "{sudo:?}"
    );
    assert_eq!(sudo.layer.as_deref(), Some("bash-guard"));
}

fn bash_guard_config() -> bash_guard::BashConfig {
    bash_guard::BashConfig::default()
}

/// Asks for permission on every call.
struct Asker;

#[async_trait]
impl AgentHook for Asker {
    fn name(&self) -> &str {
        "asker"
    }
    async fn pre_tool_use(&self, _ctx: &PreToolUseContext) -> HookResult<PreToolUseAction> {
        Ok(PreToolUseAction::PermissionRequired {
            message: "check this".into(),
        })
    }
}

#[tokio::test]
async fn session_rules_hook_requests_and_plan_mode_take_part_in_precedence() {
    let p = project().await;
    let mut plan = PermissionChecker::new();
    plan.set_mode(perm_rules::PermissionMode::Plan);
    let guard = Guard::builder(p.root())
        .permissions(plan)
        .hook(Arc::new(Asker))
        .approver(Arc::new(FixedApprover(Approval::Deny)))
        .build()
        .await
        .unwrap();
    guard
        .executor()
        .add_session_rule(rule(RuleKind::Deny, "glob_files"));
    let calls = [
        call("g", "glob_files", json!({"pattern": "*.txt"})),
        call("w", "file_write", json!({"file_path": "x", "content": "y"})),
        call("r", "read_file", json!({"file_path": "notes.txt"})),
    ];
    let ctx = ToolContext::new("s").with_sandbox(Arc::clone(guard.sandbox()));
    let results = guard.executor().execute_parallel(&calls, &ctx, None).await;
    assert_eq!(results[0].code.as_deref(), Some("p2-session-deny"));
    assert_eq!(
        results[1].code.as_deref(),
        Some("mode-plan"),
        "plan mode denies writes: {:?}",
        results[1]
    );
    // Read-only passes plan mode, but the hook's request makes it an Ask, which is refused.
    assert_eq!(results[2].code.as_deref(), Some("ask-refused"));
    assert!(results.iter().all(|r| !r.executed));
}

#[tokio::test]
async fn a_subagent_budget_is_carved_from_what_the_parent_has_left() {
    let p = project().await;
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call(
            "s",
            "subagent",
            json!({"kind": "nested", "prompt": "go"}),
        )]),
        // child step 1
        turn(vec![
            call("c1", "read_file", json!({"file_path": "notes.txt"})),
            call(
                "c2",
                "subagent",
                json!({"kind": "nested", "prompt": "deeper"}),
            ),
        ]),
        // child step 2 would exceed what the parent had left
        turn(vec![call(
            "c3",
            "read_file",
            json!({"file_path": "notes.txt", "offset": 1}),
        )]),
        // lead
        answer("lead done"),
    ]));
    let runner = SubAgentRunner::new(model.clone())
        .with_type(SubagentType {
            name: "nested".into(),
            system_prompt: "n".into(),
            tools: vec!["read_file".into(), "subagent".into()],
            max_steps: None,
        })
        .unwrap()
        .with_max_depth(1);
    let guard = Guard::builder(p.root())
        .subagents(Arc::new(runner))
        .limits(LimitsConfig {
            max_steps: 2,
            ..LimitsConfig::default()
        })
        .audit(p.audit.clone())
        .build()
        .await
        .unwrap();
    let out = run(&guard.runtime(model), "go").await;
    assert_eq!(out.answer, "lead done");
    let rows = p.rows().await;
    let (child, stops): (Vec<_>, Vec<_>) = rows
        .iter()
        .filter(|r| r.row.agent_name == "nested")
        .partition(|r| r.row.status != AuditStatus::SessionStop);
    // One step (the parent had 2 - 1 left): c1 ran, c2 was refused, c3 never came.
    assert_eq!(child.len(), 2, "{child:#?}");
    // The child's session ended on the step limit, and says so.
    assert_eq!(stops.len(), 1, "{stops:#?}");
    assert!(stops.iter().all(|r| r.row.output_preview == "max_steps"));
    let nested = child
        .iter()
        .find(|r| r.row.tool_name == "subagent")
        .unwrap();
    assert_eq!(
        nested.row.reason_code.as_deref(),
        Some("unknown-tool"),
        "past the depth limit"
    );
    assert!(
        child
            .iter()
            .any(|r| r.row.tool_name == "read_file" && r.row.status == AuditStatus::Ok)
    );
}

struct Panics;

#[async_trait]
impl AgentTool for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn description(&self) -> &str {
        "panics"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("tool bug")
    }
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let exec = Executor::new(ToolRegistry::new().with(Arc::new(Panics)).unwrap());
    let r = exec
        .execute_parallel(
            &[call("p", "panics", json!({}))],
            &ToolContext::new("s"),
            None,
        )
        .await;
    assert!(r[0].is_error);
    assert_eq!(r[0].code.as_deref(), Some("tool-failed"));
}

#[tokio::test]
async fn compress_context_compacts_after_the_step() {
    let p = project().await;
    let lines: Vec<String> = (0..10)
        .map(|i| format!("line {i} {}", "z".repeat(100)))
        .collect();
    std::fs::write(p.root().join("long.txt"), lines.join("\n")).unwrap();
    let guard = Guard::builder(p.root()).build().await.unwrap();
    let mut turns: Vec<AssistantMessage> = (0..5)
        .map(|i| {
            turn(vec![call(
                &format!("r{i}"),
                "read_file",
                json!({"file_path": "long.txt", "offset": i}),
            )])
        })
        .collect();
    turns.push(turn(vec![call("c", "compress_context", json!({}))]));
    turns.push(answer("done"));
    let model = Arc::new(ScriptedModel::new(turns));
    let rt = guard.runtime(model);
    let mut messages = vec![Message::system("sys"), Message::user("task")];
    let out = rt
        .run_turn("s", &mut messages, &CancellationToken::new())
        .await;
    assert_eq!(out.answer, "done");
    assert!(matches!(&messages[0], Message::System { .. }));
    assert_eq!(
        messages[1],
        Message::user("task"),
        "the task survives compaction"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.text().starts_with("[context compacted")),
        "{messages:#?}"
    );
    assert!(messages.len() < 2 + 7 * 2);
}

#[tokio::test]
async fn the_per_tool_timeout_stops_even_a_block_tool() {
    let mut slow = Probe::new("stuck");
    slow.behavior = InterruptBehavior::Block;
    slow.sleep = Duration::from_secs(5);
    let done = Arc::clone(&slow.finished);
    let exec = Executor::new(ToolRegistry::new().with(Arc::new(slow)).unwrap()).with_config(
        ExecutorConfig {
            tool_timeout: ExecutorConfig::timeout_from_env_value(Some("0"))
                .min(Duration::from_millis(50)),
            ..ExecutorConfig::default()
        },
    );
    let r = exec
        .execute_parallel(
            &[call("t", "stuck", json!({}))],
            &ToolContext::new("s"),
            None,
        )
        .await;
    assert_eq!(r[0].code.as_deref(), Some("tool-timeout"));
    assert_eq!(done.load(Ordering::SeqCst), 0);
    assert_eq!(
        ExecutorConfig::timeout_from_env_value(Some("7")),
        Duration::from_secs(7)
    );
    assert_eq!(
        ExecutorConfig::timeout_from_env_value(Some("x")),
        Duration::from_secs(120)
    );
}

#[tokio::test]
async fn reported_usage_counts_against_the_token_budget() {
    let probe = Probe::new("p");
    let registry = ToolRegistry::new().with(Arc::new(probe)).unwrap();
    let mut big = turn(vec![call("a", "p", json!({"n": 1}))]);
    big.usage = Some(agent_core::Usage {
        prompt_tokens: 50_000,
        completion_tokens: 10,
    });
    let model = Arc::new(ScriptedModel::new(vec![
        big,
        turn(vec![call("b", "p", json!({"n": 2}))]),
    ]));
    let rt = AgentRuntime::new(model, Executor::new(registry), RuntimeConfig::default());
    let out = run(&rt, "go").await;
    assert_eq!(out.stop, StopReason::Forced("token_hard_limit".into()));
    assert_eq!(out.results.len(), 1, "the second step never ran its tools");
}

#[tokio::test]
async fn a_user_cancel_reaches_a_running_subagent() {
    let p = project().await;
    let mut slow = Probe::new("slow_read");
    slow.sleep = Duration::from_secs(5);
    let done = Arc::clone(&slow.finished);
    let model = Arc::new(ScriptedModel::new(vec![
        turn(vec![call(
            "s",
            "subagent",
            json!({"kind": "slow", "prompt": "go"}),
        )]),
        turn(vec![call("c", "slow_read", json!({}))]),
        answer("child done"),
        answer("lead done"),
    ]));
    let runner = SubAgentRunner::new(model.clone())
        .with_type(SubagentType {
            name: "slow".into(),
            system_prompt: "s".into(),
            tools: vec!["slow_read".into()],
            max_steps: None,
        })
        .unwrap();
    let guard = Guard::builder(p.root())
        .subagents(Arc::new(runner))
        .tool(Arc::new(slow))
        .build()
        .await
        .unwrap();
    let rt = guard.runtime(model.clone());
    let cancel = guard.cancellations().token("s1");
    let registry = Arc::clone(guard.cancellations());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        registry.insert("s1");
    });
    let mut messages = vec![Message::user("go")];
    let out = rt.run_turn("s1", &mut messages, &cancel).await;
    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(by_id(&out, "s").code.as_deref(), Some("cancelled"));
    assert_eq!(
        done.load(Ordering::SeqCst),
        0,
        "the child's Cancel tool stopped at once"
    );
    assert_eq!(
        model.remaining(),
        2,
        "neither the child nor the lead called the model again"
    );
}

#[tokio::test]
async fn steps_without_new_information_force_an_answer() {
    let p = project().await;
    let guard = Guard::builder(p.root()).build().await.unwrap();
    // Offsets past the end: every read returns nothing new.
    let turns = (0..6)
        .map(|i| {
            turn(vec![call(
                &format!("e{i}"),
                "read_file",
                json!({"file_path": "notes.txt", "offset": 10 + i}),
            )])
        })
        .collect();
    let out = run(&guard.runtime(Arc::new(ScriptedModel::new(turns))), "stale").await;
    assert_eq!(out.stop, StopReason::Forced("diminishing_returns".into()));
    assert_eq!(out.results.len(), 3);
}
