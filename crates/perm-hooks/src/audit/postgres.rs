//! The PostgreSQL backend: one log shared by a fleet of guards.

use std::str::FromStr;
use std::time::Duration;

use perm_rules::Decision;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::{Access, AuditOptions, AuditRow, ChainKey, Resolver, chain};
use crate::error::Error;

pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The channel `cancel` notifies and the kill switch listens on.
pub(super) const CANCEL_CHANNEL: &str = "agent_guard_cancel";

/// A batch is one `COPY ... FROM STDIN` (text format): no bind limit to chunk around, no
/// per-row statement work on the server, and atomic like any single statement.
const COPY_IN: &str = "COPY agent_audit_log (session_id, step, tool_name, status, elapsed_ms, \
     output_preview, agent_name, decision, reason_code, ts, client, call_id, input, layer, \
     resolved_by, resolution, ref_code, prev_hash, row_hash, chain_key) FROM STDIN";

/// The advisory lock every writer holds while it reads the last link and appends, so the
/// chain never forks; released at commit. (An arbitrary constant: "agaudit" in ASCII.)
const CHAIN_LOCK: i64 = 0x0061_6761_7564_6974;

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

/// The COPY text of `rows` with their links: tab-separated fields, one line per row.
fn copy_text(rows: &[AuditRow], links: &[(String, String)], key_id: &str) -> String {
    use std::fmt::Write as _;
    let mut buf = String::with_capacity(rows.len() * 320);
    for (row, (prev, hash)) in rows.iter().zip(links) {
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
        let _ = write!(buf, "\t{}\t", row.ts);
        push_field(&mut buf, &row.client);
        buf.push('\t');
        push_field(&mut buf, &row.call_id);
        buf.push('\t');
        push_field(&mut buf, &row.input);
        buf.push('\t');
        push_opt(&mut buf, row.layer.as_deref());
        buf.push('\t');
        push_opt(&mut buf, row.resolved_by.map(Resolver::as_str));
        buf.push('\t');
        push_opt(&mut buf, row.resolution.as_deref());
        buf.push('\t');
        push_opt(&mut buf, row.ref_code.as_deref());
        buf.push('\t');
        push_field(&mut buf, prev);
        buf.push('\t');
        push_field(&mut buf, hash);
        buf.push('\t');
        push_field(&mut buf, key_id);
        buf.push('\n');
    }
    buf
}

/// Refuses a database whose audit objects carry anything our migrations did not make:
/// triggers, rewrite rules, views or row-level policies on the guard's tables.
async fn check_schema(pool: &PgPool, name: &str) -> Result<(), Error> {
    const FOREIGN: &str = "\
        SELECT 'trigger `' || t.tgname || '` on `' || c.relname || '`' FROM pg_trigger t \
          JOIN pg_class c ON c.oid = t.tgrelid \
         WHERE NOT t.tgisinternal AND c.relname LIKE 'agent\\_%' \
           AND c.relnamespace = current_schema()::regnamespace \
        UNION ALL \
        SELECT 'rule `' || rulename || '` on `' || tablename || '`' FROM pg_rules \
         WHERE tablename LIKE 'agent\\_%' AND schemaname = current_schema() \
        UNION ALL \
        SELECT 'view `' || viewname || '`' FROM pg_views \
         WHERE viewname LIKE 'agent\\_%' AND schemaname = current_schema() \
        UNION ALL \
        SELECT 'policy `' || policyname || '` on `' || tablename || '`' FROM pg_policies \
         WHERE tablename LIKE 'agent\\_%' AND schemaname = current_schema() \
        LIMIT 3";
    let found: Vec<String> =
        sqlx::query_scalar(FOREIGN)
            .fetch_all(pool)
            .await
            .map_err(|source| Error::Database {
                path: name.to_owned(),
                source,
            })?;
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::ForeignSchema {
        target: name.to_owned(),
        detail: format!("it has a {}", found.join(", a ")),
    })
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
    // Before a migration's UPDATE could fire a planted trigger, and after.
    check_schema(&pool, name).await?;
    // A reader may hold a role without CREATE (a fleet's auditors): it reads what is there.
    if access != Access::Read {
        // sqlx holds an advisory lock while migrating, so concurrent guards are safe.
        MIGRATOR.run(&pool).await.map_err(|source| Error::Migrate {
            path: name.to_owned(),
            source,
        })?;
        check_schema(&pool, name).await?;
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
    key: &ChainKey,
    timeout: Duration,
) -> Result<(), sqlx::Error> {
    let copy = async {
        let mut tx = pool.begin().await?;
        lock_chain(&mut tx).await?;
        let prev: Option<Option<String>> =
            sqlx::query_scalar("SELECT row_hash FROM agent_audit_log ORDER BY id DESC LIMIT 1")
                .fetch_optional(&mut *tx)
                .await?;
        let links = chain(key, &prev.flatten().unwrap_or_default(), rows);
        if let ([row], [(prev, hash)]) = (rows, links.as_slice()) {
            // One row (what a hook process writes): one INSERT is one round trip where COPY
            // takes three.
            insert_one(&mut tx, row, prev, hash, key.id()).await?;
        } else {
            let text = copy_text(rows, &links, key.id());
            let mut copy = (*tx).copy_in_raw(COPY_IN).await?;
            copy.send(text.as_bytes()).await?;
            copy.finish().await?;
        }
        tx.commit().await
    };
    match tokio::time::timeout(timeout.max(Duration::from_secs(1)), copy).await {
        Ok(result) => result,
        Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within {timeout:?}"),
        ))),
    }
}

async fn insert_one(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    row: &AuditRow,
    prev: &str,
    hash: &str,
    key_id: &str,
) -> Result<(), sqlx::Error> {
    // NUL cannot be stored in PostgreSQL text; COPY replaces it the same way.
    let text = |s: &str| s.replace('\0', "\u{fffd}");
    let opt = |s: Option<&str>| s.map(text);
    sqlx::query(
        "INSERT INTO agent_audit_log (session_id, step, tool_name, status, elapsed_ms, \
         output_preview, agent_name, decision, reason_code, ts, client, call_id, input, layer, \
         resolved_by, resolution, ref_code, prev_hash, row_hash, chain_key) VALUES ($1, $2, $3, \
         $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
    )
    .bind(text(&row.session_id))
    .bind(i64::from(row.step))
    .bind(text(&row.tool_name))
    .bind(row.status.as_str())
    .bind(i64::try_from(row.elapsed_ms).unwrap_or(i64::MAX))
    .bind(text(&row.output_preview))
    .bind(text(&row.agent_name))
    .bind(row.decision.map(Decision::as_str))
    .bind(opt(row.reason_code.as_deref()))
    .bind(row.ts)
    .bind(text(&row.client))
    .bind(text(&row.call_id))
    .bind(text(&row.input))
    .bind(opt(row.layer.as_deref()))
    .bind(row.resolved_by.map(Resolver::as_str))
    .bind(opt(row.resolution.as_deref()))
    .bind(opt(row.ref_code.as_deref()))
    .bind(prev)
    .bind(hash)
    .bind(key_id)
    .execute(&mut **tx)
    .await
    .map(|_| ())
}

/// Takes the chain's advisory lock for the rest of `tx`.
pub(super) async fn lock_chain(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(CHAIN_LOCK)
        .execute(&mut **tx)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_text_escapes_every_special_character() {
        let mut row = AuditRow::denied("s\t1", 3, "lead", "run_bash", Decision::Deny, "x", "");
        row.reason_code = None;
        row.elapsed_ms = 7;
        row.output_preview = "a\\b\nc\rd\0e".into();
        row.ts = 42;
        let links = [("p".to_owned(), "h".to_owned())];
        assert_eq!(
            copy_text(&[row], &links, "k"),
            "s\\t1\t3\trun_bash\tDENIED\t7\ta\\\\b\\nc\\rd\u{fffd}e\tlead\tdeny\t\\N\t42\t\t\t\t\\N\t\\N\t\\N\t\\N\tp\th\tk\n"
        );
    }
}
