//! `Guard::evaluate`, the one composition, against the layers it composes: a read of a project
//! file (rules + fs-sandbox + mode) and a typical bash command (rules + bash-guard), with
//! bash-guard's own analysis of the same command beside it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_core::{Call, Policy};
use bash_guard::{Analyzer, BashConfig, CachedAnalyzer};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const POLICY: &str = r#"
[permissions]
deny = ["run_bash(rm:*)", "read_file(**/.env)"]
allow = ["read_file", "grep_files", "run_bash(git diff:*)", "run_bash(ls:*)", "run_bash(grep:*)"]
[hooks]
audit = false
"#;

/// A 200-character command of the kind agents send.
const TYPICAL: &str = "git diff --stat HEAD~3 -- src/ && ls -la src/components | grep -v test | head -n 20; grep -rn 'TODO' src/lib.rs src/main.rs | sort | uniq -c | sort -rn | head -5 && echo done";

/// 16 KiB of ordinary deployment YAML: names, images, ports, no secret.
fn yaml_16k() -> String {
    let mut out = String::from("apiVersion: apps/v1\nkind: Deployment\n");
    let mut i = 0;
    while out.len() < 16 * 1024 {
        out.push_str(&format!(
            "- name: service-{i}\n  image: registry.example.com/team/service-{i}:1.{i}.0\n  ports: [{}]\n  env:\n    - name: LOG_LEVEL\n      value: info\n",
            8000 + i
        ));
        i += 1;
    }
    out.truncate(16 * 1024);
    out
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    let policy = Policy::from_text("bench.toml", POLICY).unwrap();
    let env = HashMap::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let guard = rt
        .block_on(policy.guard_builder(&root, &env).unwrap().build())
        .unwrap();

    let mut g = c.benchmark_group("evaluate");
    let read = Call::new(
        "read_file",
        json!({ "file_path": root.join("src/lib.rs").to_str().unwrap() }),
    );
    g.bench_function("read_project_file", |b| {
        b.iter(|| rt.block_on(guard.evaluate(&read)))
    });

    // The layers a read goes through, alone.
    let file = root.join("src/lib.rs");
    g.bench_function("read_sandbox_check_alone", |b| {
        b.iter(|| guard.sandbox().check(&file, fs_sandbox::Op::Read))
    });
    // A non-source file is sniffed with the redaction's detectors before the read is allowed.
    let config = root.join("deploy.yaml");
    std::fs::write(&config, yaml_16k()).unwrap();
    g.bench_function("read_sniffed_16k_check_alone", |b| {
        b.iter(|| guard.sandbox().check(&config, fs_sandbox::Op::Read))
    });
    let read_args = read.args.clone();
    g.bench_function("read_rules_alone", |b| {
        b.iter(|| {
            guard
                .executor()
                .checker()
                .check("read_file", Some(&read_args))
        })
    });

    // Cache hits on both sides: what evaluate adds around bash-guard's cached verdict.
    let bash = Call::new("run_bash", json!({ "command": TYPICAL }));
    g.bench_function("bash_typical_cached", |b| {
        b.iter(|| rt.block_on(guard.evaluate(&bash)))
    });
    let judge: Arc<dyn bash_guard::PathJudge> = Arc::new(agent_core::tools::SandboxJudge::new(
        Arc::clone(guard.sandbox()),
    ));
    let cached = CachedAnalyzer::new(
        Analyzer::new(BashConfig::default()),
        Arc::clone(&judge),
        256,
    );
    g.bench_function("bash_guard_alone_cached", |b| {
        b.iter(|| cached.analyze(TYPICAL, &root))
    });

    // Cold on both sides: a distinct command each iteration, so neither cache hits.
    let n = AtomicU64::new(0);
    g.bench_function("bash_typical_cold", |b| {
        b.iter(|| {
            let i = n.fetch_add(1, Ordering::Relaxed);
            let call = Call::new("run_bash", json!({ "command": format!("{TYPICAL} {i}") }));
            rt.block_on(guard.evaluate(&call))
        })
    });
    let analyzer = Analyzer::new(BashConfig::default());
    g.bench_function("bash_guard_alone_cold", |b| {
        b.iter(|| {
            let i = n.fetch_add(1, Ordering::Relaxed);
            analyzer.analyze(&format!("{TYPICAL} {i}"), &root, judge.as_ref())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
