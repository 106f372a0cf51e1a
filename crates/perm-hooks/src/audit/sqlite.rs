//! The SQLite backend: the embedded default (one file, WAL).

use std::path::Path;
use std::time::Duration;

use perm_rules::Decision;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite};

use super::{Access, AuditOptions, AuditRow, INSERT_COLUMNS};
use crate::error::Error;

pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// Rows per INSERT statement; 10 binds each (5000) stays far below SQLite's variable limit.
const ROWS_PER_STATEMENT: usize = 500;

/// SQLite's result codes for a file that is not a database or is damaged.
const SQLITE_CORRUPT: &str = "11";
const SQLITE_NOTADB: &str = "26";

fn is_corruption(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db)
        if matches!(db.code().as_deref(), Some(SQLITE_CORRUPT | SQLITE_NOTADB)))
}

fn open_err(name: &str) -> impl FnOnce(sqlx::Error) -> Error + '_ {
    move |source| {
        if is_corruption(&source) {
            Error::Corrupt {
                target: name.to_owned(),
                detail: source.to_string(),
            }
        } else {
            Error::Database {
                path: name.to_owned(),
                source,
            }
        }
    }
}

pub(super) async fn open(
    path: &Path,
    name: &str,
    access: Access,
    options: &AuditOptions,
    max_connections: u32,
) -> Result<SqlitePool, Error> {
    let mut connect = SqliteConnectOptions::new()
        .filename(path)
        .busy_timeout(options.write_timeout);
    match access {
        Access::Read => {
            if !path.is_file() {
                return Err(Error::MissingDatabase(name.to_owned()));
            }
            connect = connect.read_only(true);
        }
        Access::Write | Access::Control => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| Error::Database {
                    path: name.to_owned(),
                    source: sqlx::Error::Io(e),
                })?;
            }
            connect = connect
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                // WAL + NORMAL: a committed batch survives a process crash; only power loss
                // can lose the last transactions.
                .synchronous(SqliteSynchronous::Normal);
        }
    }
    let pool = connect_retrying(connect, max_connections)
        .await
        .map_err(open_err(name))?;
    if access != Access::Control {
        quick_check(&pool, name).await?;
    }
    if access != Access::Read {
        migrate(&pool, name).await?;
    }
    Ok(pool)
}

/// Connects, retrying while another process holds the file's lock. Switching a new file to WAL
/// needs an exclusive lock, and SQLite answers `SQLITE_BUSY` at once, without its busy handler,
/// when a second process is opening the same new file (two hooks of one agent's parallel tool
/// calls, on first use): the loser waits and finds the file already in WAL mode.
async fn connect_retrying(
    connect: SqliteConnectOptions,
    max_connections: u32,
) -> Result<SqlitePool, sqlx::Error> {
    let mut attempt: u32 = 0;
    loop {
        match SqlitePoolOptions::new()
            .max_connections(max_connections)
            .connect_with(connect.clone())
            .await
        {
            Err(e) if is_busy(&e) && attempt < BUSY_RETRIES => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(10 << attempt)).await;
            }
            other => return other,
        }
    }
}

/// Tries after a busy open: 20 + 40 + ... + 640 ms, about 1.3 s in all.
const BUSY_RETRIES: u32 = 6;

/// `SQLITE_BUSY` or `SQLITE_LOCKED`, in any extended form (the primary code is the low byte).
fn is_busy(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    db.code()
        .and_then(|c| c.parse::<i32>().ok())
        .is_some_and(|c| matches!(c & 0xff, 5 | 6))
}

/// `PRAGMA quick_check`: the b-tree structure, without the (slow) index cross-check.
async fn quick_check(pool: &SqlitePool, name: &str) -> Result<(), Error> {
    let report: Vec<String> = sqlx::query_scalar("PRAGMA quick_check")
        .fetch_all(pool)
        .await
        .map_err(open_err(name))?;
    if report.len() == 1 && report.first().is_some_and(|r| r == "ok") {
        return Ok(());
    }
    pool.close().await;
    let mut detail: Vec<&str> = report.iter().map(String::as_str).take(3).collect();
    if report.len() > 3 {
        detail.push("...");
    }
    Err(Error::Corrupt {
        target: name.to_owned(),
        detail: detail.join("; "),
    })
}

/// SQLite's migrator takes no lock, so two processes opening a new file at once can both try
/// the same migration; the loser retries and then finds it applied.
async fn migrate(pool: &SqlitePool, name: &str) -> Result<(), Error> {
    let mut attempt = 0;
    loop {
        match MIGRATOR.run(pool).await {
            Ok(()) => return Ok(()),
            Err(_) if attempt < 3 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(50 * attempt)).await;
            }
            Err(source) => {
                return Err(Error::Migrate {
                    path: name.to_owned(),
                    source,
                });
            }
        }
    }
}

pub(super) async fn write_batch(pool: &SqlitePool, rows: &[AuditRow]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut qb: QueryBuilder<Sqlite> = QueryBuilder::new(INSERT_COLUMNS);
        qb.push(' ');
        qb.push_values(chunk, |mut b, row| {
            b.push_bind(row.session_id.clone())
                .push_bind(i64::from(row.step))
                .push_bind(row.tool_name.clone())
                .push_bind(row.status.as_str())
                .push_bind(i64::try_from(row.elapsed_ms).unwrap_or(i64::MAX))
                .push_bind(row.output_preview.clone())
                .push_bind(row.agent_name.clone())
                .push_bind(row.decision.map(Decision::as_str))
                .push_bind(row.reason_code.clone())
                .push_bind(row.ts);
        });
        qb.build().persistent(true).execute(&mut *tx).await?;
    }
    tx.commit().await
}

pub(super) async fn insert_cancel(
    pool: &SqlitePool,
    session: Option<&str>,
    reason: &str,
    ts: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO agent_guard_cancellations (session_id, reason, ts) VALUES (?, ?, ?)")
        .bind(session)
        .bind(reason)
        .bind(ts)
        .execute(pool)
        .await
        .map(|_| ())
}

pub(super) async fn cancellations_after(
    pool: &SqlitePool,
    id: i64,
) -> Result<Vec<(i64, Option<String>)>, sqlx::Error> {
    sqlx::query_as("SELECT id, session_id FROM agent_guard_cancellations WHERE id > ? ORDER BY id")
        .bind(id)
        .fetch_all(pool)
        .await
}

pub(super) async fn is_cancelled(pool: &SqlitePool, session: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM agent_guard_cancellations \
         WHERE session_id IS NULL OR session_id = ?)",
    )
    .bind(session)
    .fetch_one(pool)
    .await
}
