//! The PostgreSQL backend: one log shared by a fleet of guards.

use std::str::FromStr;
use std::time::Duration;

use perm_rules::Decision;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::{Access, AuditOptions, AuditRow};
use crate::error::Error;

pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The channel `cancel` notifies and the kill switch listens on.
pub(super) const CANCEL_CHANNEL: &str = "agent_guard_cancel";

/// One statement per batch whatever its size: ten array parameters unnested into rows, so the
/// statement is prepared once and there is no bind limit to chunk around.
/// (The column list is [`super::INSERT_COLUMNS`]; a literal because sqlx only takes static SQL.)
const INSERT_UNNEST: &str = "INSERT INTO agent_audit_log (session_id, step, tool_name, status, \
     elapsed_ms, output_preview, agent_name, decision, reason_code, ts) \
     SELECT * FROM UNNEST($1::text[], $2::int8[], $3::text[], $4::text[], $5::int8[], \
     $6::text[], $7::text[], $8::text[], $9::text[], $10::int8[])";

pub(super) async fn open(
    url: &str,
    name: &str,
    access: Access,
    options: &AuditOptions,
    max_connections: u32,
) -> Result<PgPool, Error> {
    let lock_timeout = format!("{}ms", options.write_timeout.as_millis().max(1));
    let connect = PgConnectOptions::from_str(url)
        .map_err(|source| Error::Database {
            path: name.to_owned(),
            source,
        })?
        .application_name("agent-guard")
        // A writer stuck behind a table lock gives up (and reports) instead of hanging.
        .options([("lock_timeout", lock_timeout.as_str())]);
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        // The writer's own retry loop decides how long an outage may last.
        .acquire_timeout(options.write_timeout.min(Duration::from_secs(2)))
        .connect_with(connect)
        .await
        .map_err(|source| Error::Unreachable {
            target: name.to_owned(),
            source,
        })?;
    if access == Access::Write {
        // sqlx holds an advisory lock while migrating, so concurrent guards are safe.
        MIGRATOR.run(&pool).await.map_err(|source| Error::Migrate {
            path: name.to_owned(),
            source,
        })?;
    }
    Ok(pool)
}

/// Connection loss, server shutdown or restart, too many connections, serialization
/// conflicts: worth another try. A lock timeout or a constraint is not.
pub(super) fn is_transient(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08")
                || code.starts_with("57P")
                || matches!(code.as_ref(), "53300" | "40001" | "40P01")
        }),
        _ => false,
    }
}

pub(super) async fn write_batch(pool: &PgPool, rows: &[AuditRow]) -> Result<(), sqlx::Error> {
    let mut session = Vec::with_capacity(rows.len());
    let mut step = Vec::with_capacity(rows.len());
    let mut tool = Vec::with_capacity(rows.len());
    let mut status = Vec::with_capacity(rows.len());
    let mut elapsed = Vec::with_capacity(rows.len());
    let mut preview = Vec::with_capacity(rows.len());
    let mut agent = Vec::with_capacity(rows.len());
    let mut decision = Vec::with_capacity(rows.len());
    let mut reason = Vec::with_capacity(rows.len());
    let mut ts = Vec::with_capacity(rows.len());
    for row in rows {
        session.push(row.session_id.as_str());
        step.push(i64::from(row.step));
        tool.push(row.tool_name.as_str());
        status.push(row.status.as_str());
        elapsed.push(i64::try_from(row.elapsed_ms).unwrap_or(i64::MAX));
        preview.push(row.output_preview.as_str());
        agent.push(row.agent_name.as_str());
        decision.push(row.decision.map(Decision::as_str));
        reason.push(row.reason_code.as_deref());
        ts.push(row.ts);
    }
    sqlx::query(INSERT_UNNEST)
        .bind(session)
        .bind(step)
        .bind(tool)
        .bind(status)
        .bind(elapsed)
        .bind(preview)
        .bind(agent)
        .bind(decision)
        .bind(reason)
        .bind(ts)
        .execute(pool)
        .await
        .map(|_| ())
}

/// The row and the notification commit together, so a listener never wakes before the row
/// is visible.
pub(super) async fn insert_cancel(
    pool: &PgPool,
    session: Option<&str>,
    reason: &str,
    ts: i64,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "INSERT INTO agent_guard_cancellations (session_id, reason, ts) VALUES ($1, $2, $3)",
    )
    .bind(session)
    .bind(reason)
    .bind(ts)
    .execute(&mut *tx)
    .await?;
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CANCEL_CHANNEL)
        .bind(session.unwrap_or("*"))
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

pub(super) async fn cancellations_after(
    pool: &PgPool,
    id: i64,
) -> Result<Vec<(i64, Option<String>)>, sqlx::Error> {
    sqlx::query_as("SELECT id, session_id FROM agent_guard_cancellations WHERE id > $1 ORDER BY id")
        .bind(id)
        .fetch_all(pool)
        .await
}

pub(super) async fn is_cancelled(pool: &PgPool, session: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM agent_guard_cancellations \
         WHERE session_id IS NULL OR session_id = $1)",
    )
    .bind(session)
    .fetch_one(pool)
    .await
}
