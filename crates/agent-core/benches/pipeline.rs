//! Guard overhead per tool call through the whole pipeline, and parallel read-only throughput.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::tools::ReadFileTool;
use agent_core::{
    AgentTool, CallScreen, Executor, ToolCall, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fs_sandbox::{Access, Sandbox};
use perm_hooks::{AgentHook, AuditLog, HookRegistry, RedactionHook};
use perm_rules::{PermissionChecker, PermissionRule, RuleKind, RuleSource};
use runtime_limits::DuplicateDetector;
use serde_json::{Value, json};

struct Noop {
    safe: bool,
}

#[async_trait]
impl AgentTool for Noop {
    fn name(&self) -> &str {
        if self.safe { "noop_read" } else { "noop" }
    }
    fn description(&self) -> &str {
        "does nothing"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}}})
    }
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        self.safe
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

struct PassThrough;

#[async_trait]
impl AgentHook for PassThrough {
    fn name(&self) -> &str {
        "pass"
    }
}

struct Dup(DuplicateDetector);

impl CallScreen for Dup {
    fn screen(&mut self, tool: &str, args: &Value) -> Option<(String, String)> {
        self.0
            .on_call(tool, args)
            .map(|iv| (iv.code().to_owned(), iv.message()))
    }
}

fn executor(rt: &tokio::runtime::Runtime, dir: &std::path::Path) -> (Executor, Arc<Sandbox>) {
    let registry = ToolRegistry::new()
        .with(Arc::new(Noop { safe: false }))
        .unwrap()
        .with(Arc::new(Noop { safe: true }))
        .unwrap();
    let mut checker = PermissionChecker::new();
    for (kind, text) in [
        (RuleKind::Deny, "run_bash(rm:*)"),
        (RuleKind::Deny, "read_file(**/.env)"),
        (RuleKind::Deny, "mcp__*"),
        (RuleKind::Ask, "file_write(/etc/**)"),
        (RuleKind::Ask, "run_bash(git push:*)"),
        (RuleKind::Allow, "read_file"),
        (RuleKind::Allow, "noop*"),
    ] {
        checker.add_rule(PermissionRule::parse(kind, text, RuleSource::Api).unwrap());
    }
    let mut hooks = HookRegistry::new();
    hooks.register(Arc::new(PassThrough));
    hooks.register(Arc::new(RedactionHook::default()));
    let audit = rt.block_on(AuditLog::open(dir.join("audit.db"))).unwrap();
    // The real fs-sandbox: `read_file` paths are judged by physical resolution at decision
    // time and opened through the sandbox at execution, as in production.
    let project = dir.join("proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    let sandbox = Arc::new(
        Sandbox::builder(&project)
            .root(&project, Access::ReadWrite)
            .build()
            .unwrap(),
    );
    let exec = Executor::new(registry.with(Arc::new(ReadFileTool)).unwrap())
        .with_checker(Arc::new(checker))
        .with_hooks(Arc::new(hooks))
        .with_audit(audit)
        .with_sandbox(Arc::clone(&sandbox));
    (exec, sandbox)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (exec, sandbox) = executor(&rt, dir.path());
    // The tools open files through the context's sandbox (the race guard); the executor's
    // judges the path first.
    let ctx = ToolContext::new("bench").with_sandbox(sandbox);
    let mut group = c.benchmark_group("agent_core");
    group.measurement_time(Duration::from_secs(3));
    group.sample_size(30);

    let noop = Noop { safe: false };
    group.bench_function("noop_tool_direct", |b| {
        b.iter(|| rt.block_on(noop.execute(json!({"n": 1}), &ctx)).unwrap())
    });
    let mut n = 0u64;
    group.bench_function("noop_call_full_pipeline", |b| {
        b.iter(|| {
            n += 1;
            let calls = [ToolCall {
                id: format!("c{n}"),
                name: "noop".into(),
                arguments: json!({"n": n}),
            }];
            let mut dup = Dup(DuplicateDetector::default());
            let r = rt.block_on(exec.execute_parallel(&calls, &ctx, Some(&mut dup)));
            assert!(!r[0].is_error);
        })
    });
    // A path-carrying call: everything above plus fs-sandbox's judgement of the path and the
    // sandboxed open and read of a 14-byte file.
    let file = dir.path().join("proj/src/lib.rs");
    group.bench_function("read_file_full_pipeline", |b| {
        b.iter(|| {
            n += 1;
            let calls = [ToolCall {
                id: format!("r{n}"),
                name: "read_file".into(),
                arguments: json!({"file_path": file.to_str().unwrap(), "offset": n % 2}),
            }];
            let r = rt.block_on(exec.execute_parallel(&calls, &ctx, None));
            assert!(!r[0].is_error, "{:?}", r[0]);
        })
    });
    // The same call on a current-thread runtime: no cross-thread wake-ups, so what is left is
    // the guards themselves (the audit writer shares the thread).
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local_dir = tempfile::tempdir().unwrap();
    let (local_exec, _) = executor(&local, local_dir.path());
    group.bench_function("noop_call_full_pipeline_current_thread", |b| {
        b.iter(|| {
            n += 1;
            let calls = [ToolCall {
                id: format!("c{n}"),
                name: "noop".into(),
                arguments: json!({"n": n}),
            }];
            let mut dup = Dup(DuplicateDetector::default());
            let r = local.block_on(local_exec.execute_parallel(&calls, &ctx, Some(&mut dup)));
            assert!(!r[0].is_error);
        })
    });
    local
        .block_on(local_exec.audit().unwrap().shutdown())
        .unwrap();
    for count in [1usize, 16] {
        group.throughput(Throughput::Elements(count as u64));
        group.bench_with_input(
            BenchmarkId::new("parallel_read_only", count),
            &count,
            |b, &count| {
                b.iter(|| {
                    let calls: Vec<ToolCall> = (0..count)
                        .map(|i| ToolCall {
                            id: format!("p{i}"),
                            name: "noop_read".into(),
                            arguments: json!({"n": i}),
                        })
                        .collect();
                    let r = rt.block_on(exec.execute_parallel(&calls, &ctx, None));
                    assert_eq!(r.len(), count);
                })
            },
        );
    }
    group.finish();
    rt.block_on(exec.audit().unwrap().shutdown()).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
