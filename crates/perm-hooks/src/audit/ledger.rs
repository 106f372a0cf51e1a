//! The session ledger of hook mode: per-session call counts, runs of identical calls and
//! allow-once grants, kept in the audit database because every hook call is its own process.
//!
//! Every operation that changes state is one statement (`INSERT .. ON CONFLICT DO UPDATE ..
//! RETURNING`, `UPDATE .. WHERE .. RETURNING`), so concurrent hook processes of one session
//! cannot lose a count or both consume one grant: SQLite runs each under its write lock, and
//! PostgreSQL re-checks an `UPDATE`'s `WHERE` against the row a concurrent writer committed.
//!
//! This crate knows nothing of hashing or of which refusals a grant may lift: the caller
//! (agent-core) hands in the key of the call and the liftability it judged.

use std::fmt;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hmac::{KeyInit as _, Mac as _};

use super::{Access, AuditDb, AuditOptions, AuditTarget, Db, now_ms};
use crate::error::Error;

/// How long a granted code lets its call through (the window `agent-guard allow-once` opens).
pub const ALLOW_ONCE_WINDOW: Duration = Duration::from_secs(10 * 60);

/// Where the grant key lives unless `AGENT_GUARD_GRANT_KEY_FILE` says: in the person's home,
/// outside every project root, so an agent's allowed writes cannot reach it.
pub const GRANT_KEY_FILE: &str = ".agent-guard/grant.key";

/// The environment variable naming another grant key file (tests, shared machines).
pub const GRANT_KEY_VAR: &str = "AGENT_GUARD_GRANT_KEY_FILE";

const KEY_LEN: usize = 32;

/// The journal of used grant codes, in the grant key's directory.
pub const USED_JOURNAL_FILE: &str = "grants-used";

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// A code's alphabet: no `0`/`O`, `1`/`I`, so a person can read it aloud.
const ALPHABET: &[u8; 32] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZ";

/// What one counted call did to its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Calls counted in the session, this one included.
    pub calls: u64,
    /// Identical consecutive calls ending with this one (1 = it differs from the previous).
    pub run: u64,
}

/// The exact call a code binds to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallKey<'a> {
    /// The session the refusal was shown in.
    pub session_id: &'a str,
    /// The client's tool name.
    pub tool_name: &'a str,
    /// The client's input as canonical text (the caller canonicalises it).
    pub args: &'a str,
    /// The call's working directory.
    pub cwd: &'a str,
}

/// A refusal to record, so a person can later grant (or be told why not).
#[derive(Debug, Clone)]
pub struct Refusal<'a> {
    /// The call.
    pub key: CallKey<'a>,
    /// The verdict's reason code.
    pub reason_code: &'a str,
    /// The verdict in one line.
    pub summary: &'a str,
    /// `None` when allow-once may lift it, else why it may not.
    pub not_liftable_because: Option<&'a str>,
}

/// A recorded refusal and its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The code shown in the reason (`ABCD-EFGH`).
    pub code: String,
    /// The session.
    pub session_id: String,
    /// The client's tool name.
    pub tool_name: String,
    /// The canonical input text, redacted and bounded (for people to read; the grant binds
    /// `args_hash`).
    pub args: String,
    /// SHA-256 of the exact canonical input (`None` for refusals recorded before it existed,
    /// which no grant can then match).
    pub args_hash: Option<String>,
    /// The working directory.
    pub cwd: String,
    /// The verdict's reason code.
    pub reason_code: String,
    /// The verdict in one line.
    pub summary: String,
    /// Why allow-once may not lift it (`None`: it may).
    pub not_liftable_because: Option<String>,
    /// When the refusal was recorded (ms since the epoch).
    pub created_at: i64,
    /// When a person granted it.
    pub granted_at: Option<i64>,
    /// Until when the grant lets the call through.
    pub expires_at: Option<i64>,
    /// When the call it let through ran.
    pub used_at: Option<i64>,
}

/// What `grant` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantOutcome {
    /// Granted now; the offer as it is after the grant.
    Granted(Offer),
    /// No refusal has this code.
    Unknown,
    /// The refusal is of a kind allow-once never lifts.
    NotLiftable(Offer),
    /// The code was granted before (perhaps used, perhaps expired); codes are single-use.
    AlreadyGranted(Offer),
}

/// Hook mode's session state over the audit database (a SQLite path or a PostgreSQL URL).
#[derive(Clone)]
pub struct Ledger {
    db: Db,
    target: String,
    grant_key: Option<PathBuf>,
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// Normalises what a person typed (`abcd efgh`, `ABCDEFGH`, `abcd-efgh`) to the stored form,
/// or `None` when it cannot be a code.
pub fn normalize_code(text: &str) -> Option<String> {
    let chars: Vec<char> = text
        .chars()
        .filter(|c| !matches!(c, '-' | ' ' | '`'))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if chars.len() != 8 || !chars.iter().all(|c| ALPHABET.contains(&(*c as u8))) {
        return None;
    }
    let mut out: String = chars.iter().take(4).collect();
    out.push('-');
    out.extend(chars.iter().skip(4));
    Some(out)
}

/// A new code: 40 bits from the kernel's generator. Guessing one gains nothing by itself
/// (a code only names a refusal; a person must grant it), but it must not be predictable
/// from another code.
fn new_code() -> Result<String, std::io::Error> {
    let mut bytes = [0u8; 5];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let mut bits: u64 = bytes.iter().fold(0, |acc, b| (acc << 8) | u64::from(*b));
    let mut chars = [0u8; 8];
    for c in chars.iter_mut().rev() {
        let idx = usize::try_from(bits & 31).unwrap_or(0);
        *c = ALPHABET.get(idx).copied().unwrap_or(b'2');
        bits >>= 5;
    }
    let text: String = chars.iter().map(|b| char::from(*b)).collect();
    Ok(format!(
        "{}-{}",
        text.get(..4).unwrap_or(""),
        text.get(4..).unwrap_or("")
    ))
}

fn key_err(path: &Path, source: std::io::Error) -> Error {
    Error::GrantKey {
        path: path.display().to_string(),
        source,
    }
}

fn write_new_key(path: &Path) -> Result<Vec<u8>, Error> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| key_err(path, e))?;
    }
    let mut key = vec![0u8; KEY_LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(|e| key_err(path, e))?;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => {
            file.write_all(&key).map_err(|e| key_err(path, e))?;
            Ok(key)
        }
        // Another grant made it first: use that one.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::read(path).map_err(|e| key_err(path, e))
        }
        Err(e) => Err(key_err(path, e)),
    }
}

/// The hex SHA-256 of a call's canonical input: what a grant binds, so the input itself (which
/// may hold a secret) need not be stored.
fn args_hash(args: &str) -> String {
    use sha2::Digest as _;
    hex(&sha2::Sha256::digest(args.as_bytes()))
}

/// The grant's MAC over every field that binds it, each length-prefixed so no two field
/// lists encode alike.
fn grant_mac(
    key: &[u8],
    code: &str,
    session_id: &str,
    tool_name: &str,
    args_hash: &str,
    cwd: &str,
    expires_at: i64,
) -> Option<HmacSha256> {
    let mut mac = HmacSha256::new_from_slice(key).ok()?;
    for field in ["v2", code, session_id, tool_name, args_hash, cwd] {
        mac.update(&(field.len() as u64).to_be_bytes());
        mac.update(field.as_bytes());
    }
    mac.update(&expires_at.to_be_bytes());
    Some(mac)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
        })
        .collect()
}

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn u64_of(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

const SELECT_OFFER: &str = "SELECT code, session_id, tool_name, args, args_hash, cwd, \
     reason_code, summary, liftable, not_liftable_because, created_at, granted_at, expires_at, used_at \
     FROM agent_guard_allow_once";

fn offer_from<R>(row: &R) -> Result<Offer, sqlx::Error>
where
    R: sqlx::Row,
    &'static str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let liftable: i64 = row.try_get("liftable")?;
    let because: String = row.try_get("not_liftable_because")?;
    Ok(Offer {
        code: row.try_get("code")?,
        session_id: row.try_get("session_id")?,
        tool_name: row.try_get("tool_name")?,
        args: row.try_get("args")?,
        args_hash: row.try_get("args_hash")?,
        cwd: row.try_get("cwd")?,
        reason_code: row.try_get("reason_code")?,
        summary: row.try_get("summary")?,
        not_liftable_because: (liftable == 0).then_some(because),
        created_at: row.try_get("created_at")?,
        granted_at: row.try_get("granted_at")?,
        expires_at: row.try_get("expires_at")?,
        used_at: row.try_get("used_at")?,
    })
}

/// Counts a call of a session (SQLite's placeholders); `RETURNING` the new tally.
macro_rules! count_call_sql {
    ($a:literal, $b:literal, $c:literal, $d:literal) => {
        concat!(
            "INSERT INTO agent_guard_session_calls \
             (session_id, calls, last_tool, last_hash, run, ts) VALUES (",
            $a,
            ", 1, ",
            $b,
            ", ",
            $c,
            ", 1, ",
            $d,
            ")",
            " ON CONFLICT (session_id) DO UPDATE SET \
             calls = agent_guard_session_calls.calls + 1, \
             run = CASE WHEN agent_guard_session_calls.last_tool = excluded.last_tool \
                  AND agent_guard_session_calls.last_hash = excluded.last_hash \
                  THEN agent_guard_session_calls.run + 1 ELSE 1 END, \
             last_tool = excluded.last_tool, last_hash = excluded.last_hash, ts = excluded.ts \
             RETURNING calls, run"
        )
    };
}

/// A call counted on SQLite (prepared ahead by a process that holds the database).
pub(super) const COUNT_CALL_SQLITE: &str = count_call_sql!("?", "?", "?", "?");
const COUNT_CALL_POSTGRES: &str = count_call_sql!("$1", "$2", "$3", "$4");

impl Ledger {
    /// Opens (creating and migrating, without the integrity check a one-shot hook process
    /// should not pay) the database. Must be called inside a tokio runtime.
    pub async fn open(url_or_path: &str) -> Result<Ledger, Error> {
        let target = AuditTarget::parse(url_or_path);
        let db = Db::open(&target, Access::Control, &AuditOptions::default(), 1).await?;
        Ok(Ledger::with_db(db, target.to_string()))
    }

    /// The ledger on a database already opened by [`AuditDb::open`], sharing its connections.
    pub fn on(db: &AuditDb) -> Ledger {
        Ledger::with_db(db.db().clone(), db.target().to_string())
    }

    fn with_db(db: Db, target: String) -> Ledger {
        let grant_key = match std::env::var_os(GRANT_KEY_VAR) {
            Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
            _ => std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|h| h.is_absolute())
                .map(|h| h.join(GRANT_KEY_FILE)),
        };
        Ledger {
            db,
            target,
            grant_key,
        }
    }

    /// Signs and checks grants with the key in `path` instead of the default one.
    pub fn with_grant_key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.grant_key = Some(path.into());
        self
    }

    /// The grant key; `create` makes one (0600, in a 0700 directory) when there is none.
    /// `Ok(None)`: no key, so no grant can be valid.
    fn key(&self, create: bool) -> Result<Option<Vec<u8>>, Error> {
        let Some(path) = &self.grant_key else {
            return if create {
                Err(key_err(
                    Path::new("~/.agent-guard/grant.key"),
                    std::io::Error::other(format!("HOME is not set; set {GRANT_KEY_VAR}")),
                ))
            } else {
                Ok(None)
            };
        };
        match std::fs::read(path) {
            Ok(key) if key.len() == KEY_LEN => Ok(Some(key)),
            Ok(_) => Err(key_err(
                path,
                std::io::Error::other(format!("expected {KEY_LEN} bytes")),
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                write_new_key(path).map(Some)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(key_err(path, e)),
        }
    }

    /// The database, password removed.
    pub fn target(&self) -> &str {
        &self.target
    }

    fn err(&self) -> impl FnOnce(sqlx::Error) -> Error + '_ {
        move |source| Error::Database {
            path: self.target.clone(),
            source,
        }
    }

    /// Counts one call of `session`: `tool` with arguments whose canonical hash is `args_hash`.
    /// One atomic statement: the session's count and its run of identical consecutive calls
    /// (a call differing in tool or hash starts a new run of 1).
    pub async fn count_call(
        &self,
        session: &str,
        tool: &str,
        args_hash: &str,
    ) -> Result<Tally, Error> {
        let now = now_ms();
        let (calls, run): (i64, i64) = match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_as(COUNT_CALL_SQLITE)
                    .bind(session)
                    .bind(tool)
                    .bind(args_hash)
                    .bind(now)
                    .fetch_one(pool)
                    .await
            }
            Db::Postgres(pool) => {
                sqlx::query_as(COUNT_CALL_POSTGRES)
                    .bind(session)
                    .bind(tool)
                    .bind(args_hash)
                    .bind(now)
                    .fetch_one(pool)
                    .await
            }
        }
        .map_err(self.err())?;
        Ok(Tally {
            calls: u64_of(calls),
            run: u64_of(run),
        })
    }

    /// The session's tally so far, without counting (`None`: nothing counted yet).
    pub async fn tally(&self, session: &str) -> Result<Option<Tally>, Error> {
        let row: Option<(i64, i64)> = match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_as(
                    "SELECT calls, run FROM agent_guard_session_calls WHERE session_id = ?",
                )
                .bind(session)
                .fetch_optional(pool)
                .await
            }
            Db::Postgres(pool) => {
                sqlx::query_as(
                    "SELECT calls, run FROM agent_guard_session_calls WHERE session_id = $1",
                )
                .bind(session)
                .fetch_optional(pool)
                .await
            }
        }
        .map_err(self.err())?;
        Ok(row.map(|(calls, run)| Tally {
            calls: u64_of(calls),
            run: u64_of(run),
        }))
    }

    /// Records a refusal and returns its new code.
    pub async fn offer(&self, refusal: &Refusal<'_>) -> Result<String, Error> {
        let mut attempt = 0;
        loop {
            let code = new_code().map_err(|e| Error::Database {
                path: self.target.clone(),
                source: sqlx::Error::Io(e),
            })?;
            match self.insert_offer(&code, refusal).await {
                Ok(()) => return Ok(code),
                // A clash with an existing code (1 in 2^40 per row): draw again. Nothing else
                // is retried: a locked database has already been waited for.
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() && attempt < 2 => {
                    attempt += 1;
                }
                Err(e) => return Err(self.err()(e)),
            }
        }
    }

    async fn insert_offer(&self, code: &str, r: &Refusal<'_>) -> Result<(), sqlx::Error> {
        const COLUMNS: &str = "INSERT INTO agent_guard_allow_once (code, session_id, tool_name, \
             args, cwd, reason_code, summary, liftable, not_liftable_because, created_at, \
             args_hash)";
        let liftable = i64::from(r.not_liftable_because.is_none());
        // A refused input may hold a secret: only its redacted, bounded text is kept.
        let scanner = crate::SecretScanner::default_set();
        let (shown, pieces) = super::redact_any(scanner, r.key.args);
        let shown = super::mask_pieces(&shown, &pieces);
        let shown = super::cut_chars(&shown, super::INPUT_CHARS);
        // The summary quotes the input (word by word, where a detector cannot see a secret).
        let summary = super::mask_pieces(&scanner.redact(r.summary).text, &pieces);
        let hash = args_hash(r.key.args);
        let because = r.not_liftable_because.unwrap_or_default();
        let now = now_ms();
        match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "{COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                )))
                .bind(code)
                .bind(r.key.session_id)
                .bind(r.key.tool_name)
                .bind(&shown)
                .bind(r.key.cwd)
                .bind(r.reason_code)
                .bind(&summary)
                .bind(liftable)
                .bind(because)
                .bind(now)
                .bind(&hash)
                .execute(pool)
                .await?;
            }
            Db::Postgres(pool) => {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "{COLUMNS} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
                )))
                .bind(code)
                .bind(r.key.session_id)
                .bind(r.key.tool_name)
                .bind(&shown)
                .bind(r.key.cwd)
                .bind(r.reason_code)
                .bind(&summary)
                .bind(liftable)
                .bind(because)
                .bind(now)
                .bind(&hash)
                .execute(pool)
                .await?;
            }
        }
        Ok(())
    }

    /// The refusal recorded under `code` (as [`normalize_code`] gives it).
    pub async fn lookup(&self, code: &str) -> Result<Option<Offer>, Error> {
        let sql_sqlite = format!("{SELECT_OFFER} WHERE code = ?");
        let sql_pg = format!("{SELECT_OFFER} WHERE code = $1");
        match &self.db {
            Db::Sqlite(pool) => {
                let row = sqlx::query(sqlx::AssertSqlSafe(sql_sqlite))
                    .bind(code)
                    .fetch_optional(pool)
                    .await
                    .map_err(self.err())?;
                row.as_ref().map(offer_from).transpose().map_err(self.err())
            }
            Db::Postgres(pool) => {
                let row = sqlx::query(sqlx::AssertSqlSafe(sql_pg))
                    .bind(code)
                    .fetch_optional(pool)
                    .await
                    .map_err(self.err())?;
                row.as_ref().map(offer_from).transpose().map_err(self.err())
            }
        }
    }

    /// A person grants `code` at `now_ms` for `window`: its call may run once before
    /// `now_ms + window`. Only a liftable refusal never granted before is granted (one
    /// statement, so two racing grants cannot both succeed); otherwise the outcome says why.
    pub async fn grant(
        &self,
        code: &str,
        now_ms: i64,
        window: Duration,
    ) -> Result<GrantOutcome, Error> {
        let Some(offer) = self.lookup(code).await? else {
            return Ok(GrantOutcome::Unknown);
        };
        if offer.not_liftable_because.is_some() {
            return Ok(GrantOutcome::NotLiftable(offer));
        }
        if offer.granted_at.is_some() {
            return Ok(GrantOutcome::AlreadyGranted(offer));
        }
        let key = self.key(true)?.ok_or_else(|| {
            key_err(
                Path::new(GRANT_KEY_FILE),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let window_ms = i64_of(u64::try_from(window.as_millis()).unwrap_or(u64::MAX));
        let expires = now_ms.saturating_add(window_ms);
        let Some(hash) = offer.args_hash.as_deref() else {
            return Ok(GrantOutcome::NotLiftable(Offer {
                not_liftable_because: Some(
                    "it was recorded before this version of agent-guard; retry the call for a new code"
                        .to_owned(),
                ),
                ..offer
            }));
        };
        let mac = grant_mac(
            &key,
            code,
            &offer.session_id,
            &offer.tool_name,
            hash,
            &offer.cwd,
            expires,
        )
        .map(|m| hex(&m.finalize().into_bytes()))
        .unwrap_or_default();
        let granted: Option<String> = match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_scalar(
                    "UPDATE agent_guard_allow_once SET granted_at = ?, expires_at = ?, grant_mac = ? \
                     WHERE code = ? AND liftable = 1 AND granted_at IS NULL RETURNING code",
                )
                .bind(now_ms)
                .bind(expires)
                .bind(&mac)
                .bind(code)
                .fetch_optional(pool)
                .await
            }
            Db::Postgres(pool) => {
                sqlx::query_scalar(
                    "UPDATE agent_guard_allow_once SET granted_at = $1, expires_at = $2, grant_mac = $3 \
                     WHERE code = $4 AND liftable = 1 AND granted_at IS NULL RETURNING code",
                )
                .bind(now_ms)
                .bind(expires)
                .bind(&mac)
                .bind(code)
                .fetch_optional(pool)
                .await
            }
        }
        .map_err(self.err())?;
        let Some(offer) = self.lookup(code).await? else {
            return Ok(GrantOutcome::Unknown);
        };
        Ok(if granted.is_some() {
            GrantOutcome::Granted(offer)
        } else {
            // A racing grant of the same code won.
            GrantOutcome::AlreadyGranted(offer)
        })
    }

    /// Consumes a grant for exactly `key`, valid at `now_ms` and signed by the grant key, and
    /// returns its code; `None` when there is none. The consuming `UPDATE .. WHERE used_at IS
    /// NULL` is one statement: of two processes racing for one grant, one wins.
    pub async fn take_grant(
        &self,
        key: &CallKey<'_>,
        now_ms: i64,
    ) -> Result<Option<String>, Error> {
        let Some(secret) = self.key(false)? else {
            return Ok(None);
        };
        const WHERE: &str = "liftable = 1 AND granted_at IS NOT NULL AND used_at IS NULL";
        let hash = args_hash(key.args);
        let candidates: Vec<(String, i64, Option<String>)> = match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT code, expires_at, grant_mac FROM agent_guard_allow_once \
                     WHERE session_id = ? AND tool_name = ? AND args_hash = ? AND cwd = ? \
                     AND {WHERE} AND expires_at > ? ORDER BY granted_at"
                )))
                .bind(key.session_id)
                .bind(key.tool_name)
                .bind(&hash)
                .bind(key.cwd)
                .bind(now_ms)
                .fetch_all(pool)
                .await
            }
            Db::Postgres(pool) => {
                sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT code, expires_at, grant_mac FROM agent_guard_allow_once \
                     WHERE session_id = $1 AND tool_name = $2 AND args_hash = $3 AND cwd = $4 \
                     AND {WHERE} AND expires_at > $5 ORDER BY granted_at"
                )))
                .bind(key.session_id)
                .bind(key.tool_name)
                .bind(&hash)
                .bind(key.cwd)
                .bind(now_ms)
                .fetch_all(pool)
                .await
            }
        }
        .map_err(self.err())?;
        for (code, expires_at, mac) in candidates {
            let signed = match (
                grant_mac(
                    &secret,
                    &code,
                    key.session_id,
                    key.tool_name,
                    &hash,
                    key.cwd,
                    expires_at,
                ),
                mac.as_deref().and_then(unhex),
            ) {
                (Some(expected), Some(given)) => expected.verify_slice(&given).is_ok(),
                _ => false,
            };
            if !signed {
                // Written by something other than `agent-guard allow-once`: not a grant.
                continue;
            }
            // Single use by construction: the use is appended to a journal beside the key,
            // outside every root, before the grant lets anything through; a grant whose
            // `used_at` was reset in the database is still found there and refused.
            if self.used_journal_has(&code)? {
                continue;
            }
            self.append_used(&code)?;
            let used: Option<String> = match &self.db {
                Db::Sqlite(pool) => {
                    sqlx::query_scalar(
                        "UPDATE agent_guard_allow_once SET used_at = ? \
                         WHERE code = ? AND used_at IS NULL RETURNING code",
                    )
                    .bind(now_ms)
                    .bind(&code)
                    .fetch_optional(pool)
                    .await
                }
                Db::Postgres(pool) => {
                    sqlx::query_scalar(
                        "UPDATE agent_guard_allow_once SET used_at = $1 \
                         WHERE code = $2 AND used_at IS NULL RETURNING code",
                    )
                    .bind(now_ms)
                    .bind(&code)
                    .fetch_optional(pool)
                    .await
                }
            }
            .map_err(self.err())?;
            if used.is_some() {
                return Ok(used);
            }
        }
        Ok(None)
    }

    /// The append-only journal of used grant codes, beside the grant key.
    fn used_journal(&self) -> Option<PathBuf> {
        self.grant_key
            .as_ref()
            .map(|k| k.with_file_name(USED_JOURNAL_FILE))
    }

    fn used_journal_has(&self, code: &str) -> Result<bool, Error> {
        let Some(path) = self.used_journal() else {
            return Ok(false);
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(text.lines().any(|l| l == code)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(key_err(&path, e)),
        }
    }

    fn append_used(&self, code: &str) -> Result<(), Error> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let Some(path) = self.used_journal() else {
            return Err(key_err(
                Path::new(USED_JOURNAL_FILE),
                std::io::ErrorKind::NotFound.into(),
            ));
        };
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| key_err(&path, e))?;
        file.write_all(format!("{code}\n").as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| key_err(&path, e))
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.db.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_eight_readable_characters_and_differ() {
        let a = new_code().unwrap();
        let b = new_code().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 9);
        assert_eq!(normalize_code(&a).as_deref(), Some(a.as_str()));
        assert_eq!(
            normalize_code(&a.to_lowercase().replace('-', " ")).as_deref(),
            Some(a.as_str())
        );
    }

    #[test]
    fn normalize_refuses_what_cannot_be_a_code() {
        for bad in [
            "",
            "ABCD-EFG",
            "ABCD-EFGHJ",
            "ABCD-EFG0",
            "ABCD-EFGI",
            "ABCD;EFGH",
        ] {
            assert_eq!(normalize_code(bad), None, "{bad}");
        }
        assert_eq!(normalize_code("`abcd-efgh`").as_deref(), Some("ABCD-EFGH"));
    }
}
