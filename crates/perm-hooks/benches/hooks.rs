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

/// Writes `rows` through the batched writer; returns the time until all are committed.
async fn batched(rows: u64) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    // Back-pressure instead of refusal: this measures the writer, not the enqueue timeout.
    let log = AuditLog::open_with(
        dir.path().join("a.db"),
        AuditOptions {
            enqueue_timeout: Duration::from_secs(30),
            ..Default::default()
        },
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

/// The seed's design: one `tokio::spawn` + one INSERT (its own transaction) per row.
async fn per_row(rows: u64) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    AuditLog::open(&path)
        .await
        .unwrap()
        .shutdown()
        .await
        .unwrap();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30));
    // The batched writer's pool (`AuditLog::open`, POOL_SIZE in audit/mod.rs) has 4
    // connections too: the comparison is of the write pattern, not of the pool.
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(opts)
        .await
        .unwrap();
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(rows as usize);
    for i in 0..rows {
        let pool = pool.clone();
        let r = row(i);
        tasks.push(tokio::spawn(async move {
            sqlx::query(
                "INSERT INTO agent_audit_log (session_id, step, tool_name, status, elapsed_ms, output_preview, agent_name, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(r.session_id)
            .bind(i64::from(r.step))
            .bind(r.tool_name)
            .bind(r.status.as_str())
            .bind(r.elapsed_ms as i64)
            .bind(r.output_preview)
            .bind(r.agent_name)
            .bind(r.ts)
            .execute(&pool)
            .await
            .unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let t = start.elapsed();
    pool.close().await;
    t
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
        b.iter_custom(|iters| (0..iters).map(|_| rt.block_on(batched(rows))).sum())
    });
    let per = 1_000u64;
    g.throughput(Throughput::Elements(per));
    g.bench_function("per_row_spawn", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| rt.block_on(per_row(per))).sum())
    });
    g.finish();
}

/// Connections on both sides of the PostgreSQL comparison: the log's own pool size.
const PG_POOL: u32 = 4;

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
    AuditLog::open(&url)
        .await
        .unwrap()
        .shutdown()
        .await
        .unwrap();
    url
}

async fn pg_batched(url: &str, rows: u64) -> Duration {
    // Back-pressure instead of refusal: this measures the writer, not the enqueue timeout.
    let log = AuditLog::open_with(
        url,
        AuditOptions {
            enqueue_timeout: Duration::from_secs(30),
            ..Default::default()
        },
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

/// One INSERT (its own transaction) per row, PG_POOL at a time.
async fn pg_per_row(pool: &sqlx::PgPool, rows: u64) -> Duration {
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(rows as usize);
    for i in 0..rows {
        let pool = pool.clone();
        let r = row(i);
        tasks.push(tokio::spawn(async move {
            sqlx::query(
                "INSERT INTO agent_audit_log (session_id, step, tool_name, status, elapsed_ms, \
                 output_preview, agent_name, ts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(r.session_id)
            .bind(i64::from(r.step))
            .bind(r.tool_name)
            .bind(r.status.as_str())
            .bind(r.elapsed_ms as i64)
            .bind(r.output_preview)
            .bind(r.agent_name)
            .bind(r.ts)
            .execute(&pool)
            .await
            .unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed()
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
    let pool = rt
        .block_on(
            sqlx::postgres::PgPoolOptions::new()
                .max_connections(PG_POOL)
                .connect(&url),
        )
        .unwrap();
    let mut g = c.benchmark_group("audit_rows_pg");
    g.measurement_time(Duration::from_secs(3)).sample_size(10);
    let rows = 20_000u64;
    g.throughput(Throughput::Elements(rows));
    g.bench_function("batched_writer", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| rt.block_on(pg_batched(&url, rows)))
                .sum()
        })
    });
    let per = 1_000u64;
    g.throughput(Throughput::Elements(per));
    g.bench_function("per_row_insert", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| rt.block_on(pg_per_row(&pool, per)))
                .sum()
        })
    });
    g.finish();
    rt.block_on(pool.close());
}

criterion_group!(benches, pipeline, audit, audit_postgres);
criterion_main!(benches);
