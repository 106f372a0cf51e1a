//! The kill switch: cancellations are rows in the audit database, so every guard sharing the
//! database sees them. PostgreSQL wakes listeners with `NOTIFY`; both backends also poll.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Access, AuditDb, AuditOptions, AuditTarget, Db, now_ms, postgres, sqlite};
use crate::error::Error;

/// How often a guard re-reads the cancellations table. On PostgreSQL this is the fallback
/// behind `LISTEN`; either way a cancellation is seen well within a second.
const POLL_SQLITE: Duration = Duration::from_millis(200);
const POLL_POSTGRES: Duration = Duration::from_millis(500);

#[derive(Default)]
struct State {
    /// The highest cancellation id applied.
    seen: i64,
    all: bool,
    sessions: HashSet<String>,
    /// Fires on an all-sessions cancellation; every session token is its child.
    all_token: CancellationToken,
    tokens: HashMap<String, CancellationToken>,
}

impl State {
    fn apply(&mut self, rows: Vec<(i64, Option<String>)>) {
        for (id, session) in rows {
            self.seen = self.seen.max(id);
            match session {
                None => {
                    self.all = true;
                    self.all_token.cancel();
                }
                Some(session) => {
                    if let Some(token) = self.tokens.get(&session) {
                        token.cancel();
                    }
                    self.sessions.insert(session);
                }
            }
        }
    }

    fn is_cancelled(&self, session: &str) -> bool {
        self.all || self.sessions.contains(session)
    }
}

struct Inner {
    db: Db,
    target: String,
    state: Mutex<State>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn refresh(&self) -> Result<(), Error> {
        let seen = self.state().seen;
        let rows = match &self.db {
            Db::Sqlite(pool) => sqlite::cancellations_after(pool, seen).await,
            Db::Postgres(pool) => postgres::cancellations_after(pool, seen).await,
        }
        .map_err(|source| Error::Database {
            path: self.target.clone(),
            source,
        })?;
        if !rows.is_empty() {
            self.state().apply(rows);
        }
        Ok(())
    }
}

/// A fleet-wide kill switch over the audit database (a SQLite path or a PostgreSQL URL).
///
/// `open` loads every cancellation recorded so far and keeps the state fresh in the
/// background (a PostgreSQL `LISTEN` plus a poll, or a poll on SQLite), so
/// [`KillSwitch::is_cancelled`] is a lock and a lookup. Cancellations are permanent: a
/// cancelled session id stays cancelled, and `cancel(None)` stops every session, present and
/// future, that uses this database. While the database is unreachable the last known state
/// is kept (and a warning logged); one-shot processes should use [`KillSwitch::check_now`],
/// whose error they can treat as a refusal.
#[derive(Clone)]
pub struct KillSwitch {
    inner: Arc<Inner>,
}

impl fmt::Debug for KillSwitch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KillSwitch")
            .field("target", &self.inner.target)
            .finish_non_exhaustive()
    }
}

impl KillSwitch {
    /// Opens (creating and migrating, like [`crate::AuditLog::open`], without the integrity
    /// check) the database and starts watching it. Must be called inside a tokio runtime.
    pub async fn open(url_or_path: &str) -> Result<KillSwitch, Error> {
        let target = AuditTarget::parse(url_or_path);
        let db = Db::open(&target, Access::Control, &AuditOptions::default(), 2).await?;
        KillSwitch::start(db, target.to_string()).await
    }

    /// The kill switch on a database already opened by [`AuditDb::open`], sharing its
    /// connections. Must be called inside a tokio runtime.
    ///
    /// On PostgreSQL the switch keeps its own pool, as [`KillSwitch::open`] does: its
    /// `LISTEN` holds a connection for the switch's whole life, and closing a shared pool
    /// (the log's shutdown) would wait for that connection forever.
    pub async fn on(db: &AuditDb) -> Result<KillSwitch, Error> {
        match db.target() {
            AuditTarget::Postgres(url) => KillSwitch::open(url).await,
            AuditTarget::Sqlite(_) => {
                KillSwitch::start(db.db().clone(), db.target().to_string()).await
            }
        }
    }

    async fn start(db: Db, target: String) -> Result<KillSwitch, Error> {
        let inner = Arc::new(Inner {
            db,
            target,
            state: Mutex::new(State::default()),
            task: Mutex::new(None),
        });
        inner.refresh().await?;
        let task = match &inner.db {
            Db::Sqlite(_) => tokio::spawn(poll(Arc::downgrade(&inner), POLL_SQLITE)),
            Db::Postgres(pool) => {
                let listener = listen(pool, &inner.target).await;
                tokio::spawn(listen_and_poll(
                    Arc::downgrade(&inner),
                    listener,
                    POLL_POSTGRES,
                ))
            }
        };
        *inner.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
        Ok(KillSwitch { inner })
    }

    /// Records a cancellation of `session` (`None`: every session). Every guard sharing the
    /// database sees it within a second; this handle sees it at once.
    pub async fn cancel(&self, session: Option<&str>) -> Result<(), Error> {
        self.cancel_with_reason(session, "").await
    }

    /// [`KillSwitch::cancel`] with a note for the people reading the table.
    pub async fn cancel_with_reason(
        &self,
        session: Option<&str>,
        reason: &str,
    ) -> Result<(), Error> {
        let ts = now_ms();
        match &self.inner.db {
            Db::Sqlite(pool) => sqlite::insert_cancel(pool, session, reason, ts).await,
            Db::Postgres(pool) => postgres::insert_cancel(pool, session, reason, ts).await,
        }
        .map_err(|source| Error::Database {
            path: self.inner.target.clone(),
            source,
        })?;
        self.inner.refresh().await
    }

    /// Whether `session` (or every session) has been cancelled, from the state the
    /// background task keeps fresh. Never blocks on the database.
    pub fn is_cancelled(&self, session: &str) -> bool {
        self.inner.state().is_cancelled(session)
    }

    /// Asks the database now (one query): for one-shot processes such as a hook that cannot
    /// wait for the background state.
    pub async fn check_now(&self, session: &str) -> Result<bool, Error> {
        match &self.inner.db {
            Db::Sqlite(pool) => sqlite::is_cancelled(pool, session).await,
            Db::Postgres(pool) => postgres::is_cancelled(pool, session).await,
        }
        .map_err(|source| Error::Database {
            path: self.inner.target.clone(),
            source,
        })
    }

    /// A token that fires when `session`, or every session, is cancelled (at once if it
    /// already is). Tokens for one session are clones of one token.
    pub fn watch(&self, session: &str) -> CancellationToken {
        let mut state = self.inner.state();
        if state.is_cancelled(session) {
            let token = CancellationToken::new();
            token.cancel();
            return token;
        }
        let all = state.all_token.clone();
        state
            .tokens
            .entry(session.to_owned())
            .or_insert_with(|| all.child_token())
            .clone()
    }

    /// The database, password removed.
    pub fn target(&self) -> &str {
        &self.inner.target
    }
}

/// Refreshes `inner` until it is dropped; a failed refresh is logged and retried next tick.
async fn tick(inner: &Weak<Inner>) -> bool {
    let Some(inner) = inner.upgrade() else {
        return false;
    };
    if let Err(err) = inner.refresh().await {
        tracing::warn!("kill switch: cannot read cancellations: {err}");
    }
    true
}

async fn poll(inner: Weak<Inner>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        if !tick(&inner).await {
            return;
        }
    }
}

async fn listen(pool: &sqlx::PgPool, target: &str) -> Option<sqlx::postgres::PgListener> {
    let listener = async {
        let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
        listener.listen(postgres::CANCEL_CHANNEL).await?;
        Ok::<_, sqlx::Error>(listener)
    };
    match listener.await {
        Ok(listener) => Some(listener),
        Err(err) => {
            tracing::warn!(target_db = %target, "kill switch: LISTEN failed, polling only: {err}");
            None
        }
    }
}

async fn listen_and_poll(
    inner: Weak<Inner>,
    listener: Option<sqlx::postgres::PgListener>,
    every: Duration,
) {
    let Some(mut listener) = listener else {
        return poll(inner, every).await;
    };
    loop {
        tokio::select! {
            received = listener.recv() => {
                if let Err(err) = received {
                    // The listener reconnects on the next `recv`; meanwhile the poll covers.
                    tracing::warn!("kill switch: LISTEN connection lost: {err}");
                    tokio::time::sleep(every).await;
                }
            }
            () = tokio::time::sleep(every) => {}
        }
        if !tick(&inner).await {
            return;
        }
    }
}
