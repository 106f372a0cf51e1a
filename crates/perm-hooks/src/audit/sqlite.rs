//! The SQLite backend: the embedded default (one file, WAL).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use perm_rules::Decision;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite};

use super::{Access, AuditOptions, AuditRow, COLUMN_LIST, ChainKey, Resolver, chain};
use crate::error::Error;

pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// Rows per INSERT statement; 20 binds each (10000) stays below SQLite's variable limit (32766).
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
    let io_err = |e: std::io::Error| Error::Database {
        path: name.to_owned(),
        source: sqlx::Error::Io(e),
    };
    let mut connect = SqliteConnectOptions::new()
        .filename(path)
        .busy_timeout(super::lock_wait(options.write_timeout))
        .journal_mode(SqliteJournalMode::Wal)
        // WAL + NORMAL: a committed batch survives a process crash; only power loss can lose
        // the last transactions.
        .synchronous(SqliteSynchronous::Normal);
    match access {
        Access::Read => {
            // Readers never create a database: a wrong path must say so, not show an empty log.
            if !path.is_file() {
                return Err(Error::MissingDatabase(name.to_owned()));
            }
        }
        Access::Write | Access::Control => {
            private_file(path).map_err(io_err)?;
            connect = connect.create_if_missing(true);
        }
    }
    let pool = connect_retrying(connect, max_connections)
        .await
        .map_err(open_err(name))?;
    if access == Access::Write {
        quick_check(&pool, name).await?;
    }
    // Before anything writes (a migration runs UPDATEs, and so would a planted trigger): only
    // objects of our own schema may exist.
    let latest = match check_schema(&pool, name, false).await {
        Ok(latest) => latest,
        Err(e) => {
            pool.close().await;
            return Err(e);
        }
    };
    if !latest {
        migrate(&pool, name).await?;
        if let Err(e) = check_schema(&pool, name, true).await {
            pool.close().await;
            return Err(e);
        }
    }
    Ok(pool)
}

/// Creates the database file 0600 in a 0700 directory (each created with those modes, so no
/// other user ever sees it readable), and takes group and other access away from an existing
/// one and its WAL files.
fn private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let mut shm = path.as_os_str().to_owned();
    shm.push("-shm");
    for file in [path.as_os_str(), wal.as_os_str(), shm.as_os_str()] {
        let file = Path::new(file);
        if let Ok(meta) = std::fs::metadata(file)
            && meta.is_file()
            && meta.permissions().mode() & 0o077 != 0
        {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

const SCHEMA_VERSION: &str = "PRAGMA schema_version";
const SELECT_CANCELLATIONS: &str =
    "SELECT id, session_id FROM agent_guard_cancellations WHERE id > ? ORDER BY id";
const SELECT_LAST_HASH: &str = "SELECT row_hash FROM agent_audit_log ORDER BY id DESC LIMIT 1";

/// The INSERT of `rows` linked rows (one statement; at most [`ROWS_PER_STATEMENT`]).
fn insert_rows(rows: Vec<(AuditRow, (String, String))>, key_id: &Arc<str>) -> QueryBuilder<Sqlite> {
    let mut qb: QueryBuilder<Sqlite> =
        QueryBuilder::new(format!("INSERT INTO agent_audit_log ({COLUMN_LIST}) "));
    qb.push_values(rows, |mut b, (row, (prev, hash))| {
        b.push_bind(row.session_id)
            .push_bind(i64::from(row.step))
            .push_bind(row.tool_name)
            .push_bind(row.status.as_str())
            .push_bind(i64::try_from(row.elapsed_ms).unwrap_or(i64::MAX))
            .push_bind(row.output_preview)
            .push_bind(row.agent_name)
            .push_bind(row.decision.map(Decision::as_str))
            .push_bind(row.reason_code)
            .push_bind(row.ts)
            .push_bind(row.client)
            .push_bind(row.call_id)
            .push_bind(row.input)
            .push_bind(row.layer)
            .push_bind(row.resolved_by.map(Resolver::as_str))
            .push_bind(row.resolution)
            .push_bind(row.ref_code)
            .push_bind(prev)
            .push_bind(hash)
            .push_bind(Arc::clone(key_id));
    });
    qb
}

/// Prepares, on each connection the pool may hold, the statements one guarded call runs
/// (`extra`: those of other modules), so that the call does not parse them: a process that
/// holds the database between calls does this while it waits.
pub(super) async fn prepare_calls(pool: &SqlitePool, extra: &[&str]) -> Result<(), sqlx::Error> {
    use sqlx::Executor as _;
    let row = AuditRow::session_stop(&crate::hook::SessionStopContext::default());
    let one_row = insert_rows(vec![(row, Default::default())], &Arc::from("")).into_string();
    let mut held = Vec::new();
    for _ in 0..pool.options().get_max_connections() {
        held.push(pool.acquire().await?);
    }
    for conn in &mut held {
        for sql in [
            SCHEMA_VERSION,
            SELECT_CANCELLATIONS,
            SELECT_LAST_HASH,
            one_row.as_str(),
        ]
        .into_iter()
        .chain(extra.iter().copied())
        {
            conn.prepare(sqlx::SqlSafeStr::into_sql_str(sqlx::AssertSqlSafe(
                sql.to_owned(),
            )))
            .await?;
        }
    }
    Ok(())
}

/// SQLite's count of schema changes in this file (`PRAGMA schema_version`).
pub(super) async fn schema_version(pool: &SqlitePool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(SCHEMA_VERSION).fetch_one(pool).await
}

/// One schema object: (type, name, table).
type SchemaObject = (String, String, String);

/// One column of a table: (table, column, type, not null, default, primary-key index).
type SchemaColumn = (String, String, String, i64, Option<String>, i64);

const SELECT_OBJECTS: &str = "SELECT type, name, tbl_name FROM sqlite_master ORDER BY type, name";

/// Every column of every table, as SQLite reports it (not the CREATE text, whose spelling
/// differs between a database the seed created and one our migrations made).
const SELECT_COLUMNS: &str = "SELECT m.name, c.name, c.type, c.\"notnull\", c.dflt_value, c.pk \
     FROM sqlite_master m JOIN pragma_table_info(m.name) c \
     WHERE m.type = 'table' ORDER BY m.name, c.cid";

type Schema = (Vec<SchemaObject>, Vec<SchemaColumn>);

async fn schema_of(pool: &SqlitePool) -> Result<Schema, sqlx::Error> {
    Ok((
        sqlx::query_as(SELECT_OBJECTS).fetch_all(pool).await?,
        sqlx::query_as(SELECT_COLUMNS).fetch_all(pool).await?,
    ))
}

/// The schema our migrations make, one object or column per line, as [`render`] writes it.
/// `the_expected_schema_is_what_the_migrations_make` migrates a private in-memory database and
/// compares: a new migration fails that test until this file is written anew. (Migrating an
/// in-memory database in every hook process to learn it was a fifth of a hook's audit cost.)
const EXPECTED_SCHEMA: &str = include_str!("schema.sqlite.txt");

/// [`EXPECTED_SCHEMA`], parsed.
fn expected_schema() -> Result<&'static Schema, sqlx::Error> {
    static EXPECTED: std::sync::OnceLock<Result<Schema, String>> = std::sync::OnceLock::new();
    EXPECTED
        .get_or_init(|| parse_schema(EXPECTED_SCHEMA))
        .as_ref()
        .map_err(|e| sqlx::Error::Protocol(format!("the guard's own schema table: {e}")))
}

/// One line per object (`object TYPE NAME TABLE`) and per column (`column TABLE NAME TYPE
/// NOTNULL DEFAULT PK`, `DEFAULT` `-` when there is none), tab-separated.
#[cfg(test)]
fn render((objects, columns): &Schema) -> String {
    let mut out = String::new();
    for (kind, name, table) in objects {
        out.push_str(&format!("object\t{kind}\t{name}\t{table}\n"));
    }
    for (table, name, kind, not_null, default, pk) in columns {
        let default = default.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "column\t{table}\t{name}\t{kind}\t{not_null}\t{default}\t{pk}\n"
        ));
    }
    out
}

fn parse_schema(text: &str) -> Result<Schema, String> {
    let mut schema: Schema = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let number = |s: &str| s.parse::<i64>().map_err(|e| format!("`{line}`: {e}"));
        match fields.as_slice() {
            ["object", kind, name, table] => {
                schema
                    .0
                    .push(((*kind).to_owned(), (*name).to_owned(), (*table).to_owned()));
            }
            ["column", table, name, kind, not_null, default, pk] => schema.1.push((
                (*table).to_owned(),
                (*name).to_owned(),
                (*kind).to_owned(),
                number(not_null)?,
                (*default != "-").then(|| (*default).to_owned()),
                number(pk)?,
            )),
            _ => return Err(format!("unreadable line `{line}`")),
        }
    }
    Ok(schema)
}

/// Objects an earlier migration made and a later one dropped (type, name, table): the indexes
/// 0002 and 0005 made and 0007 dropped. Indexes only: they cannot change or hide a row.
const RETIRED: [(&str, &str, &str); 2] = [
    ("index", "agent_audit_log_tool", "agent_audit_log"),
    ("index", "agent_audit_log_call", "agent_audit_log"),
];

/// Refuses a database holding anything our migrations did not make: a trigger or a view (which
/// could rewrite or hide rows, with `quick_check` still "ok"), an unknown table or index, or,
/// once migrated (`exact`), a missing object or a table whose columns differ.
async fn check_schema(pool: &SqlitePool, name: &str, exact: bool) -> Result<bool, Error> {
    let (objects, columns) = expected_schema().map_err(open_err(name))?;
    let (found, found_columns) = schema_of(pool).await.map_err(open_err(name))?;
    let foreign = |what: String| Error::ForeignSchema {
        target: name.to_owned(),
        detail: what,
    };
    for (kind, object, table) in &found {
        if matches!(kind.as_str(), "trigger" | "view") {
            return Err(foreign(format!("it has a {kind} `{object}` on `{table}`")));
        }
        match objects.iter().find(|(k, n, _)| k == kind && n == object) {
            // Made by an earlier migration and dropped by a later one: a database not yet
            // migrated (or being migrated by another process right now) still has it.
            None if !exact
                && RETIRED
                    .iter()
                    .any(|(k, n, t)| k == kind && n == object && t == table) => {}
            None => {
                return Err(foreign(format!(
                    "it has a {kind} `{object}` the guard did not make"
                )));
            }
            Some((_, _, t)) if t != table => {
                return Err(foreign(format!("the {kind} `{object}` was changed")));
            }
            Some(_) => {}
        }
    }
    if exact {
        if found.len() != objects.len() {
            return Err(foreign(
                "objects of the guard's schema are missing".to_owned(),
            ));
        }
        if let Some(c) = found_columns
            .iter()
            .zip(columns.iter())
            .find_map(|(f, e)| (f != e).then_some(f))
            .or_else(|| {
                (found_columns.len() != columns.len())
                    .then(|| found_columns.first())
                    .flatten()
            })
        {
            return Err(foreign(format!("the table `{}` was changed", c.0)));
        }
    }
    // Exactly the latest schema: nothing left to migrate.
    Ok(found == *objects && found_columns == *columns)
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
            // A ping before each use is a round trip to the connection's thread for nothing: a
            // SQLite connection is a file, not a server that can go away; a failing statement
            // says so itself. Half of a hook's database round trips were these pings.
            .test_before_acquire(false)
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
pub(super) async fn quick_check(pool: &SqlitePool, name: &str) -> Result<(), Error> {
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

/// Writes a batch as one `BEGIN IMMEDIATE` transaction: the write lock is taken before the
/// last link is read, so two processes appending at once cannot fork the chain. Takes the rows:
/// their texts move into the statement's arguments rather than being copied (a SQLite failure
/// is never retried, see `Db::is_transient`).
pub(super) async fn write_batch(
    pool: &SqlitePool,
    rows: Vec<AuditRow>,
    key: &ChainKey,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let prev: Option<Option<String>> = sqlx::query_scalar(SELECT_LAST_HASH)
        .fetch_optional(&mut *tx)
        .await?;
    let links = chain(key, &prev.flatten().unwrap_or_default(), &rows);
    // Shared, not copied per row.
    let key_id: Arc<str> = Arc::from(key.id());
    let mut linked = rows.into_iter().zip(links);
    loop {
        let chunk: Vec<_> = linked.by_ref().take(ROWS_PER_STATEMENT).collect();
        if chunk.is_empty() {
            break;
        }
        let mut qb = insert_rows(chunk, &key_id);
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
    sqlx::query_as(SELECT_CANCELLATIONS)
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

#[cfg(test)]
mod schema_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// What a fresh in-memory database holds once every migration has run.
    async fn migrated() -> Schema {
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(SqliteConnectOptions::new().in_memory(true))
            .await
            .unwrap();
        MIGRATOR.run(&pool).await.unwrap();
        let schema = schema_of(&pool).await.unwrap();
        pool.close().await;
        schema
    }

    #[tokio::test]
    async fn the_expected_schema_is_what_the_migrations_make() {
        let made = render(&migrated().await);
        // `BLESS=1 cargo test -p perm-hooks the_expected_schema` writes the file after a new
        // migration (then review its diff).
        if std::env::var_os("BLESS").is_some() {
            let file = concat!(env!("CARGO_MANIFEST_DIR"), "/src/audit/schema.sqlite.txt");
            std::fs::write(file, &made).unwrap();
            return;
        }
        assert_eq!(
            EXPECTED_SCHEMA, made,
            "crates/perm-hooks/src/audit/schema.sqlite.txt must be what the migrations make; \
             write the right-hand text there"
        );
        assert_eq!(render(expected_schema().unwrap()), made);
    }
}
