//! The audit log under faults: concurrent processes, locks, corruption, a database that is
//! down or restarts. Every test runs against SQLite and, when available, PostgreSQL.

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use perm_hooks::*;
use sqlx::Connection;

use crate::backends::{PrivateServer, pg_url, targets};

fn row(session: &str, step: u32) -> AuditRow {
    AuditRow::tool_call(&PostToolUseContext {
        session_id: session.into(),
        step,
        agent_name: "lead".into(),
        tool_name: "read_file".into(),
        output: "x".repeat(50),
        ..Default::default()
    })
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Re-runs this test binary as a child running only `test` (a `*_child` function below).
pub(crate) fn spawn_child(test: &str, envs: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    // Child halves are `#[ignore]`d so a plain run never counts them as passed tests.
    cmd.args([
        "--exact",
        "--ignored",
        test,
        "--nocapture",
        "--test-threads=1",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

const WRITER_ENV: &str = "PERM_HOOKS_WRITER_DB";
const WRITER_TAG: &str = "PERM_HOOKS_WRITER_TAG";
const ROWS_PER_WRITER: u32 = 3000;

/// Not a test on its own: one of the two writers of `two_processes_write_at_once_lose_nothing`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of `two_processes_write_at_once_lose_nothing`, which runs it"]
async fn writer_child() {
    let (Ok(target), Ok(tag)) = (std::env::var(WRITER_ENV), std::env::var(WRITER_TAG)) else {
        panic!("{WRITER_ENV} and {WRITER_TAG} must be set: this is the child half of another test");
    };
    let log = AuditLog::open_with(
        &target,
        AuditOptions {
            max_batch: 100,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    for step in 0..ROWS_PER_WRITER {
        assert_eq!(log.record(row(&tag, step)).await, Recorded::Queued);
        if step % 500 == 0 {
            // Let the other process interleave its batches with ours.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    log.shutdown().await.unwrap();
    println!("WROTE {}", log.written());
}

#[test]
fn two_processes_write_at_once_lose_nothing() {
    let rt = runtime();
    for t in rt.block_on(targets("two_processes")) {
        let children: Vec<Child> = ["p1", "p2"]
            .iter()
            .map(|tag| {
                spawn_child(
                    "faults::writer_child",
                    &[(WRITER_ENV, &t.url), (WRITER_TAG, tag)],
                )
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{} writer failed", t.kind);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.contains(&format!("WROTE {ROWS_PER_WRITER}")),
                "{}: {stdout}",
                t.kind
            );
        }
        rt.block_on(async {
            let reader = AuditReader::open(&t.url).await.unwrap();
            for tag in ["p1", "p2"] {
                let rows = reader
                    .query(&AuditQuery {
                        session_id: Some(tag.into()),
                        ..Default::default()
                    })
                    .await
                    .unwrap();
                let steps: BTreeSet<u32> = rows.iter().map(|r| r.row.step).collect();
                assert_eq!(rows.len() as u32, ROWS_PER_WRITER, "{} {tag}", t.kind);
                assert_eq!(steps.len() as u32, ROWS_PER_WRITER, "{} {tag}", t.kind);
            }
            reader.close().await;
        });
    }
}

/// Another connection holds the write lock past the write timeout: the acknowledged rows are
/// lost, `written()` does not count them, and every later flush says so.
#[tokio::test]
async fn a_lock_held_past_the_timeout_is_reported_not_hidden() {
    for t in targets("lock_held").await {
        let options = AuditOptions {
            write_timeout: Duration::from_millis(300),
            ..Default::default()
        };
        let log = AuditLog::open_with(&t.url, options).await.unwrap();
        log.record(row("warm", 0)).await;
        log.flush().await.unwrap();
        assert_eq!(log.written(), 1);

        let release = hold_write_lock(&t.url, t.is_postgres()).await;
        for step in 0..10 {
            assert_eq!(log.record(row("s", step)).await, Recorded::Queued);
        }
        let err = log.flush().await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Incomplete {
                    lost: 10,
                    refused: 0,
                    ..
                }
            ),
            "{}: {err}",
            t.kind
        );
        let message = err.to_string();
        assert!(
            message.contains("10 acknowledged row(s) not written"),
            "{message}"
        );
        assert_eq!(log.written(), 1, "{}: only committed rows count", t.kind);
        assert_eq!(log.lost(), 10);
        assert_eq!(log.dropped(), 10);

        release.send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        log.record(row("after", 0)).await;
        let err = log.shutdown().await.unwrap_err();
        assert!(
            matches!(err, Error::Incomplete { lost: 10, .. }),
            "the loss stays reported: {err}"
        );
        assert_eq!(log.written(), 2, "{}", t.kind);
        let reader = AuditReader::open(&t.url).await.unwrap();
        assert_eq!(reader.query(&AuditQuery::default()).await.unwrap().len(), 2);
        reader.close().await;
    }
}

/// Takes the audit table's write lock on another connection until the sender is used.
async fn hold_write_lock(url: &str, postgres: bool) -> tokio::sync::oneshot::Sender<()> {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let (locked, is_locked) = tokio::sync::oneshot::channel::<()>();
    let url = url.to_owned();
    tokio::spawn(async move {
        if postgres {
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            let mut tx = conn.begin().await.unwrap();
            sqlx::query("LOCK TABLE agent_audit_log IN ACCESS EXCLUSIVE MODE")
                .execute(&mut *tx)
                .await
                .unwrap();
            locked.send(()).unwrap();
            let _ = released.await;
            tx.rollback().await.unwrap();
        } else {
            let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{url}"))
                .await
                .unwrap();
            sqlx::query("BEGIN EXCLUSIVE")
                .execute(&mut conn)
                .await
                .unwrap();
            locked.send(()).unwrap();
            let _ = released.await;
            sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
        }
    });
    is_locked.await.unwrap();
    release
}

#[tokio::test]
async fn a_corrupt_sqlite_file_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, vec![0x5a_u8; 8192]).unwrap();
    let err = AuditLog::open(&garbage).await.unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("is corrupt"), "{err}");

    // A real log whose table pages are then overwritten: the header is intact, the b-tree not.
    let damaged = dir.path().join("damaged.db");
    let log = AuditLog::open(&damaged).await.unwrap();
    for step in 0..2000 {
        log.record(row("s", step)).await;
    }
    log.shutdown().await.unwrap();
    let mut bytes = std::fs::read(&damaged).unwrap();
    assert!(bytes.len() > 16 * 4096, "the log spans many pages");
    for b in &mut bytes[4096 * 3..4096 * 12] {
        *b = 0xa5;
    }
    std::fs::write(&damaged, bytes).unwrap();
    let err = AuditLog::open(&damaged).await.unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    // A guard's per-call open skips the whole-file check (its cost grows with the log);
    // `audit --verify` makes it.
    let reader = perm_hooks::AuditReader::open(&damaged).await.unwrap();
    let key = perm_hooks::ChainKey::from_bytes(&[7; 32]).unwrap();
    let err = reader.verify_with(&key).await.unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
}

#[tokio::test]
async fn postgres_down_at_start_is_one_clear_error_without_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "postgres://agent:s3cret@localhost/audit?host={}",
        dir.path().display()
    );
    let err = AuditLog::open(&url).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Unreachable { .. }), "{message}");
    assert!(message.starts_with("cannot reach audit database `postgres://agent:***@"));
    assert!(!message.contains("s3cret"), "{message}");
    assert!(KillSwitch::open(&url).await.is_err());
}

#[test]
fn target_parsing_picks_the_backend_by_url() {
    assert!(AuditTarget::parse("postgres://h/db").is_postgres());
    assert!(AuditTarget::parse("POSTGRESQL://h/db").is_postgres());
    assert!(!AuditTarget::parse("postgres.db").is_postgres());
    assert!(!AuditTarget::parse("./postgres://x").is_postgres());
    let base = std::path::Path::new("/proj");
    assert_eq!(
        AuditTarget::parse("a/audit.db").resolve(base),
        AuditTarget::Sqlite("/proj/a/audit.db".into())
    );
    assert_eq!(
        AuditTarget::parse("postgres://h/db").resolve(base),
        AuditTarget::Postgres("postgres://h/db".into())
    );
    for spec in ["postgres://h/db", "rel/audit.db"] {
        let target = AuditTarget::parse(spec);
        assert_eq!(
            AuditTarget::parse(&target),
            target,
            "opening a target re-parses it"
        );
    }
    assert_eq!(
        AuditTarget::parse("postgresql://u:pw@h:5432/db?sslmode=disable").to_string(),
        "postgresql://u:***@h:5432/db?sslmode=disable"
    );
}

/// The server is killed (as a crash would) with rows in flight and restarted: every row
/// `record` acknowledged is in the database, and shutdown reports success.
#[test]
fn a_database_restart_mid_run_loses_no_acknowledged_row() {
    if pg_url("a_database_restart_mid_run_loses_no_acknowledged_row").is_none() {
        return;
    }
    let server = PrivateServer::start();
    let rt = runtime();
    let log = rt
        .block_on(AuditLog::open_with(
            &server.url,
            AuditOptions {
                queue_capacity: 100_000,
                write_timeout: Duration::from_secs(30),
                ..Default::default()
            },
        ))
        .unwrap();
    let guard = rt.block_on(KillSwitch::open(&server.url)).unwrap();
    let victim = guard.watch("r");
    let mut acked = BTreeSet::new();
    let mut step = 0u32;
    let mut record_n = |n: u32, acked: &mut BTreeSet<u32>| {
        for _ in 0..n {
            if rt.block_on(log.record(row("r", step))) == Recorded::Queued {
                acked.insert(step);
            }
            step += 1;
        }
    };
    record_n(500, &mut acked);
    rt.block_on(log.flush()).unwrap();
    record_n(200, &mut acked);
    server.kill();
    record_n(500, &mut acked);
    std::thread::sleep(Duration::from_millis(300));
    record_n(300, &mut acked);
    server.restart();
    record_n(500, &mut acked);
    rt.block_on(log.shutdown()).unwrap();
    assert_eq!(acked.len(), 2000, "the queue had room for every row");
    // The kill switch of a guard that lived through the restart still hears cancellations.
    let issuer = rt.block_on(KillSwitch::open(&server.url)).unwrap();
    rt.block_on(issuer.cancel(Some("r"))).unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(1), victim.cancelled())
            .await
            .expect("a cancellation after the restart was not seen within 1 s")
    });
    assert!(guard.is_cancelled("r"));
    assert_eq!(log.lost(), 0);
    let stored: BTreeSet<u32> = rt.block_on(async {
        let reader = AuditReader::open(&server.url).await.unwrap();
        let rows = reader.query(&AuditQuery::default()).await.unwrap();
        reader.close().await;
        rows.iter().map(|r| r.row.step).collect()
    });
    let missing: Vec<_> = acked.difference(&stored).collect();
    assert!(missing.is_empty(), "acknowledged rows missing: {missing:?}");
}
