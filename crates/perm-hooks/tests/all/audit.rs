use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use perm_hooks::*;
use perm_rules::Decision;

use crate::backends::targets;

fn row(session: &str, step: u32) -> AuditRow {
    AuditRow::tool_call(&PostToolUseContext {
        session_id: session.into(),
        step,
        agent_name: "lead".into(),
        tool_name: format!("tool{}", step % 3),
        output: "é".repeat(300),
        is_error: step % 2 == 1,
        ..Default::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_all_rows_survive_shutdown() {
    for t in targets("concurrent_sessions").await {
        concurrent_sessions(&t.url).await;
    }
}

async fn concurrent_sessions(path: &str) {
    let log = AuditLog::open_with(
        path,
        AuditOptions {
            queue_capacity: 64,
            max_batch: 32,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let (n, m) = (8u32, 250u32);
    let mut tasks = Vec::new();
    for s in 0..n {
        let hook = AuditLogHook::new(log.clone());
        tasks.push(tokio::spawn(async move {
            for step in 0..m {
                let ctx = PostToolUseContext {
                    session_id: format!("s{s}"),
                    step,
                    ..Default::default()
                };
                hook.post_tool_use(&ctx).await.unwrap();
            }
            hook.on_session_stop(&SessionStopContext {
                session_id: format!("s{s}"),
                steps: m,
                reason: "completed".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    log.shutdown().await.unwrap();
    assert_eq!(log.dropped(), 0, "{path}");
    assert_eq!(log.written(), u64::from(n * m + n), "{path}");
    assert_eq!(
        log.record(row("late", 0)).await,
        Recorded::Dropped,
        "rows after shutdown are counted"
    );
    assert_eq!(log.dropped(), 1);
    assert_eq!(log.lost(), 0, "a refused row was never acknowledged");
    let err = log.shutdown().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Incomplete {
                lost: 0,
                refused: 1,
                ..
            }
        ),
        "{err}"
    );

    let reopened = AuditLog::open(path).await.unwrap();
    let reader = reopened.reader();
    let all = reader.query(&AuditQuery::default()).await.unwrap();
    assert_eq!(all.len() as u32, n * m + n, "{path}");
    let stops = reader
        .query(&AuditQuery {
            status: Some(AuditStatus::SessionStop),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(stops.len() as u32, n);
    assert!(stops.iter().all(|r| r.row.tool_name == "session"));
    let one = reader
        .query(&AuditQuery {
            session_id: Some("s3".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(one.len() as u32, m + 1);
    reopened.shutdown().await.unwrap();
}

#[tokio::test]
async fn query_filters_summary_and_preview() {
    for t in targets("query_filters").await {
        query_filters(&t.url).await;
    }
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        AuditReader::open(dir.path().join("missing.db")).await,
        Err(Error::MissingDatabase(_))
    ));
}

async fn query_filters(path: &str) {
    let log = AuditLog::open(path).await.unwrap();
    for step in 0..6 {
        assert_eq!(log.record(row("s", step)).await, Recorded::Queued);
    }
    log.record(AuditRow::denied(
        "s",
        7,
        "lead",
        "run_bash",
        Decision::Deny,
        "bash_destructive",
        "no",
    ))
    .await;
    log.record(AuditRow::denied(
        "s",
        8,
        "lead",
        "web_fetch",
        Decision::Ask,
        "ask_rule",
        "ask first",
    ))
    .await;
    log.flush().await.unwrap();
    assert_eq!(log.written(), 8);
    let reader = AuditReader::open(path).await.unwrap();
    let fails = reader
        .query(&AuditQuery {
            status: Some(AuditStatus::Fail),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(fails.len(), 3);
    let preview = &fails[0].row.output_preview;
    assert_eq!(preview.chars().count(), OUTPUT_PREVIEW_CHARS);
    let tool0 = reader
        .query(&AuditQuery {
            tool_name: Some("tool0".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(tool0.iter().map(|r| r.row.step).collect::<Vec<_>>(), [0, 3]);
    let denied = reader
        .query(&AuditQuery {
            status: Some(AuditStatus::Denied),
            decision: Some(Decision::Deny),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(denied.len(), 1, "{path}");
    assert_eq!(denied[0].row.decision, Some(Decision::Deny));
    assert_eq!(
        denied[0].row.reason_code.as_deref(),
        Some("bash_destructive")
    );
    let asked = reader
        .query(&AuditQuery {
            decision: Some(Decision::Ask),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].row.tool_name, "web_fetch");
    let future = reader
        .query(&AuditQuery {
            since: Some(i64::MAX - 1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(future.is_empty());
    let limited = reader
        .query(&AuditQuery {
            limit: Some(2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        limited.iter().map(|r| r.row.step).collect::<Vec<_>>(),
        [0, 1]
    );
    let summary = reader.summary(&AuditQuery::default()).await.unwrap();
    let names: Vec<_> = summary
        .iter()
        .map(|s| (s.tool_name.as_str(), s.calls, s.ok, s.fail, s.denied))
        .collect();
    assert_eq!(
        names,
        [
            ("run_bash", 1, 0, 0, 1),
            ("tool0", 2, 1, 1, 0),
            ("tool1", 2, 1, 1, 0),
            ("tool2", 2, 1, 1, 0),
            ("web_fetch", 1, 0, 0, 1),
        ],
        "{path}"
    );
    reader.close().await;
    log.shutdown().await.unwrap();
}

#[tokio::test]
async fn special_characters_round_trip() {
    for t in targets("special_characters").await {
        let log = AuditLog::open(&t.url).await.unwrap();
        let mut r = row("s\tq", 1);
        r.output_preview = "tab\there\nnew\r\\back \\N quote' \"dq\" é 🦀 nul\0end".into();
        r.reason_code = Some("code\\N".into());
        log.record(r.clone()).await;
        log.shutdown().await.unwrap();
        let reader = AuditReader::open(&t.url).await.unwrap();
        let back = reader.query(&AuditQuery::default()).await.unwrap();
        let back = &back[0].row;
        // PostgreSQL text cannot hold NUL, so no backend stores it (the chain hashes what
        // both can read back).
        let expected = r.output_preview.replace('\0', "\u{fffd}");
        assert_eq!(back.output_preview, expected, "{}", t.kind);
        assert_eq!(back.session_id, "s\tq");
        assert_eq!(back.reason_code.as_deref(), Some("code\\N"));
        reader.close().await;
    }
}

#[tokio::test]
async fn old_seed_schema_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    // The seed's table exactly, written without any migration bookkeeping.
    let status = Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); \
             c.execute(\"CREATE TABLE agent_audit_log (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, step INTEGER NOT NULL, tool_name TEXT NOT NULL, status TEXT NOT NULL, elapsed_ms INTEGER NOT NULL, output_preview TEXT NOT NULL, agent_name TEXT NOT NULL, created_at TEXT DEFAULT CURRENT_TIMESTAMP)\"); \
             c.execute(\"INSERT INTO agent_audit_log (session_id, step, tool_name, status, elapsed_ms, output_preview, agent_name, created_at) VALUES ('old', 1, 'read_file', 'OK', 3, 'x', 'lead', '2025-01-02 03:04:05')\"); \
             c.commit()",
        )
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    let log = AuditLog::open(&path).await.unwrap();
    log.record(row("new", 2)).await;
    log.shutdown().await.unwrap();
    let reader = AuditReader::open(&path).await.unwrap();
    let rows = reader.query(&AuditQuery::default()).await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].row.session_id, "old");
    assert_eq!(
        rows[0].row.ts, 1_735_787_045_000,
        "ts backfilled from created_at"
    );
    assert_eq!(rows[0].row.decision, None);
    assert_eq!(rows[1].row.decision, Some(Decision::Allow));
}

const CRASH_ENV: &str = "PERM_HOOKS_CRASH_DB";

/// Not a test on its own: the child half of `committed_batches_survive_sigkill`.
#[tokio::test]
#[ignore = "child process of `committed_batches_survive_sigkill`, which runs it"]
async fn crash_child() {
    let path = std::env::var(CRASH_ENV).unwrap_or_else(|_| {
        panic!("{CRASH_ENV} is not set: this is the child half of another test")
    });
    let log = AuditLog::open(&path).await.unwrap();
    for step in 0..500 {
        log.record(row("crash", step)).await;
    }
    log.flush().await.unwrap();
    println!("FLUSHED 500");
    let mut step = 500;
    loop {
        log.record(row("crash", step)).await;
        step += 1;
        if step % 100 == 0 {
            tokio::task::yield_now().await;
        }
    }
}

#[test]
fn committed_batches_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "--ignored",
            "audit::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("child ended early").unwrap();
        if line.contains("FLUSHED 500") {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    child.kill().unwrap(); // SIGKILL: no shutdown, no destructors
    child.wait().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let n = rt.block_on(async {
        let reader = AuditReader::open(&path).await.unwrap();
        reader.query(&AuditQuery::default()).await.unwrap().len()
    });
    assert!(n >= 500, "only {n} rows survived");
}

/// Runs `sql` on a target with a connection of its own (as an attacker with write access).
async fn tamper(t: &crate::backends::Target, sql: &str) {
    if t.is_postgres() {
        let pool = sqlx::PgPool::connect(&t.url).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::SqlitePool::connect(&t.url).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_holds_across_concurrent_writers_and_breaks_on_tampering() {
    for t in targets("chain").await {
        // Two logs (two processes' worth of writers) appending at once.
        let a = AuditLog::open_keyed(
            &t.url,
            AuditOptions {
                max_batch: 7,
                ..Default::default()
            },
            test_key(),
        )
        .await
        .unwrap();
        let b = AuditLog::open_keyed(
            &t.url,
            AuditOptions {
                max_batch: 5,
                ..Default::default()
            },
            test_key(),
        )
        .await
        .unwrap();
        let (la, lb) = (a.clone(), b.clone());
        let ta = tokio::spawn(async move {
            for step in 0..60 {
                la.record(row("a", step)).await;
            }
        });
        let tb = tokio::spawn(async move {
            for step in 0..60 {
                lb.record(row("b", step)).await;
            }
        });
        ta.await.unwrap();
        tb.await.unwrap();
        a.shutdown().await.unwrap();
        b.shutdown().await.unwrap();
        let reader = AuditReader::open(&t.url).await.unwrap();
        let report = reader.verify_with(&test_key()).await.unwrap();
        assert!(report.is_intact(), "{}: {report:?}", t.kind);
        assert_eq!(report.chained, 120, "{}", t.kind);
        reader.close().await;

        // Rewriting a row's decision is found.
        tamper(
            &t,
            "UPDATE agent_audit_log SET output_preview = 'all fine' WHERE id = 10",
        )
        .await;
        let reader = AuditReader::open(&t.url).await.unwrap();
        let report = reader.verify_with(&test_key()).await.unwrap();
        assert!(!report.is_intact(), "{}", t.kind);
        assert!(
            report.problems[0].contains("row 10 was changed"),
            "{report:?}"
        );
        reader.close().await;

        // So is deleting one.
        tamper(&t, "DELETE FROM agent_audit_log WHERE id = 30").await;
        let reader = AuditReader::open(&t.url).await.unwrap();
        let report = reader.verify_with(&test_key()).await.unwrap();
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.contains("row 31 does not follow")),
            "{}: {report:?}",
            t.kind
        );
        reader.close().await;
    }
}

/// The key the chain tests link under (the user's own key is never touched by tests).
fn test_key() -> ChainKey {
    ChainKey::from_bytes(&[42; 32]).unwrap()
}

/// Every row of `t`, oldest first.
async fn all_rows(t: &crate::backends::Target) -> Vec<AuditRecord> {
    let reader = AuditReader::open(&t.url).await.unwrap();
    let rows = reader.query(&AuditQuery::default()).await.unwrap();
    reader.close().await;
    rows
}

/// Sets the links of `rows` (by id) as an attacker with write access to the database would.
async fn set_links(t: &crate::backends::Target, links: &[(i64, String, String, Option<String>)]) {
    let mut sql = String::new();
    for (id, prev, hash, key) in links {
        let key = key.as_ref().map_or("NULL".to_owned(), |k| format!("'{k}'"));
        sql.push_str(&format!(
            "UPDATE agent_audit_log SET prev_hash = '{prev}', row_hash = '{hash}', \
             chain_key = {key} WHERE id = {id};"
        ));
    }
    tamper(t, &sql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_with_recomputed_links_fails_verify_without_the_key() {
    for t in targets("keyed_chain").await {
        let log = AuditLog::open_keyed(&t.url, AuditOptions::default(), test_key())
            .await
            .unwrap();
        for step in 0..20 {
            log.record(row("s", step)).await;
        }
        log.shutdown().await.unwrap();
        let reader = AuditReader::open(&t.url).await.unwrap();
        let report = reader.verify_with(&test_key()).await.unwrap();
        assert!(report.is_intact(), "{}: {report:?}", t.kind);
        assert_eq!(report.chained, 20, "{}", t.kind);
        reader.close().await;

        // The attacker rewrites row 5's output and recomputes every link from there: first
        // the old unkeyed way, then keyed under a key of their own but claiming ours.
        tamper(
            &t,
            "UPDATE agent_audit_log SET output_preview = 'all fine' WHERE id = 5",
        )
        .await;
        let rows = all_rows(&t).await;
        let attacker = ChainKey::from_bytes(&[1; 32]).unwrap();
        for keyed in [false, true] {
            let mut prev = String::new();
            let mut links = Vec::new();
            for r in &rows {
                let (hash, key) = if keyed {
                    (
                        attacker.link(&prev, &r.row),
                        Some(test_key().id().to_owned()),
                    )
                } else {
                    (chain_hash(&prev, &r.row), None)
                };
                links.push((r.id, std::mem::replace(&mut prev, hash.clone()), hash, key));
            }
            set_links(&t, &links).await;
            let reader = AuditReader::open(&t.url).await.unwrap();
            let report = reader.verify_with(&test_key()).await.unwrap();
            reader.close().await;
            assert!(!report.is_intact(), "{} keyed={keyed}: {report:?}", t.kind);
            assert_eq!(report.chained, 0, "{} keyed={keyed}: {report:?}", t.kind);
            let expect = if keyed {
                "row 1 was changed"
            } else {
                "row 1 has no keyed link"
            };
            assert!(
                report.problems[0].contains(expect),
                "{} keyed={keyed}: {report:?}",
                t.kind
            );
        }

        // A key of another id is named as such, not as a change.
        let reader = AuditReader::open(&t.url).await.unwrap();
        let report = reader.verify_with(&attacker).await.unwrap();
        reader.close().await;
        assert_eq!(report.foreign, 20, "{}: {report:?}", t.kind);
        assert!(report.problems[0].contains("another key"), "{report:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_linked_before_the_key_is_relinked_only_if_its_chain_holds() {
    for t in targets("legacy_chain").await {
        let log = AuditLog::open_keyed(&t.url, AuditOptions::default(), test_key())
            .await
            .unwrap();
        for step in 0..10 {
            log.record(row("old", step)).await;
        }
        log.shutdown().await.unwrap();
        // Make it what the previous release wrote: plain SHA-256 links, no key id.
        let legacy = |rows: &[AuditRecord]| {
            let mut prev = String::new();
            rows.iter()
                .map(|r| {
                    let hash = chain_hash(&prev, &r.row);
                    (r.id, std::mem::replace(&mut prev, hash.clone()), hash, None)
                })
                .collect::<Vec<_>>()
        };
        let rows = all_rows(&t).await;
        set_links(&t, &legacy(&rows)).await;
        let reader = AuditReader::open(&t.url).await.unwrap();
        let report = reader.verify_with(&test_key()).await.unwrap();
        reader.close().await;
        assert_eq!(report.unkeyed, 10, "{}: {report:?}", t.kind);
        assert!(!report.is_intact());

        // The first writer re-links the intact unkeyed chain under the key, then appends.
        let log = AuditLog::open_keyed(&t.url, AuditOptions::default(), test_key())
            .await
            .unwrap();
        log.record(row("new", 0)).await;
        log.shutdown().await.unwrap();
        let reader = AuditReader::open(&t.url).await.unwrap();
        let report = reader.verify_with(&test_key()).await.unwrap();
        reader.close().await;
        assert!(report.is_intact(), "{}: {report:?}", t.kind);
        assert_eq!(report.chained, 11, "{}", t.kind);

        // An unkeyed chain that does not check is not laundered: its rows stay unkeyed and
        // verify keeps naming them.
        let mut rows = all_rows(&t).await;
        rows.truncate(10);
        set_links(&t, &legacy(&rows)).await;
        tamper(&t, "DELETE FROM agent_audit_log WHERE id = 11").await;
        tamper(
            &t,
            "UPDATE agent_audit_log SET output_preview = 'all fine' WHERE id = 3",
        )
        .await;
        let log = AuditLog::open_keyed(&t.url, AuditOptions::default(), test_key())
            .await
            .unwrap();
        log.shutdown().await.unwrap();
        let reader = AuditReader::open(&t.url).await.unwrap();
        let report = reader.verify_with(&test_key()).await.unwrap();
        reader.close().await;
        assert_eq!(report.unkeyed, 10, "{}: {report:?}", t.kind);
        assert_eq!(report.chained, 0, "{}: {report:?}", t.kind);
    }
}

#[tokio::test]
async fn a_database_from_before_the_index_change_opens_and_loses_the_old_indexes() {
    for t in targets("old_indexes").await {
        AuditLog::open_keyed(&t.url, AuditOptions::default(), test_key())
            .await
            .unwrap()
            .shutdown()
            .await
            .unwrap();
        // Back to what migration 0006 left.
        let (table, version) = ("_sqlx_migrations", 7);
        tamper(
            &t,
            &format!(
                "DELETE FROM {table} WHERE version = {version}; \
                 DROP INDEX agent_audit_log_ref; \
                 CREATE INDEX agent_audit_log_tool ON agent_audit_log (tool_name, id); \
                 CREATE INDEX agent_audit_log_call ON agent_audit_log (session_id, call_id); \
                 CREATE INDEX agent_audit_log_ref ON agent_audit_log (ref_code);"
            ),
        )
        .await;
        let log = AuditLog::open_keyed(&t.url, AuditOptions::default(), test_key())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", t.kind));
        log.record(row("s", 1)).await;
        log.shutdown().await.unwrap();
        let reader = AuditReader::open(&t.url).await.unwrap();
        assert!(reader.verify_with(&test_key()).await.unwrap().is_intact());
        reader.close().await;
    }
}

#[tokio::test]
async fn a_database_with_a_planted_trigger_or_view_is_refused() {
    for t in targets("planted").await {
        AuditLog::open(&t.url)
            .await
            .unwrap()
            .shutdown()
            .await
            .unwrap();
        let plant = if t.is_postgres() {
            "CREATE VIEW agent_audit_view AS SELECT * FROM agent_audit_log"
        } else {
            "CREATE TRIGGER keep_going BEFORE INSERT ON agent_guard_cancellations \
             BEGIN SELECT RAISE(IGNORE); END"
        };
        tamper(&t, plant).await;
        for result in [
            AuditLog::open(&t.url).await.map(|_| ()),
            AuditReader::open(&t.url).await.map(|_| ()),
            KillSwitch::open(&t.url).await.map(|_| ()),
            Ledger::open(&t.url).await.map(|_| ()),
        ] {
            let err = result.unwrap_err();
            assert!(
                matches!(err, Error::ForeignSchema { .. }),
                "{}: {err}",
                t.kind
            );
        }
    }
}

#[tokio::test]
async fn a_changed_column_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db").display().to_string();
    AuditLog::open(&path)
        .await
        .unwrap()
        .shutdown()
        .await
        .unwrap();
    let pool = sqlx::SqlitePool::connect(&path).await.unwrap();
    sqlx::raw_sql("ALTER TABLE agent_audit_log ADD COLUMN extra TEXT")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let err = AuditReader::open(&path).await.unwrap_err();
    assert!(err.to_string().contains("was changed"), "{err}");
}

#[tokio::test]
async fn a_new_database_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/agent-guard/audit.db");
    let log = AuditLog::open(&path).await.unwrap();
    log.record(row("s", 1)).await;
    log.flush().await.unwrap();
    for file in std::fs::read_dir(path.parent().unwrap()).unwrap().flatten() {
        let mode = file.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.path().display());
    }
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(mode(&dir.path().join("state")), 0o700);
    log.shutdown().await.unwrap();
}

/// A process about to exit commits its rows without closing the database (closing would make
/// it checkpoint the write-ahead log, with `fsync`s, on every hook call), and checkpoints the
/// log, emptying it, only once it has grown past 256 KiB (every later opener replays it).
#[tokio::test]
async fn flush_for_exit_commits_and_trims_only_a_grown_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let wal = dir.path().join("audit.db-wal");
    let log = AuditLog::open(path.to_str().unwrap()).await.unwrap();
    let count = |session: &'static str| {
        let path = path.clone();
        async move {
            let reader = AuditReader::open(&path).await.unwrap();
            let rows = reader
                .query(&AuditQuery {
                    session_id: Some(session.into()),
                    ..Default::default()
                })
                .await
                .unwrap();
            rows.len()
        }
    };
    for step in 0..3 {
        assert_eq!(log.record(row("small", step)).await, Recorded::Queued);
    }
    log.flush_for_exit().await.unwrap();
    let small = std::fs::metadata(&wal).unwrap().len();
    assert!(
        small > 0 && small <= 256 * 1024,
        "the log was checkpointed early: {small}"
    );
    assert_eq!(count("small").await, 3, "committed rows are readable");
    for step in 0..2000 {
        assert_eq!(log.record(row("big", step)).await, Recorded::Queued);
    }
    log.flush().await.unwrap();
    assert!(std::fs::metadata(&wal).unwrap().len() > 256 * 1024);
    log.flush_for_exit().await.unwrap();
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        0,
        "the grown log was checkpointed and emptied"
    );
    assert_eq!(count("big").await, 2000);
    assert_eq!(log.dropped(), 0);
}
