//! The durable audit log: SQLite (WAL) behind one batching writer task.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use perm_rules::Decision;
use serde::{Deserialize, Serialize};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{QueryBuilder, Row, Sqlite};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::hook::{
    AgentHook, HookResult, PostToolUseAction, PostToolUseContext, SessionStopContext,
};

/// Where the audit database lives when the policy does not say.
pub const DEFAULT_AUDIT_DB: &str = ".agent-guard/audit.db";

/// How many characters of output an audit row keeps.
pub const OUTPUT_PREVIEW_CHARS: usize = 200;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Rows per INSERT statement; 10 binds each (5000) stays far below SQLite's variable limit.
const ROWS_PER_STATEMENT: usize = 500;

/// The `status` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuditStatus {
    /// The tool ran and succeeded.
    #[serde(rename = "OK")]
    Ok,
    /// The tool ran and reported an error.
    #[serde(rename = "FAIL")]
    Fail,
    /// The call was refused before it ran.
    #[serde(rename = "DENIED")]
    Denied,
    /// The session ended (`tool_name` is `session`).
    #[serde(rename = "SESSION_STOP")]
    SessionStop,
}

impl AuditStatus {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditStatus::Ok => "OK",
            AuditStatus::Fail => "FAIL",
            AuditStatus::Denied => "DENIED",
            AuditStatus::SessionStop => "SESSION_STOP",
        }
    }
}

impl FromStr for AuditStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "OK" => Ok(AuditStatus::Ok),
            "FAIL" => Ok(AuditStatus::Fail),
            "DENIED" => Ok(AuditStatus::Denied),
            "SESSION_STOP" => Ok(AuditStatus::SessionStop),
            _ => Err(format!(
                "unknown audit status `{s}` (expected ok, fail, denied or session_stop)"
            )),
        }
    }
}

/// One audit row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    /// The session id.
    pub session_id: String,
    /// The ReAct step.
    pub step: u32,
    /// The tool (`session` for a stop row).
    pub tool_name: String,
    /// What happened.
    pub status: AuditStatus,
    /// Run time in milliseconds.
    pub elapsed_ms: u64,
    /// The first [`OUTPUT_PREVIEW_CHARS`] characters of the output (or the stop reason).
    pub output_preview: String,
    /// `lead` or the subagent's name.
    pub agent_name: String,
    /// The permission decision, when known.
    pub decision: Option<Decision>,
    /// The stable reason code of a refusal, when there was one.
    pub reason_code: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub ts: i64,
}

/// Cuts `output` to [`OUTPUT_PREVIEW_CHARS`] characters, on a char boundary.
pub fn output_preview(output: &str) -> String {
    match output.char_indices().nth(OUTPUT_PREVIEW_CHARS) {
        Some((end, _)) => output.get(..end).unwrap_or(output).to_owned(),
        None => output.to_owned(),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl AuditRow {
    /// A row for a call that ran (status from `is_error`, decision `allow`).
    pub fn tool_call(ctx: &PostToolUseContext) -> Self {
        AuditRow {
            session_id: ctx.session_id.clone(),
            step: ctx.step,
            tool_name: ctx.tool_name.clone(),
            status: if ctx.is_error {
                AuditStatus::Fail
            } else {
                AuditStatus::Ok
            },
            elapsed_ms: millis(ctx.elapsed),
            output_preview: output_preview(&ctx.output),
            agent_name: ctx.agent_name.clone(),
            decision: Some(Decision::Allow),
            reason_code: None,
            ts: now_ms(),
        }
    }

    /// A row for a call refused before it ran (it never reaches `post_tool_use`).
    pub fn denied(
        session_id: &str,
        step: u32,
        agent_name: &str,
        tool_name: &str,
        decision: Decision,
        reason_code: &str,
        message: &str,
    ) -> Self {
        AuditRow {
            session_id: session_id.to_owned(),
            step,
            tool_name: tool_name.to_owned(),
            status: AuditStatus::Denied,
            elapsed_ms: 0,
            output_preview: output_preview(message),
            agent_name: agent_name.to_owned(),
            decision: Some(decision),
            reason_code: Some(reason_code.to_owned()),
            ts: now_ms(),
        }
    }

    /// The `SESSION_STOP` row (`tool_name` = `session`, preview = the stop reason).
    pub fn session_stop(ctx: &SessionStopContext) -> Self {
        AuditRow {
            session_id: ctx.session_id.clone(),
            step: ctx.steps,
            tool_name: "session".to_owned(),
            status: AuditStatus::SessionStop,
            elapsed_ms: millis(ctx.elapsed),
            output_preview: output_preview(&ctx.reason),
            agent_name: ctx.agent_name.clone(),
            decision: None,
            reason_code: None,
            ts: now_ms(),
        }
    }
}

/// A stored row with its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// The row id (insertion order).
    pub id: i64,
    /// The row.
    #[serde(flatten)]
    pub row: AuditRow,
}

/// Filters for [`AuditReader::query`] and [`AuditReader::summary`]; `None` matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only this session.
    pub session_id: Option<String>,
    /// Only this tool.
    pub tool_name: Option<String>,
    /// Only this status.
    pub status: Option<AuditStatus>,
    /// Only rows with `ts >= since` (ms since the epoch).
    pub since: Option<i64>,
    /// Only rows with `ts < until` (ms since the epoch).
    pub until: Option<i64>,
    /// At most this many rows (the oldest first).
    pub limit: Option<u32>,
}

/// Per-tool totals over the rows a query matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSummary {
    /// The tool.
    pub tool_name: String,
    /// Rows.
    pub calls: u64,
    /// Rows with status `OK`.
    pub ok: u64,
    /// Rows with status `FAIL`.
    pub fail: u64,
    /// Rows with status `DENIED`.
    pub denied: u64,
    /// Mean run time.
    pub avg_elapsed_ms: f64,
    /// Longest run time.
    pub max_elapsed_ms: u64,
}

/// Tuning of the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditOptions {
    /// Rows the queue holds before `record` waits.
    pub queue_capacity: usize,
    /// Most rows per transaction.
    pub max_batch: usize,
    /// How long `record` waits on a full queue before the row counts as dropped.
    pub enqueue_timeout: Duration,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            queue_capacity: 8192,
            max_batch: 1024,
            enqueue_timeout: Duration::from_millis(200),
        }
    }
}

/// What became of a recorded row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Queued; it will be written (and is flushed by [`AuditLog::shutdown`]).
    Queued,
    /// The queue stayed full past the timeout, or the log was shut down; counted in
    /// [`AuditLog::dropped`].
    Dropped,
}

enum Msg {
    Row(AuditRow),
    Flush(oneshot::Sender<()>),
    Stop(oneshot::Sender<()>),
}

struct Shared {
    path: String,
    pool: SqlitePool,
    tx: mpsc::Sender<Msg>,
    dropped: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
    closed: AtomicBool,
    writer: Mutex<Option<JoinHandle<()>>>,
    options: AuditOptions,
}

/// The audit log: a cheap-to-clone handle on one SQLite file and its writer task.
#[derive(Clone)]
pub struct AuditLog {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

fn db_err(path: &str) -> impl FnOnce(sqlx::Error) -> Error + '_ {
    move |source| Error::Database {
        path: path.to_owned(),
        source,
    }
}

impl AuditLog {
    /// Opens (creating it, in WAL mode) the database at `path`, migrates it and starts the
    /// writer. Must be called inside a tokio runtime.
    pub async fn open(path: impl AsRef<Path>) -> Result<AuditLog, Error> {
        AuditLog::open_with(path, AuditOptions::default()).await
    }

    /// [`AuditLog::open`] with explicit writer options.
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: AuditOptions,
    ) -> Result<AuditLog, Error> {
        let path = path.as_ref();
        let name = path.display().to_string();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::Database {
                path: name.clone(),
                source: sqlx::Error::Io(e),
            })?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL: a committed batch survives a process crash; only power loss can
            // lose the last transactions.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(connect)
            .await
            .map_err(db_err(&name))?;
        MIGRATOR.run(&pool).await.map_err(|source| Error::Migrate {
            path: name.clone(),
            source,
        })?;
        let (tx, rx) = mpsc::channel(options.queue_capacity.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(Shared {
            path: name,
            pool: pool.clone(),
            tx,
            dropped,
            written: Arc::new(AtomicU64::new(0)),
            closed: AtomicBool::new(false),
            writer: Mutex::new(None),
            options,
        });
        let handle = tokio::spawn(writer(
            pool,
            rx,
            options.max_batch.max(1),
            Arc::clone(&shared.dropped),
            Arc::clone(&shared.written),
            shared.path.clone(),
        ));
        *shared.writer.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        Ok(AuditLog { shared })
    }

    /// Queues `row`. Waits at most the enqueue timeout on a full queue, then counts the row
    /// as dropped (and logs a warning) rather than blocking the agent indefinitely.
    pub async fn record(&self, row: AuditRow) -> Recorded {
        if self.shared.closed.load(Ordering::Acquire) {
            return self.drop_row("the audit log is shut down");
        }
        let msg = match self.shared.tx.try_send(Msg::Row(row)) {
            Ok(()) => return Recorded::Queued,
            Err(mpsc::error::TrySendError::Closed(_)) => {
                return self.drop_row("the audit writer has stopped");
            }
            Err(mpsc::error::TrySendError::Full(msg)) => msg,
        };
        match tokio::time::timeout(
            self.shared.options.enqueue_timeout,
            self.shared.tx.send(msg),
        )
        .await
        {
            Ok(Ok(())) => Recorded::Queued,
            Ok(Err(_)) => self.drop_row("the audit writer has stopped"),
            Err(_) => self.drop_row("the audit queue stayed full"),
        }
    }

    fn drop_row(&self, why: &str) -> Recorded {
        let total = self.shared.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(dropped_total = total, "audit row dropped: {why}");
        Recorded::Dropped
    }

    /// Waits until every row queued before this call is committed.
    pub async fn flush(&self) -> Result<(), Error> {
        let (done, wait) = oneshot::channel();
        self.shared
            .tx
            .send(Msg::Flush(done))
            .await
            .map_err(|_| Error::Closed)?;
        wait.await.map_err(|_| Error::Closed)
    }

    /// Stops accepting rows, writes everything already queued, and stops the writer.
    pub async fn shutdown(&self) -> Result<(), Error> {
        self.shared.closed.store(true, Ordering::Release);
        let handle = self
            .shared
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(handle) = handle else {
            return Ok(());
        };
        // The writer closes the channel, so a row either made it into the queue (and is
        // written now) or its `record` sees the closed channel and counts it as dropped.
        let (done, wait) = oneshot::channel();
        if self.shared.tx.send(Msg::Stop(done)).await.is_ok() {
            let _ = wait.await;
        }
        let _ = handle.await;
        self.shared.pool.close().await;
        Ok(())
    }

    /// Rows that could not be queued or written.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Rows committed so far.
    pub fn written(&self) -> u64 {
        self.shared.written.load(Ordering::Relaxed)
    }

    /// The shared dropped-row counter (for [`crate::MetricsHook::with_audit`]).
    pub fn dropped_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.shared.dropped)
    }

    /// A reader over the same database.
    pub fn reader(&self) -> AuditReader {
        AuditReader {
            pool: self.shared.pool.clone(),
            path: self.shared.path.clone(),
        }
    }
}

/// The writer task: one batch per wake-up, one transaction per batch.
async fn writer(
    pool: SqlitePool,
    mut rx: mpsc::Receiver<Msg>,
    max_batch: usize,
    dropped: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
    path: String,
) {
    let mut batch: Vec<AuditRow> = Vec::with_capacity(max_batch);
    let mut waiters: Vec<oneshot::Sender<()>> = Vec::new();
    let mut stopping = false;
    loop {
        let Some(first) = rx.recv().await else {
            break;
        };
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Row(row) => batch.push(row),
                Msg::Flush(done) => waiters.push(done),
                Msg::Stop(done) => {
                    waiters.push(done);
                    if !stopping {
                        stopping = true;
                        rx.close();
                    }
                }
            }
            if batch.len() >= max_batch {
                break;
            }
            next = rx.try_recv().ok();
        }
        if !batch.is_empty() {
            let n = batch.len() as u64;
            match write_batch(&pool, &batch).await {
                Ok(()) => {
                    written.fetch_add(n, Ordering::Relaxed);
                }
                Err(err) => {
                    let total = dropped.fetch_add(n, Ordering::Relaxed) + n;
                    tracing::error!(path = %path, rows = n, dropped_total = total, "audit batch failed: {err}");
                }
            }
            batch.clear();
        }
        // A waiter is answered only once everything queued before it is committed; while
        // stopping, keep draining until the closed channel is empty.
        if !stopping || rx.is_empty() {
            for done in waiters.drain(..) {
                let _ = done.send(());
            }
        }
        if stopping && rx.is_empty() {
            break;
        }
    }
    for done in waiters.drain(..) {
        let _ = done.send(());
    }
}

async fn write_batch(pool: &SqlitePool, rows: &[AuditRow]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut qb: QueryBuilder<Sqlite> = QueryBuilder::new(
            "INSERT INTO agent_audit_log (session_id, step, tool_name, status, elapsed_ms, \
             output_preview, agent_name, decision, reason_code, ts) ",
        );
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

/// Read access for the CLI and tests: opens an existing database read-only.
#[derive(Debug, Clone)]
pub struct AuditReader {
    pool: SqlitePool,
    path: String,
}

fn parse_decision(s: &str) -> Option<Decision> {
    match s {
        "allow" => Some(Decision::Allow),
        "ask" => Some(Decision::Ask),
        "deny" => Some(Decision::Deny),
        _ => None,
    }
}

fn push_filters(qb: &mut QueryBuilder<Sqlite>, q: &AuditQuery) {
    qb.push(" WHERE 1 = 1");
    if let Some(session) = &q.session_id {
        qb.push(" AND session_id = ").push_bind(session.clone());
    }
    if let Some(tool) = &q.tool_name {
        qb.push(" AND tool_name = ").push_bind(tool.clone());
    }
    if let Some(status) = q.status {
        qb.push(" AND status = ").push_bind(status.as_str());
    }
    if let Some(since) = q.since {
        qb.push(" AND ts >= ").push_bind(since);
    }
    if let Some(until) = q.until {
        qb.push(" AND ts < ").push_bind(until);
    }
}

fn record_from(row: &SqliteRow) -> Result<AuditRecord, sqlx::Error> {
    let status: String = row.try_get("status")?;
    let status = status
        .parse()
        .map_err(|e: String| sqlx::Error::ColumnDecode {
            index: "status".to_owned(),
            source: e.into(),
        })?;
    let decision: Option<String> = row.try_get("decision")?;
    let step: i64 = row.try_get("step")?;
    let elapsed: i64 = row.try_get("elapsed_ms")?;
    Ok(AuditRecord {
        id: row.try_get("id")?,
        row: AuditRow {
            session_id: row.try_get("session_id")?,
            step: u32::try_from(step).unwrap_or(u32::MAX),
            tool_name: row.try_get("tool_name")?,
            status,
            elapsed_ms: u64::try_from(elapsed).unwrap_or(0),
            output_preview: row.try_get("output_preview")?,
            agent_name: row.try_get("agent_name")?,
            decision: decision.as_deref().and_then(parse_decision),
            reason_code: row.try_get("reason_code")?,
            ts: row.try_get("ts")?,
        },
    })
}

impl AuditReader {
    /// Opens an existing database read-only; a missing file is [`Error::MissingDatabase`].
    pub async fn open(path: impl AsRef<Path>) -> Result<AuditReader, Error> {
        let path: PathBuf = path.as_ref().to_owned();
        let name = path.display().to_string();
        if !path.is_file() {
            return Err(Error::MissingDatabase(name));
        }
        let connect = SqliteConnectOptions::new()
            .filename(&path)
            .read_only(true)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(connect)
            .await
            .map_err(db_err(&name))?;
        Ok(AuditReader { pool, path: name })
    }

    /// Rows matching `q`, oldest first.
    pub async fn query(&self, q: &AuditQuery) -> Result<Vec<AuditRecord>, Error> {
        let mut qb: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT id, session_id, step, tool_name, status, elapsed_ms, output_preview, \
             agent_name, decision, reason_code, ts FROM agent_audit_log",
        );
        push_filters(&mut qb, q);
        qb.push(" ORDER BY id");
        if let Some(limit) = q.limit {
            qb.push(" LIMIT ").push_bind(i64::from(limit));
        }
        let rows = qb
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(db_err(&self.path))?;
        rows.iter()
            .map(record_from)
            .collect::<Result<_, _>>()
            .map_err(db_err(&self.path))
    }

    /// Per-tool totals over the rows matching `q` (its `limit` is ignored).
    pub async fn summary(&self, q: &AuditQuery) -> Result<Vec<ToolSummary>, Error> {
        let mut qb: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT tool_name, COUNT(*) AS calls, \
             SUM(status = 'OK') AS ok, SUM(status = 'FAIL') AS fail, \
             SUM(status = 'DENIED') AS denied, \
             AVG(elapsed_ms) AS avg_ms, MAX(elapsed_ms) AS max_ms FROM agent_audit_log",
        );
        push_filters(&mut qb, q);
        qb.push(" GROUP BY tool_name ORDER BY tool_name");
        let rows = qb
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(db_err(&self.path))?;
        let count = |row: &SqliteRow, col: &str| -> Result<u64, sqlx::Error> {
            let v: Option<i64> = row.try_get(col)?;
            Ok(u64::try_from(v.unwrap_or(0)).unwrap_or(0))
        };
        rows.iter()
            .map(|row| {
                Ok(ToolSummary {
                    tool_name: row.try_get("tool_name")?,
                    calls: count(row, "calls")?,
                    ok: count(row, "ok")?,
                    fail: count(row, "fail")?,
                    denied: count(row, "denied")?,
                    avg_elapsed_ms: row.try_get::<Option<f64>, _>("avg_ms")?.unwrap_or(0.0),
                    max_elapsed_ms: count(row, "max_ms")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err(&self.path))
    }

    /// Closes the connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Writes one row per tool call and a `SESSION_STOP` row when a session stops.
pub struct AuditLogHook {
    log: AuditLog,
}

impl AuditLogHook {
    /// A hook writing to `log`.
    pub fn new(log: AuditLog) -> Self {
        AuditLogHook { log }
    }
}

#[async_trait]
impl AgentHook for AuditLogHook {
    fn name(&self) -> &str {
        "audit_log"
    }

    async fn post_tool_use(&self, ctx: &PostToolUseContext) -> HookResult<PostToolUseAction> {
        self.log.record(AuditRow::tool_call(ctx)).await;
        Ok(PostToolUseAction::Continue)
    }

    async fn on_session_stop(&self, ctx: &SessionStopContext) -> HookResult {
        self.log.record(AuditRow::session_stop(ctx)).await;
        Ok(())
    }
}
