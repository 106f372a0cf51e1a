#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Pipeline overhead and audit writer throughput.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use perm_hooks::*;
use serde_json::json;

struct Noop(String);

#[async_trait]
impl AgentHook for Noop {
    fn name(&self) -> &str {
        &self.0
    }
}

fn pipeline(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("pre_tool_use");
    g.measurement_time(Duration::from_secs(2)).sample_size(30);
    let args = json!({"command": "ls -la"});
    for n in [0usize, 3, 10] {
        let mut reg = HookRegistry::new();
        for i in 0..n {
            reg.register(Arc::new(Noop(format!("noop{i}"))));
        }
        g.bench_with_input(BenchmarkId::new("noop_hooks", n), &n, |b, _| {
            b.iter(|| {
                let ctx = PreToolUseContext {
                    session_id: "s".into(),
                    tool_name: "run_bash".into(),
                    args: args.clone(),
                    ..Default::default()
                };
                rt.block_on(reg.run_pre_tool_use(ctx))
            });
        });
    }
    g.finish();
}

/// A row as a hook writes it: the call's input, its decision and who decided (every row is
/// redacted and chained by the writer).
fn row(i: u64) -> AuditRow {
    let mut r = AuditRow::decided(
        perm_rules::Decision::Allow,
        "p7_config_allow",
        "total 0\ndrwxr-xr-x 2 user user 40 .",
    );
    r.session_id = format!("s{}", i % 8);
    r.tool_name = "Bash".into();
    r.call_id = format!("toolu_{i}");
    r.set_input(
        &serde_json::json!({"command": "ls -la src && cargo test -p perm-hooks --test all audit"}),
    );
    r.step = (i % 50) as u32;
    r.status = AuditStatus::Ok;
    r.elapsed_ms = 3;
    r.client = "claude-code".into();
    r.layer = Some("perm-rules".into());
    r.resolved_by = Some(perm_hooks::Resolver::Rule);
    r.resolution = Some("run_bash(cargo test:*)".into());
    r.ts = 1_700_000_000_000;
    r
}

/// The key every audit bench links under (the writer's cost does not depend on its bytes).
fn key() -> ChainKey {
    ChainKey::from_bytes(&[7; 32]).unwrap()
}

/// Writes `rows` through the log at `target` with at most `max_batch` rows per transaction;
/// returns the time until all are committed. Every row is redacted and linked under the key
/// either way: `max_batch = 1` is the same writer without batching (one transaction per row
/// that reads the last link, links the row and inserts it), the honest per-row baseline.
async fn through_log(target: &str, rows: u64, max_batch: usize) -> Duration {
    // Back-pressure instead of refusal: this measures the writer, not the enqueue timeout.
    let log = AuditLog::open_keyed(
        target,
        AuditOptions {
            enqueue_timeout: Duration::from_secs(30),
            max_batch,
            ..Default::default()
        },
        key(),
    )
    .await
    .unwrap();
    let start = Instant::now();
    for i in 0..rows {
        log.record(row(i)).await;
    }
    log.shutdown().await.unwrap();
    let t = start.elapsed();
    assert_eq!(log.written(), rows);
    t
}

/// [`through_log`] on a fresh SQLite file.
async fn sqlite_log(rows: u64, max_batch: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    through_log(path.to_str().unwrap(), rows, max_batch).await
}

fn audit(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("audit_rows");
    g.measurement_time(Duration::from_secs(3)).sample_size(10);
    let rows = 20_000u64;
    g.throughput(Throughput::Elements(rows));
    g.bench_function("batched_writer", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| rt.block_on(sqlite_log(rows, AuditOptions::default().max_batch)))
                .sum()
        })
    });
    let per = 1_000u64;
    g.throughput(Throughput::Elements(per));
    g.bench_function("per_row_chained", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| rt.block_on(sqlite_log(per, 1))).sum())
    });
    g.finish();
}

/// A fresh `ag_bench` database on the server named by `AGENT_GUARD_TEST_PG_URL`.
async fn pg_bench_db(admin: &str) -> String {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(admin).await.unwrap();
    sqlx::raw_sql("DROP DATABASE IF EXISTS ag_bench WITH (FORCE)")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::raw_sql("CREATE DATABASE ag_bench")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let (base, query) = admin.split_once('?').unwrap_or((admin, ""));
    let host_end = base.rfind('/').unwrap();
    let url = format!("{}/ag_bench?{query}", &base[..host_end]);
    // Create the schema once, through the log itself.
    AuditLog::open_keyed(&url, AuditOptions::default(), key())
        .await
        .unwrap()
        .shutdown()
        .await
        .unwrap();
    url
}

fn audit_postgres(c: &mut Criterion) {
    let Ok(admin) = std::env::var("AGENT_GUARD_TEST_PG_URL") else {
        eprintln!(
            "SKIPPED audit_rows_pg: AGENT_GUARD_TEST_PG_URL is not set (.ci/pg.sh start DIR)"
        );
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let url = rt.block_on(pg_bench_db(&admin));
    let mut g = c.benchmark_group("audit_rows_pg");
    g.measurement_time(Duration::from_secs(3)).sample_size(10);
    let rows = 20_000u64;
    g.throughput(Throughput::Elements(rows));
    g.bench_function("batched_writer", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| rt.block_on(through_log(&url, rows, AuditOptions::default().max_batch)))
                .sum()
        })
    });
    let per = 1_000u64;
    g.throughput(Throughput::Elements(per));
    g.bench_function("per_row_chained", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| rt.block_on(through_log(&url, per, 1)))
                .sum()
        })
    });
    g.finish();
}

criterion_group!(benches, pipeline, audit, audit_postgres);
criterion_main!(benches);
