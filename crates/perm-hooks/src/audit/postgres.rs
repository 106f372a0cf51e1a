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

/// A batch is one `COPY ... FROM STDIN` (text format): no bind limit to chunk around, no
/// per-row statement work on the server, and atomic like any single statement.
const COPY_IN: &str = "COPY agent_audit_log (session_id, step, tool_name, status, elapsed_ms, \
     output_preview, agent_name, decision, reason_code, ts) FROM STDIN";

/// Appends `value` as one COPY text field. PostgreSQL text cannot hold NUL, which a tool's
/// output may contain: it becomes U+FFFD rather than failing the whole batch.
fn push_field(buf: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => buf.push_str("\\\\"),
            '\n' => buf.push_str("\\n"),
            '\r' => buf.push_str("\\r"),
            '\t' => buf.push_str("\\t"),
            '\0' => buf.push('\u{fffd}'),
            c => buf.push(c),
        }
    }
}

fn push_opt(buf: &mut String, value: Option<&str>) {
    match value {
        Some(v) => push_field(buf, v),
        None => buf.push_str("\\N"),
    }
}

/// The COPY text of `rows`: tab-separated fields, one line per row.
fn copy_text(rows: &[AuditRow]) -> String {
    use std::fmt::Write as _;
    let mut buf = String::with_capacity(rows.len() * 160);
    for row in rows {
        push_field(&mut buf, &row.session_id);
        let _ = write!(buf, "\t{}\t", row.step);
        push_field(&mut buf, &row.tool_name);
        buf.push('\t');
        buf.push_str(row.status.as_str());
        let _ = write!(
            buf,
            "\t{}\t",
            i64::try_from(row.elapsed_ms).unwrap_or(i64::MAX)
        );
        push_field(&mut buf, &row.output_preview);
        buf.push('\t');
        push_field(&mut buf, &row.agent_name);
        buf.push('\t');
        push_opt(&mut buf, row.decision.map(Decision::as_str));
        buf.push('\t');
        push_opt(&mut buf, row.reason_code.as_deref());
        let _ = writeln!(buf, "\t{}", row.ts);
    }
    buf
}

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
    if access != Access::Read {
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

/// `timeout` bounds the whole batch on the client side too: a server that stopped answering
/// (a network partition sends no reset) must not stall the writer, and `flush`, forever. A
/// timed-out batch counts as a transient failure and is retried (at least once delivery).
pub(super) async fn write_batch(
    pool: &PgPool,
    rows: &[AuditRow],
    timeout: Duration,
) -> Result<(), sqlx::Error> {
    let text = copy_text(rows);
    let copy = async {
        let mut conn = pool.acquire().await?;
        let mut copy = conn.copy_in_raw(COPY_IN).await?;
        copy.send(text.as_bytes()).await?;
        copy.finish().await.map(|_| ())
    };
    match tokio::time::timeout(timeout.max(Duration::from_secs(1)), copy).await {
        Ok(result) => result,
        Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within {timeout:?}"),
        ))),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AuditStatus;

    #[test]
    fn copy_text_escapes_every_special_character() {
        let row = AuditRow {
            session_id: "s\t1".into(),
            step: 3,
            tool_name: "run_bash".into(),
            status: AuditStatus::Denied,
            elapsed_ms: 7,
            output_preview: "a\\b\nc\rd\0e".into(),
            agent_name: "lead".into(),
            decision: Some(Decision::Deny),
            reason_code: None,
            ts: 42,
        };
        assert_eq!(
            copy_text(&[row]),
            "s\\t1\t3\trun_bash\tDENIED\t7\ta\\\\b\\nc\\rd\u{fffd}e\tlead\tdeny\t\\N\t42\n"
        );
    }
}
