//! The durable audit log: SQLite (the embedded default, WAL) or PostgreSQL (a fleet's shared
//! log), chosen by the target text, behind one batching writer task.
//!
//! Honesty rules: `written()` counts committed rows only; a row `record` acknowledged and the
//! database then refused is *lost*, a row `record` could not queue is *refused*, and `flush()` /
//! `shutdown()` return [`Error::Incomplete`] with both counts as soon as either is non-zero.

mod chainkey;
mod killswitch;
mod ledger;
mod postgres;
mod sqlite;
mod timeline;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use perm_rules::Decision;
use serde::{Deserialize, Serialize};
use sqlx::{ColumnIndex, Database, Decode, Encode, QueryBuilder, Row, Type};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

pub use chainkey::{AUDIT_KEY_FILE, ChainKey};
pub use killswitch::KillSwitch;
pub use ledger::{
    ALLOW_ONCE_WINDOW, CallKey, GRANT_KEY_FILE, GRANT_KEY_VAR, GrantOutcome, Ledger, Offer,
    Refusal, Tally, USED_JOURNAL_FILE, normalize_code,
};
pub use timeline::{CallEntry, Outcome, timeline};

use crate::error::Error;
use crate::hook::{
    AgentHook, HookResult, PostToolUseAction, PostToolUseContext, SessionStopContext,
};
use crate::redact::SecretScanner;

/// The audit database's file name inside the guard's state directory ([`state_dir`]), where it
/// lives when the policy does not say.
pub const DEFAULT_AUDIT_DB: &str = "audit.db";

/// How many characters of output an audit row keeps.
pub const OUTPUT_PREVIEW_CHARS: usize = 200;

/// How many characters of a call's input an audit row keeps (after redaction).
pub const INPUT_CHARS: usize = 2000;

/// How much of an input or output a row holds until [`AuditLog::record`] has masked its
/// secrets and cut it: whole JSON documents up to this size are redacted string by string.
const REDACT_WINDOW: usize = 64 * 1024;

/// The columns every backend stores, in bind order.
const COLUMN_LIST: &str = "session_id, step, tool_name, status, elapsed_ms, output_preview, \
     agent_name, decision, reason_code, ts, client, call_id, input, layer, resolved_by, \
     resolution, ref_code, prev_hash, row_hash, chain_key";

const SELECT_ROWS: &str = "SELECT id, session_id, step, tool_name, status, elapsed_ms, \
     output_preview, agent_name, decision, reason_code, ts, client, call_id, input, layer, \
     resolved_by, resolution, ref_code, prev_hash, row_hash, chain_key FROM agent_audit_log";

/// Portable SQL (no boolean sums, an explicit float cast) so both backends run the same text.
const SELECT_SUMMARY: &str = "SELECT tool_name, COUNT(*) AS calls, \
     SUM(CASE WHEN status = 'OK' THEN 1 ELSE 0 END) AS ok, \
     SUM(CASE WHEN status = 'FAIL' THEN 1 ELSE 0 END) AS fail, \
     SUM(CASE WHEN status = 'DENIED' THEN 1 ELSE 0 END) AS denied, \
     CAST(AVG(elapsed_ms) AS DOUBLE PRECISION) AS avg_ms, MAX(elapsed_ms) AS max_ms \
     FROM agent_audit_log";

/// The variable that moves the guard's state directory (tests, shared machines).
pub const STATE_DIR_VAR: &str = "AGENT_GUARD_STATE_DIR";

/// The guard's own state directory, outside every project root: `AGENT_GUARD_STATE_DIR`, else
/// `$XDG_STATE_HOME/agent-guard`, else `~/.local/state/agent-guard` (only absolute values
/// count, so a relative one cannot land it in a project). `None` without any of them.
pub fn state_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    var(STATE_DIR_VAR)
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("agent-guard")))
        .or_else(|| var("HOME").map(|h| h.join(".local/state/agent-guard")))
}

/// The audit database when the policy names none: [`DEFAULT_AUDIT_DB`] in [`state_dir`].
pub fn default_audit_db() -> Result<PathBuf, Error> {
    state_dir()
        .map(|d| d.join(DEFAULT_AUDIT_DB))
        .ok_or_else(|| Error::Config {
            key: "hooks.audit_db".to_owned(),
            message: format!(
                "no state directory for the audit log: set HOME, XDG_STATE_HOME or {STATE_DIR_VAR}, or name `audit_db` in the policy"
            ),
        })
}

/// Where an audit log lives: a SQLite file, or a PostgreSQL database named by URL.
#[derive(Clone, PartialEq, Eq)]
pub enum AuditTarget {
    /// A SQLite file (created on first write).
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

/// True for the URLs [`AuditTarget::parse`] sends to PostgreSQL.
pub fn is_postgres_url(text: &str) -> bool {
    let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

impl AuditTarget {
    /// `postgres://...` or `postgresql://...` is PostgreSQL; anything else is a SQLite path.
    pub fn parse(spec: impl AsRef<Path>) -> AuditTarget {
        let path = spec.as_ref();
        match path.to_str() {
            Some(text) if is_postgres_url(text) => AuditTarget::Postgres(text.to_owned()),
            _ => AuditTarget::Sqlite(path.to_owned()),
        }
    }

    /// A relative SQLite path joined to `base`; absolute paths and URLs are unchanged. Front
    /// ends resolve the policy's `hooks.audit_db` with this so a URL is never joined to a cwd.
    pub fn resolve(self, base: &Path) -> AuditTarget {
        match self {
            AuditTarget::Sqlite(p) if p.is_relative() => AuditTarget::Sqlite(base.join(p)),
            other => other,
        }
    }

    /// True for a PostgreSQL target.
    pub fn is_postgres(&self) -> bool {
        matches!(self, AuditTarget::Postgres(_))
    }
}

/// What [`AuditLog::open`], [`AuditReader::open`] accept: the path, or the URL as a path (which
/// parses back to the same target), so a resolved target can be opened directly.
impl AsRef<Path> for AuditTarget {
    fn as_ref(&self) -> &Path {
        match self {
            AuditTarget::Sqlite(path) => path,
            AuditTarget::Postgres(url) => Path::new(url),
        }
    }
}

/// The path, or the URL with any password replaced by `***` (safe for logs and errors).
impl fmt::Display for AuditTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditTarget::Sqlite(p) => write!(f, "{}", p.display()),
            AuditTarget::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

impl fmt::Debug for AuditTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AuditTarget({self})")
    }
}

fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

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
    /// Decided before the call ran (a hook's PreToolUse): allowed; its outcome row follows
    /// when the client reports that it ran.
    #[serde(rename = "ALLOWED")]
    Allowed,
    /// Decided before the call ran: the guard asked; `resolved_by` says who answered, or the
    /// outcome row says that it ran.
    #[serde(rename = "ASKED")]
    Asked,
}

impl AuditStatus {
    /// Every status, so that parsing reads the same table `as_str` writes.
    const ALL: [AuditStatus; 6] = [
        AuditStatus::Ok,
        AuditStatus::Fail,
        AuditStatus::Denied,
        AuditStatus::SessionStop,
        AuditStatus::Allowed,
        AuditStatus::Asked,
    ];

    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditStatus::Ok => "OK",
            AuditStatus::Fail => "FAIL",
            AuditStatus::Denied => "DENIED",
            AuditStatus::SessionStop => "SESSION_STOP",
            AuditStatus::Allowed => "ALLOWED",
            AuditStatus::Asked => "ASKED",
        }
    }
}

impl FromStr for AuditStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AuditStatus::ALL
            .into_iter()
            .find(|status| status.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown audit status `{s}` (expected ok, fail, denied, allowed, asked or session_stop)"
                )
            })
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
    /// The client whose hook recorded it (`claude-code`, `codex`, `gemini`); empty for the
    /// guard's own runtime.
    #[serde(default)]
    pub client: String,
    /// The client's id of the call: a decision row and its outcome row share it.
    #[serde(default)]
    pub call_id: String,
    /// The call's input as JSON text, redacted and cut to [`INPUT_CHARS`] when recorded.
    #[serde(default)]
    pub input: String,
    /// The layer whose finding decided (`perm-rules`, `bash-guard`, `allow-once`, ...).
    #[serde(default)]
    pub layer: Option<String>,
    /// Who decided or resolved the ask; any front end that resolves one fills it.
    #[serde(default)]
    pub resolved_by: Option<Resolver>,
    /// How, in words: the rule, the page, the grant's code.
    #[serde(default)]
    pub resolution: Option<String>,
    /// The refusal's reference (`Ref ABCD-EFGH`, the allow-once code) shown to the user.
    #[serde(default)]
    pub ref_code: Option<String>,
}

/// Who decided a call or answered its ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resolver {
    /// A policy rule (`resolution` names it).
    Rule,
    /// The guard's own layers or its default.
    Guard,
    /// A person: on the approval page, or at the client's own prompt.
    Person,
    /// Auto mode answered the ask.
    Auto,
    /// A person's allow-once grant (`resolution` holds its code).
    AllowOnce,
}

impl Resolver {
    /// Every resolver, so that parsing reads the same table `as_str` writes.
    const ALL: [Resolver; 5] = [
        Resolver::Rule,
        Resolver::Guard,
        Resolver::Person,
        Resolver::Auto,
        Resolver::AllowOnce,
    ];

    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Resolver::Rule => "rule",
            Resolver::Guard => "guard",
            Resolver::Person => "person",
            Resolver::Auto => "auto",
            Resolver::AllowOnce => "allow-once",
        }
    }
}

impl FromStr for Resolver {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Resolver::ALL
            .into_iter()
            .find(|resolver| resolver.as_str() == s)
            .ok_or_else(|| format!("unknown resolver `{s}`"))
    }
}

/// Cuts `output` to [`OUTPUT_PREVIEW_CHARS`] characters, on a char boundary.
pub fn output_preview(output: &str) -> String {
    cut_chars(output, OUTPUT_PREVIEW_CHARS)
}

fn cut_chars(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((end, _)) => text.get(..end).unwrap_or(text).to_owned(),
        None => text.to_owned(),
    }
}

/// Adds the lines of `secret` (a JSON-escaped `\n` counts as a line break) to `pieces`.
fn push_pieces(secret: &str, pieces: &mut Vec<String>) {
    for line in secret
        .split(['\n', '\r'])
        .flat_map(|l| l.split("\\n"))
        .flat_map(|l| l.split("\\r"))
    {
        let line = line.trim();
        if line.chars().count() >= 8 && !pieces.iter().any(|p| p == line) {
            pieces.push(line.to_owned());
        }
    }
}

/// `text` with its secrets masked, and the pieces of every secret found, line by line: a
/// message that quotes the input word by word (the guard's own reasons do) carries a secret's
/// lines without the context a detector needs, so those pieces are masked there too. JSON text
/// is redacted string by string (in its escaped form a `\n` hides the boundary before a
/// token), then as text.
pub(crate) fn redact_any(scanner: &SecretScanner, text: &str) -> (String, Vec<String>) {
    let mut pieces = Vec::new();
    let mut current = std::borrow::Cow::Borrowed(text);
    // Only escapes hide a boundary; text without a backslash is judged as it is, once.
    if text.starts_with(['{', '[', '"'])
        && text.contains('\\')
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(text)
    {
        let (masked, findings) = scanner.redact_json(&value);
        for f in &findings {
            if let Some(found) = value
                .pointer(&f.pointer)
                .and_then(serde_json::Value::as_str)
                .and_then(|s| s.get(f.span.clone()))
            {
                push_pieces(found, &mut pieces);
            }
        }
        if !findings.is_empty() {
            current = std::borrow::Cow::Owned(masked.to_string());
        }
    }
    let plain = scanner.redact(&current);
    for f in &plain.findings {
        if let Some(found) = current.get(f.span.clone()) {
            push_pieces(found, &mut pieces);
        }
    }
    let out = plain.text.into_owned();
    pieces.sort_by_key(|p| std::cmp::Reverse(p.len()));
    (out, pieces)
}

/// `text` with every piece masked.
pub(crate) fn mask_pieces(text: &str, pieces: &[String]) -> String {
    let mut out = text.to_owned();
    for p in pieces {
        if out.contains(p.as_str()) {
            out = out.replace(p.as_str(), "[REDACTED]");
        }
    }
    out
}

/// What a row may hold: secrets masked by the built-in detectors (the ones the redaction hook
/// runs), also where a message quotes the input's secrets in pieces, NUL (which PostgreSQL
/// text cannot hold) replaced, and the texts bounded. Applied by [`AuditLog::record`] to every
/// row, whoever built it.
fn sanitize(row: &mut AuditRow) {
    let scanner = SecretScanner::default_set();
    if may_hold_secret(scanner, row) {
        sanitize_scanned(scanner, row);
    } else {
        // What the scanner would leave of these texts: no finding, no pieces to mask.
        bound_in_place(&mut row.input, INPUT_CHARS);
        bound_in_place(&mut row.output_preview, OUTPUT_PREVIEW_CHARS);
        if let Some(r) = &mut row.resolution {
            bound_in_place(r, OUTPUT_PREVIEW_CHARS);
        }
        replace_nul(row);
    }
}

/// [`sanitize`] through the scanner, for a row [`may_hold_secret`] does not clear.
fn sanitize_scanned(scanner: &SecretScanner, row: &mut AuditRow) {
    let (input, mut pieces) = redact_any(scanner, &row.input);
    let (preview, more) = redact_any(scanner, &row.output_preview);
    pieces.extend(more);
    pieces.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let bound = |text: &str, limit: usize| -> String {
        cut_chars(&mask_pieces(text, &pieces), limit).replace('\0', "\u{fffd}")
    };
    row.input = bound(&input, INPUT_CHARS);
    row.output_preview = bound(&preview, OUTPUT_PREVIEW_CHARS);
    if let Some(r) = &row.resolution {
        row.resolution = Some(bound(&scanner.redact(r).text, OUTPUT_PREVIEW_CHARS));
    }
    replace_nul(row);
}

/// Whether the scanner could find anything in the texts [`sanitize`] redacts: an anchor of a
/// detector in one of them ([`SecretScanner::may_find`]), or an escape in JSON text, which
/// `redact_any` decodes before scanning (a `\u0041KIA...` hides its anchor from the raw text).
fn may_hold_secret(scanner: &SecretScanner, row: &AuditRow) -> bool {
    let json_escapes = |t: &str| t.starts_with(['{', '[', '"']) && t.contains('\\');
    [&row.input, &row.output_preview]
        .into_iter()
        .any(|t| json_escapes(t) || scanner.may_find(t))
        || row
            .resolution
            .as_deref()
            .is_some_and(|r| scanner.may_find(r))
}

/// `text` cut to `limit` characters with NUL replaced, as the scanned path bounds it, without
/// copying a text that needs neither (most rows).
fn bound_in_place(text: &mut String, limit: usize) {
    // A char is at least one byte: a text of at most `limit` bytes needs no cut.
    if text.len() > limit
        && let Some((end, _)) = text.char_indices().nth(limit)
    {
        text.truncate(end);
    }
    if text.contains('\0') {
        *text = text.replace('\0', "\u{fffd}");
    }
}

/// NUL, which PostgreSQL text cannot hold, out of the short fields.
fn replace_nul(row: &mut AuditRow) {
    for field in [
        &mut row.session_id,
        &mut row.tool_name,
        &mut row.agent_name,
        &mut row.client,
        &mut row.call_id,
    ] {
        if field.contains('\0') {
            *field = field.replace('\0', "\u{fffd}");
        }
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
            // More than the preview keeps: redaction needs the context after a secret's start;
            // `record` cuts to the preview after masking.
            output_preview: cut_chars(&ctx.output, REDACT_WINDOW),
            agent_name: ctx.agent_name.clone(),
            decision: Some(Decision::Allow),
            reason_code: None,
            ts: now_ms(),
            client: String::new(),
            call_id: ctx.tool_call_id.clone(),
            input: input_text(&ctx.args),
            layer: None,
            resolved_by: None,
            resolution: None,
            ref_code: None,
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
            client: String::new(),
            call_id: String::new(),
            input: String::new(),
            layer: None,
            resolved_by: None,
            resolution: None,
            ref_code: None,
        }
    }

    /// A decision row, written when a call is judged (a hook's PreToolUse): status `ALLOWED`,
    /// `ASKED` or `DENIED` from `decision`; the outcome row (`OK`/`FAIL`) follows with the
    /// same `call_id` if it runs. Fill the other fields (`session_id`, `tool_name`,
    /// `call_id`, [`AuditRow::set_input`], `client`, `layer`, `resolved_by`, `ref_code`, ...)
    /// on the returned row.
    pub fn decided(decision: Decision, reason_code: &str, message: &str) -> Self {
        AuditRow {
            session_id: String::new(),
            step: 0,
            tool_name: String::new(),
            status: match decision {
                Decision::Allow => AuditStatus::Allowed,
                Decision::Ask => AuditStatus::Asked,
                Decision::Deny => AuditStatus::Denied,
            },
            elapsed_ms: 0,
            output_preview: cut_chars(message, REDACT_WINDOW),
            agent_name: "lead".to_owned(),
            decision: Some(decision),
            reason_code: Some(reason_code.to_owned()),
            ts: now_ms(),
            client: String::new(),
            call_id: String::new(),
            input: String::new(),
            layer: None,
            resolved_by: None,
            resolution: None,
            ref_code: None,
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
            client: String::new(),
            call_id: String::new(),
            input: String::new(),
            layer: None,
            resolved_by: None,
            resolution: None,
            ref_code: None,
        }
    }
}

impl AuditRow {
    /// Sets the call's input (its JSON text; [`AuditLog::record`] redacts and bounds it).
    pub fn set_input(&mut self, input: &serde_json::Value) {
        self.input = input_text(input);
    }
}

/// A call's input as stored text: a JSON string as itself, anything else as JSON, cut well
/// past [`INPUT_CHARS`] here (redaction then sees whole secrets) and to it when recorded.
fn input_text(input: &serde_json::Value) -> String {
    let text = match input {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    cut_chars(&text, REDACT_WINDOW)
}

/// A stored row with its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// The row id (insertion order).
    pub id: i64,
    /// The row.
    #[serde(flatten)]
    pub row: AuditRow,
    /// The previous row's `row_hash` (empty for the first chained row); `None` for rows
    /// written before the chain.
    pub prev_hash: Option<String>,
    /// The row's link: HMAC-SHA256 under the chain key over `prev_hash` and the row
    /// ([`ChainKey::link`]); for rows linked before the key, SHA-256 ([`chain_hash`]).
    pub row_hash: Option<String>,
    /// The id of the key that linked the row ([`ChainKey::id`]); `None` for an unkeyed link.
    #[serde(default)]
    pub chain_key: Option<String>,
}

/// The unkeyed link of `row` after `prev`, as rows were linked before the chain had a key:
/// SHA-256 over the previous hash and every stored field, each length-prefixed so no two rows
/// encode alike. Hex. Kept to check such rows before they are re-linked under the key.
pub fn chain_hash(prev: &str, row: &AuditRow) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    encode_link(b"agent-guard audit v1", prev, row, &mut |b| h.update(b));
    chainkey::hex(&h.finalize())
}

/// Feeds the link's input to `out`: `tag`, `prev` and every stored field, each
/// length-prefixed.
fn encode_link(tag: &[u8], prev: &str, row: &AuditRow, out: &mut dyn FnMut(&[u8])) {
    let mut field = |bytes: &[u8]| {
        out(&(bytes.len() as u64).to_be_bytes());
        out(bytes);
    };
    field(tag);
    field(prev.as_bytes());
    field(row.session_id.as_bytes());
    field(&i64::from(row.step).to_be_bytes());
    field(row.tool_name.as_bytes());
    field(row.status.as_str().as_bytes());
    field(
        &i64::try_from(row.elapsed_ms)
            .unwrap_or(i64::MAX)
            .to_be_bytes(),
    );
    field(row.output_preview.as_bytes());
    field(row.agent_name.as_bytes());
    field(row.decision.map(Decision::as_str).unwrap_or("-").as_bytes());
    field(row.reason_code.as_deref().unwrap_or("\u{0}-").as_bytes());
    field(&row.ts.to_be_bytes());
    field(row.client.as_bytes());
    field(row.call_id.as_bytes());
    field(row.input.as_bytes());
    for opt in [&row.layer, &row.resolution, &row.ref_code] {
        field(opt.as_deref().unwrap_or("\u{0}-").as_bytes());
    }
    field(
        row.resolved_by
            .map(Resolver::as_str)
            .unwrap_or("-")
            .as_bytes(),
    );
}

/// The rows of a batch with their keyed links, starting after `prev`.
fn chain(key: &ChainKey, prev: &str, rows: &[AuditRow]) -> Vec<(String, String)> {
    let mut prev = prev.to_owned();
    rows.iter()
        .map(|row| {
            let hash = key.link(&prev, row);
            (std::mem::replace(&mut prev, hash.clone()), hash)
        })
        .collect()
}

/// The new links of a log whose rows were all linked before the key (plain SHA-256, or no
/// link at all from before the chain): `(id, prev, link)` per row, in id order, once the
/// unkeyed chain checks. `None` when there is nothing to re-link, when any row is keyed
/// already, or when the unkeyed chain is broken: re-linking would vouch for a row someone
/// changed, so those rows stay as they are and `verify` keeps reporting them.
fn relink_plan(records: &[AuditRecord], key: &ChainKey) -> Option<Vec<(i64, String, String)>> {
    if records.is_empty() || records.iter().any(|r| r.chain_key.is_some()) {
        return None;
    }
    let legacy = verify_unkeyed(records);
    if !legacy.is_intact() {
        tracing::warn!(
            problems = ?legacy.problems,
            "the audit log's unkeyed chain is broken: its rows are not re-linked under the key"
        );
        return None;
    }
    let mut prev = String::new();
    Some(
        records
            .iter()
            .map(|r| {
                let link = key.link(&prev, &r.row);
                (r.id, std::mem::replace(&mut prev, link.clone()), link)
            })
            .collect(),
    )
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
    /// Only this permission decision.
    pub decision: Option<Decision>,
    /// Only rows with `ts >= since` (ms since the epoch).
    pub since: Option<i64>,
    /// Only rows with `ts < until` (ms since the epoch).
    pub until: Option<i64>,
    /// At most this many rows (the oldest first).
    pub limit: Option<u32>,
    /// Only this client (`claude-code`, `codex`, `gemini`; empty: the runtime).
    pub client: Option<String>,
    /// Only the row a refusal's reference names (`ABCD-EFGH`), and the rows of its call.
    pub ref_code: Option<String>,
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
    /// How long `record` waits on a full queue before the row counts as refused.
    pub enqueue_timeout: Duration,
    /// How long the database may keep the writer waiting before the rows in hand count as lost:
    /// SQLite's busy timeout on a locked file; for PostgreSQL, the lock timeout and the time
    /// spent retrying (with backoff) while the server is unreachable, e.g. restarting.
    pub write_timeout: Duration,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            queue_capacity: 8192,
            // Big enough that a slow commit (a busy server, fsync) is paid per thousands of
            // rows; PostgreSQL's throughput rose ~25% from 1024 on the bench.
            max_batch: 4096,
            enqueue_timeout: Duration::from_millis(200),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// What became of a recorded row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Queued (acknowledged): it is written, or counted in [`AuditLog::lost`] and reported by
    /// [`AuditLog::flush`] / [`AuditLog::shutdown`].
    Queued,
    /// The queue stayed full past the timeout, or the log was shut down; counted in
    /// [`AuditLog::dropped`].
    Dropped,
}

/// A connection pool on one of the backends.
#[derive(Debug, Clone)]
enum Db {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

/// What opening may do to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// The audit writer: create, check integrity, migrate.
    Write,
    /// Readers: an existing database only (migrated to the schema this build reads).
    Read,
    /// A guard's shared database ([`AuditDb`]), the kill switch and the ledger: create and
    /// migrate, but skip SQLite's integrity check, whose cost grows with the log and would be
    /// paid by every one-shot hook process. The schema check (cheap) runs at every open.
    Control,
}

impl Db {
    async fn open(
        target: &AuditTarget,
        access: Access,
        options: &AuditOptions,
        max_connections: u32,
    ) -> Result<Db, Error> {
        let options = &AuditOptions {
            write_timeout: lock_wait(options.write_timeout),
            ..*options
        };
        match target {
            AuditTarget::Sqlite(path) => {
                sqlite::open(path, &target.to_string(), access, options, max_connections)
                    .await
                    .map(Db::Sqlite)
            }
            AuditTarget::Postgres(url) => {
                postgres::open(url, &target.to_string(), access, options, max_connections)
                    .await
                    .map(Db::Postgres)
            }
        }
    }

    /// SQLite takes the rows (leaving `rows` empty): its failures are never retried
    /// ([`Db::is_transient`]). PostgreSQL only reads them, for a retry.
    async fn write_batch(
        &self,
        rows: &mut Vec<AuditRow>,
        key: &ChainKey,
        timeout: Duration,
    ) -> Result<(), sqlx::Error> {
        match self {
            Db::Sqlite(pool) => sqlite::write_batch(pool, std::mem::take(rows), key).await,
            Db::Postgres(pool) => postgres::write_batch(pool, rows, key, timeout).await,
        }
    }

    /// Re-links a log written before the chain had a key ([`relink_plan`]). Cheap when there
    /// is nothing to do: one look at the last row, which a keyed writer has linked.
    async fn relink_legacy(&self, key: &ChainKey) -> Result<(), sqlx::Error> {
        const LAST_KEY: &str = "SELECT chain_key FROM agent_audit_log ORDER BY id DESC LIMIT 1";
        const SET_LINK_SQLITE: &str =
            "UPDATE agent_audit_log SET prev_hash = ?, row_hash = ?, chain_key = ? WHERE id = ?";
        const SET_LINK_PG: &str = "UPDATE agent_audit_log SET prev_hash = $1, row_hash = $2, \
             chain_key = $3 WHERE id = $4";
        match self {
            Db::Sqlite(pool) => {
                let last: Option<Option<String>> =
                    sqlx::query_scalar(LAST_KEY).fetch_optional(pool).await?;
                if !matches!(last, Some(None)) {
                    return Ok(());
                }
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                let rows = QueryBuilder::new(SELECT_ROWS)
                    .push(" ORDER BY id")
                    .build()
                    .fetch_all(&mut *tx)
                    .await?;
                let records = rows
                    .iter()
                    .map(record_from)
                    .collect::<Result<Vec<_>, _>>()?;
                for (id, prev, link) in relink_plan(&records, key).unwrap_or_default() {
                    sqlx::query(SET_LINK_SQLITE)
                        .bind(prev)
                        .bind(link)
                        .bind(key.id())
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await
            }
            Db::Postgres(pool) => {
                let last: Option<Option<String>> =
                    sqlx::query_scalar(LAST_KEY).fetch_optional(pool).await?;
                if !matches!(last, Some(None)) {
                    return Ok(());
                }
                let mut tx = pool.begin().await?;
                postgres::lock_chain(&mut tx).await?;
                let rows = QueryBuilder::new(SELECT_ROWS)
                    .push(" ORDER BY id")
                    .build()
                    .fetch_all(&mut *tx)
                    .await?;
                let records = rows
                    .iter()
                    .map(record_from)
                    .collect::<Result<Vec<_>, _>>()?;
                for (id, prev, link) in relink_plan(&records, key).unwrap_or_default() {
                    sqlx::query(SET_LINK_PG)
                        .bind(prev)
                        .bind(link)
                        .bind(key.id())
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await
            }
        }
    }

    /// Errors worth retrying: the server went away or is restarting. A SQLite lock has
    /// already been waited for (its busy timeout), so nothing there is retried (and
    /// [`Db::write_batch`] has taken the rows).
    fn is_transient(&self, err: &sqlx::Error) -> bool {
        match self {
            Db::Sqlite(_) => false,
            Db::Postgres(_) => postgres::is_transient(err),
        }
    }

    async fn query(&self, q: &AuditQuery) -> Result<Vec<AuditRecord>, sqlx::Error> {
        match self {
            Db::Sqlite(pool) => {
                let mut qb = QueryBuilder::new(SELECT_ROWS);
                push_filters(&mut qb, q);
                push_order_limit(&mut qb, q);
                let rows = qb.build().fetch_all(pool).await?;
                rows.iter().map(record_from).collect()
            }
            Db::Postgres(pool) => {
                let mut qb = QueryBuilder::new(SELECT_ROWS);
                push_filters(&mut qb, q);
                push_order_limit(&mut qb, q);
                let rows = qb.build().fetch_all(pool).await?;
                rows.iter().map(record_from).collect()
            }
        }
    }

    async fn summary(&self, q: &AuditQuery) -> Result<Vec<ToolSummary>, sqlx::Error> {
        match self {
            Db::Sqlite(pool) => {
                let mut qb = QueryBuilder::new(SELECT_SUMMARY);
                push_filters(&mut qb, q);
                qb.push(" GROUP BY tool_name ORDER BY tool_name");
                let rows = qb.build().fetch_all(pool).await?;
                rows.iter().map(summary_from).collect()
            }
            Db::Postgres(pool) => {
                let mut qb = QueryBuilder::new(SELECT_SUMMARY);
                push_filters(&mut qb, q);
                qb.push(" GROUP BY tool_name ORDER BY tool_name");
                let rows = qb.build().fetch_all(pool).await?;
                rows.iter().map(summary_from).collect()
            }
        }
    }

    async fn close(&self) {
        match self {
            Db::Sqlite(pool) => pool.close().await,
            Db::Postgres(pool) => pool.close().await,
        }
    }

    /// For a process that exits without closing (see [`AuditLog::flush_for_exit`]): when the
    /// SQLite write-ahead log has grown past [`WAL_TRIM_BYTES`], copies it into the database
    /// and empties it, so the next process's recovery of the log (it reads all of it) stays
    /// short. A busy database is left for a later call; PostgreSQL has nothing to do.
    async fn trim_log(&self) {
        let Db::Sqlite(pool) = self else {
            return;
        };
        let mut wal = pool.connect_options().get_filename().as_os_str().to_owned();
        wal.push("-wal");
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_TRIM_BYTES) {
            let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(pool)
                .await;
        }
    }
}

/// How large a SQLite write-ahead log a hook process leaves behind before it checkpoints it:
/// every process that opens the database first replays the whole log (reading it is about a
/// millisecond per 1 MiB here), and a checkpoint costs two `fsync`s (several milliseconds).
/// A hook call adds about 40 KiB, so one call in six or so pays the checkpoint.
const WAL_TRIM_BYTES: u64 = 256 * 1024;

/// Filters shared by both backends (the builder picks `?` or `$n` placeholders).
fn push_filters<DB: Database>(qb: &mut QueryBuilder<DB>, q: &AuditQuery)
where
    for<'t> String: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    qb.push(" WHERE 1 = 1");
    if let Some(session) = &q.session_id {
        qb.push(" AND session_id = ").push_bind(session.clone());
    }
    if let Some(tool) = &q.tool_name {
        qb.push(" AND tool_name = ").push_bind(tool.clone());
    }
    if let Some(status) = q.status {
        qb.push(" AND status = ")
            .push_bind(status.as_str().to_owned());
    }
    if let Some(decision) = q.decision {
        qb.push(" AND decision = ")
            .push_bind(decision.as_str().to_owned());
    }
    if let Some(since) = q.since {
        qb.push(" AND ts >= ").push_bind(since);
    }
    if let Some(until) = q.until {
        qb.push(" AND ts < ").push_bind(until);
    }
    if let Some(client) = &q.client {
        qb.push(" AND client = ").push_bind(client.clone());
    }
    if let Some(code) = &q.ref_code {
        // The refusal's row, and the other rows of the same client call (same session and
        // call id), so its timeline shows what came of it.
        qb.push(" AND (ref_code = ")
            .push_bind(code.clone())
            .push(
                " OR (call_id <> '' AND EXISTS (SELECT 1 FROM agent_audit_log r \
                 WHERE r.ref_code = ",
            )
            .push_bind(code.clone())
            .push(
                " AND r.session_id = agent_audit_log.session_id \
                 AND r.call_id = agent_audit_log.call_id)))",
            );
    }
}

fn push_order_limit<DB: Database>(qb: &mut QueryBuilder<DB>, q: &AuditQuery)
where
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    qb.push(" ORDER BY id");
    if let Some(limit) = q.limit {
        qb.push(" LIMIT ").push_bind(i64::from(limit));
    }
}

fn parse_decision(s: &str) -> Option<Decision> {
    match s {
        "allow" => Some(Decision::Allow),
        "ask" => Some(Decision::Ask),
        "deny" => Some(Decision::Deny),
        _ => None,
    }
}

fn record_from<R: Row>(row: &R) -> Result<AuditRecord, sqlx::Error>
where
    &'static str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let status: String = row.try_get("status")?;
    let status = status
        .parse()
        .map_err(|e: String| sqlx::Error::ColumnDecode {
            index: "status".to_owned(),
            source: e.into(),
        })?;
    let decision: Option<String> = row.try_get("decision")?;
    let resolved_by: Option<String> = row.try_get("resolved_by")?;
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
            client: row.try_get("client")?,
            call_id: row.try_get("call_id")?,
            input: row.try_get("input")?,
            layer: row.try_get("layer")?,
            resolved_by: resolved_by.as_deref().and_then(|r| r.parse().ok()),
            resolution: row.try_get("resolution")?,
            ref_code: row.try_get("ref_code")?,
        },
        prev_hash: row.try_get("prev_hash")?,
        row_hash: row.try_get("row_hash")?,
        chain_key: row.try_get("chain_key")?,
    })
}

fn summary_from<R: Row>(row: &R) -> Result<ToolSummary, sqlx::Error>
where
    &'static str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> f64: Decode<'r, R::Database> + Type<R::Database>,
{
    let count = |col: &'static str| -> Result<u64, sqlx::Error> {
        let v: Option<i64> = row.try_get(col)?;
        Ok(u64::try_from(v.unwrap_or(0)).unwrap_or(0))
    };
    Ok(ToolSummary {
        tool_name: row.try_get("tool_name")?,
        calls: count("calls")?,
        ok: count("ok")?,
        fail: count("fail")?,
        denied: count("denied")?,
        avg_elapsed_ms: row.try_get::<Option<f64>, _>("avg_ms")?.unwrap_or(0.0),
        max_elapsed_ms: count("max_ms")?,
    })
}

enum Msg {
    Row(Box<AuditRow>),
    Flush(oneshot::Sender<()>),
    Stop(oneshot::Sender<()>),
}

/// What happened to the rows handed to the log; read by `flush`, `shutdown` and the getters.
#[derive(Default)]
struct Counters {
    written: AtomicU64,
    lost: AtomicU64,
    refused: AtomicU64,
    /// `lost + refused`, shared with [`crate::MetricsHook`].
    dropped: Arc<AtomicU64>,
    last_error: Mutex<Option<String>>,
}

impl Counters {
    fn note_error(&self, cause: String) {
        *self
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cause);
    }

    fn check(&self, target: &str) -> Result<(), Error> {
        let lost = self.lost.load(Ordering::Acquire);
        let refused = self.refused.load(Ordering::Acquire);
        if lost == 0 && refused == 0 {
            return Ok(());
        }
        let cause = self
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "unknown".to_owned());
        Err(Error::Incomplete {
            target: target.to_owned(),
            lost,
            refused,
            cause,
        })
    }
}

struct Shared {
    target: String,
    db: Db,
    tx: mpsc::Sender<Msg>,
    counters: Arc<Counters>,
    closed: AtomicBool,
    writer: Mutex<Option<JoinHandle<()>>>,
    options: AuditOptions,
}

/// One audit database, opened and checked once (integrity, schema, migrations) and shared by
/// the [`AuditLog`], the [`Ledger`] and the [`KillSwitch`] of one guard: a hook process pays
/// one open, not three.
#[derive(Clone)]
pub struct AuditDb {
    db: Db,
    /// Where it is (a PostgreSQL URL with its password: the kill switch's listener connects
    /// there itself; shown without it).
    target: AuditTarget,
    options: AuditOptions,
    key: ChainKey,
    /// For a database held across calls ([`AuditDb::open_held`]): what
    /// [`AuditDb::is_current`] compares.
    held: Option<Held>,
}

/// What a held SQLite database was when its open checked it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Held {
    /// The file at the path (device, inode).
    file: (u64, u64),
    /// SQLite's `schema_version`: every change to the schema (a migration, a planted trigger)
    /// changes it.
    schema_version: i64,
    /// The key file it was opened with (it follows `HOME`).
    key_path: PathBuf,
}

impl fmt::Debug for AuditDb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditDb")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl AuditDb {
    /// Opens the database at `target` (a SQLite path or a PostgreSQL URL) for writing, as
    /// [`AuditLog::open`] does. Must be called inside a tokio runtime.
    ///
    /// Unlike [`AuditLog::open`] it does not run SQLite's integrity check over the whole file:
    /// a guard is built per hook call, and that check grows with the log (12 ms at 20,000
    /// rows, on every tool call). SQLite still refuses any damaged page a call reads (the
    /// schema, the last link, the session's ledger rows), the schema check runs at every open,
    /// and `agent-guard audit --verify` checks the whole file.
    pub async fn open(target: impl AsRef<Path>) -> Result<AuditDb, Error> {
        let key = ChainKey::load_or_create(&ChainKey::default_path()?)?;
        AuditDb::open_keyed(
            target,
            AuditOptions::default(),
            key,
            Access::Control,
            POOL_SIZE,
        )
        .await
    }

    async fn open_keyed(
        target: impl AsRef<Path>,
        options: AuditOptions,
        key: ChainKey,
        access: Access,
        connections: u32,
    ) -> Result<AuditDb, Error> {
        let target = AuditTarget::parse(target);
        let options = AuditOptions {
            write_timeout: lock_wait(options.write_timeout),
            ..options
        };
        let db = Db::open(&target, access, &options, connections).await?;
        // Not fatal: a role without UPDATE (a fleet's INSERT/SELECT grants) or a held lock
        // leaves the old rows unkeyed, which `verify` reports; the log itself still works.
        if let Err(err) = db.relink_legacy(&key).await {
            tracing::warn!(target_db = %target, "audit rows linked before the key were not re-linked: {err}");
        }
        Ok(AuditDb {
            db,
            target,
            options,
            key,
            held: None,
        })
    }

    /// Opens the SQLite database at `path` as [`AuditDb::open`] does, for a process that keeps
    /// it across calls (the resident hook guard opens it while it waits for a call): a call
    /// first asks [`AuditDb::is_current`], and opens the database again when it is not.
    pub async fn open_held(path: &Path) -> Result<AuditDb, Error> {
        AuditDb::open_held_keyed(path, ChainKey::default_path()?).await
    }

    async fn open_held_keyed(path: &Path, key_path: PathBuf) -> Result<AuditDb, Error> {
        let key = ChainKey::load_or_create(&key_path)?;
        let target = AuditTarget::Sqlite(path.to_owned());
        // One connection: a held database serves one call at a time, and every statement of
        // the call then finds the parse and the pages its open and `prepare_calls` left in
        // that connection (a pool hands out its idle connections in turn).
        let mut db =
            AuditDb::open_keyed(&target, AuditOptions::default(), key, Access::Control, 1).await?;
        let Db::Sqlite(pool) = &db.db else {
            return Err(Error::Config {
                key: "hooks.audit_db".to_owned(),
                message: format!("{target} is not a SQLite file"),
            });
        };
        let schema_version = sqlite::schema_version(pool).await.map_err(db.err())?;
        let file = file_identity(path).map_err(|e| db.err()(sqlx::Error::Io(e)))?;
        db.held = Some(Held {
            file,
            schema_version,
            key_path,
        });
        Ok(db)
    }

    /// For a database from [`AuditDb::open_held`]: prepares the statements a guarded call runs
    /// on each connection the database may use, while the process waits for its next call
    /// (parsing them was a fifth of a call's time in the database). No effect on PostgreSQL,
    /// whose server keeps its own plans.
    pub async fn prepare_calls(&self) -> Result<(), Error> {
        match &self.db {
            Db::Sqlite(pool) => sqlite::prepare_calls(pool, &[ledger::COUNT_CALL_SQLITE])
                .await
                .map_err(self.err()),
            Db::Postgres(_) => Ok(()),
        }
    }

    /// For a database from [`AuditDb::open_held`]: whether it is still the file at its path,
    /// with the schema its open checked, and the key this process's `HOME` names. False when
    /// the file was replaced or removed, its schema changed since (another build's migration,
    /// or an object planted in it), or for a database not held: the caller opens it again,
    /// which checks everything.
    pub async fn is_current(&self) -> bool {
        match ChainKey::default_path() {
            Ok(key_path) => self.is_current_with(&key_path).await,
            Err(_) => false,
        }
    }

    async fn is_current_with(&self, key_path: &Path) -> bool {
        let (Some(held), Db::Sqlite(pool), AuditTarget::Sqlite(path)) =
            (&self.held, &self.db, &self.target)
        else {
            return false;
        };
        held.key_path == key_path
            && file_identity(path).is_ok_and(|file| file == held.file)
            && sqlite::schema_version(pool)
                .await
                .is_ok_and(|version| version == held.schema_version)
    }

    /// Where the database is.
    pub fn target(&self) -> &AuditTarget {
        &self.target
    }

    fn db(&self) -> &Db {
        &self.db
    }

    fn err(&self) -> impl FnOnce(sqlx::Error) -> Error + '_ {
        move |source| Error::Database {
            path: self.target.to_string(),
            source,
        }
    }
}

/// The file at `path` (device, inode), following no symbolic link.
fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::symlink_metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// The audit log: a cheap-to-clone handle on one database and its writer task.
#[derive(Clone)]
pub struct AuditLog {
    shared: Arc<Shared>,
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditLog")
            .field("target", &self.shared.target)
            .finish_non_exhaustive()
    }
}

/// The longest any one database wait may take in this process, in ms (0: no cap).
static LOCK_WAIT_MS: AtomicU64 = AtomicU64::new(0);

/// Caps every database wait of this process (SQLite's busy timeout, PostgreSQL's lock timeout
/// and outage retries) at `limit`, for every log, ledger and kill switch opened afterwards. A
/// hook process sets it so that a lock held by another process costs it a bounded, small
/// part of its deadline, whatever the database does.
pub fn set_lock_wait(limit: Duration) {
    let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX).max(1);
    LOCK_WAIT_MS.store(ms, Ordering::Release);
}

/// `default`, capped by [`set_lock_wait`].
pub(crate) fn lock_wait(default: Duration) -> Duration {
    match LOCK_WAIT_MS.load(Ordering::Acquire) {
        0 => default,
        ms => default.min(Duration::from_millis(ms)),
    }
}

/// What [`AuditReader::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// Rows read.
    pub rows: u64,
    /// Rows whose keyed link checked.
    pub chained: u64,
    /// Rows without a keyed link: linked before the key and not re-linked (their unkeyed
    /// chain was broken), or written by other means. Each is also a problem.
    pub unkeyed: u64,
    /// Rows linked under another key than the one checked with. Each is also a problem.
    pub foreign: u64,
    /// What does not check, first problems first (at most [`VerifyReport::MAX_PROBLEMS`]).
    pub problems: Vec<String>,
    /// How many rows failed, in all.
    pub broken: u64,
}

impl VerifyReport {
    /// Problems kept in [`VerifyReport::problems`].
    pub const MAX_PROBLEMS: usize = 20;

    /// True when every row carries a link under the key that checks.
    pub fn is_intact(&self) -> bool {
        self.broken == 0
    }

    fn fail(&mut self, what: String) {
        self.broken += 1;
        if self.problems.len() < Self::MAX_PROBLEMS {
            self.problems.push(what);
        }
    }
}

/// Checks the keyed chain over `records`, in id order: every row must carry a link under
/// `key` that follows the row before it. A row with an unkeyed link (or none) fails: anyone
/// who can write the database can compute one.
fn verify_records(records: &[AuditRecord], key: &ChainKey) -> VerifyReport {
    let mut report = VerifyReport::default();
    let mut last = String::new();
    for r in records {
        report.rows += 1;
        let (Some(hash), Some(key_id)) = (&r.row_hash, &r.chain_key) else {
            report.unkeyed += 1;
            report.fail(format!(
                "row {} has no keyed link (linked before the key and not re-linked, or \
                 written by other means)",
                r.id
            ));
            last = r.row_hash.clone().unwrap_or_default();
            continue;
        };
        let prev = r.prev_hash.clone().unwrap_or_default();
        if key_id != key.id() {
            report.foreign += 1;
            report.fail(format!(
                "row {} was linked under another key (id {key_id}; yours is {}): check it \
                 with that key, or it was rewritten",
                r.id,
                key.id()
            ));
        } else if prev != last {
            report.fail(format!(
                "row {} does not follow the row before it (a row was deleted or inserted before it)",
                r.id
            ));
        } else if key.link(&prev, &r.row) != *hash {
            report.fail(format!("row {} was changed after it was written", r.id));
        } else {
            report.chained += 1;
        }
        last.clone_from(hash);
    }
    report
}

/// Checks the unkeyed chain of a log written before the key: rows without a link (from
/// before the chain) may only precede the linked ones.
fn verify_unkeyed(records: &[AuditRecord]) -> VerifyReport {
    let mut report = VerifyReport::default();
    let mut last: Option<String> = None;
    for r in records {
        report.rows += 1;
        let Some(hash) = &r.row_hash else {
            if last.is_some() {
                report.fail(format!(
                    "row {} has no link after chained rows (inserted by other means)",
                    r.id
                ));
            } else {
                report.unkeyed += 1;
            }
            continue;
        };
        let expected_prev = last.clone().unwrap_or_default();
        let prev = r.prev_hash.clone().unwrap_or_default();
        if prev != expected_prev {
            report.fail(format!(
                "row {} does not follow the row before it (a row was deleted or inserted before it)",
                r.id
            ));
        } else if chain_hash(&prev, &r.row) != *hash {
            report.fail(format!("row {} was changed after it was written", r.id));
        } else {
            report.chained += 1;
        }
        last = Some(hash.clone());
    }
    report
}

/// Connections per writing log: the writer uses one at a time, readers the rest.
const POOL_SIZE: u32 = 4;

impl AuditLog {
    /// Opens the log at `target`: a `postgres://`/`postgresql://` URL, or a SQLite path
    /// (created in WAL mode with its directory). Checks its integrity, migrates it and starts
    /// the writer, which links rows under the user's chain key ([`ChainKey::default_path`],
    /// created on first use). Must be called inside a tokio runtime.
    pub async fn open(target: impl AsRef<Path>) -> Result<AuditLog, Error> {
        AuditLog::open_with(target, AuditOptions::default()).await
    }

    /// [`AuditLog::open`] with explicit writer options.
    pub async fn open_with(
        target: impl AsRef<Path>,
        options: AuditOptions,
    ) -> Result<AuditLog, Error> {
        let key = ChainKey::load_or_create(&ChainKey::default_path()?)?;
        AuditLog::open_keyed(target, options, key).await
    }

    /// [`AuditLog::open_with`] linking rows under `key`. A log whose rows were all linked
    /// before the chain had a key is re-linked under it first, in one transaction, if its
    /// unkeyed chain checks (see `relink_plan`).
    pub async fn open_keyed(
        target: impl AsRef<Path>,
        options: AuditOptions,
        key: ChainKey,
    ) -> Result<AuditLog, Error> {
        let db = AuditDb::open_keyed(target, options, key, Access::Write, POOL_SIZE).await?;
        Ok(AuditLog::on(&db))
    }

    /// The log on a database already opened (and checked) by [`AuditDb::open`], sharing its
    /// connections and its chain key. Must be called inside a tokio runtime.
    pub fn on(db: &AuditDb) -> AuditLog {
        AuditLog::start(
            db.db.clone(),
            db.target.to_string(),
            db.options,
            db.key.clone(),
        )
    }

    fn start(db: Db, target: String, options: AuditOptions, key: ChainKey) -> AuditLog {
        let (tx, rx) = mpsc::channel(options.queue_capacity.max(1));
        let shared = Arc::new(Shared {
            target,
            db: db.clone(),
            tx,
            counters: Arc::new(Counters::default()),
            closed: AtomicBool::new(false),
            writer: Mutex::new(None),
            options,
        });
        let handle = tokio::spawn(writer(
            db,
            key,
            rx,
            options,
            Arc::clone(&shared.counters),
            shared.target.clone(),
        ));
        *shared.writer.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        AuditLog { shared }
    }

    /// Queues `row`. Waits at most the enqueue timeout on a full queue, then counts the row
    /// as refused (and logs a warning) rather than blocking the agent indefinitely.
    pub async fn record(&self, mut row: AuditRow) -> Recorded {
        sanitize(&mut row);
        if self.shared.closed.load(Ordering::Acquire) {
            return self.refuse("the audit log is shut down");
        }
        let msg = match self.shared.tx.try_send(Msg::Row(Box::new(row))) {
            Ok(()) => return Recorded::Queued,
            Err(mpsc::error::TrySendError::Closed(_)) => {
                return self.refuse("the audit writer has stopped");
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
            Ok(Err(_)) => self.refuse("the audit writer has stopped"),
            Err(_) => self.refuse("the audit queue stayed full"),
        }
    }

    fn refuse(&self, why: &str) -> Recorded {
        let counters = &self.shared.counters;
        counters.refused.fetch_add(1, Ordering::AcqRel);
        let total = counters.dropped.fetch_add(1, Ordering::AcqRel) + 1;
        counters.note_error(why.to_owned());
        tracing::warn!(target_db = %self.shared.target, dropped_total = total, "audit row refused: {why}");
        Recorded::Dropped
    }

    /// Waits until every row queued before this call is committed or given up on, then
    /// reports: [`Error::Incomplete`] if any row handed to this log so far is not in the
    /// database (so a failure stays visible at every later flush).
    pub async fn flush(&self) -> Result<(), Error> {
        let (done, wait) = oneshot::channel();
        self.shared
            .tx
            .send(Msg::Flush(done))
            .await
            .map_err(|_| Error::Closed)?;
        wait.await.map_err(|_| Error::Closed)?;
        self.shared.counters.check(&self.shared.target)
    }

    /// [`AuditLog::flush`], for a process that exits next without closing the database:
    /// closing a SQLite pool makes its last connection checkpoint the write-ahead log with
    /// `fsync`s, which a short-lived process would pay on every call. The log is checkpointed
    /// only once it has grown (so later processes do not each replay a long one).
    pub async fn flush_for_exit(&self) -> Result<(), Error> {
        let flushed = self.flush().await;
        self.shared.db.trim_log().await;
        flushed
    }

    /// Stops accepting rows, writes everything already queued, stops the writer and reports
    /// like [`AuditLog::flush`]. Calling it again only reports.
    pub async fn shutdown(&self) -> Result<(), Error> {
        self.shared.closed.store(true, Ordering::Release);
        let handle = self
            .shared
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            // The writer closes the channel, so a row either made it into the queue (and is
            // written now) or its `record` sees the closed channel and counts it as refused.
            let (done, wait) = oneshot::channel();
            if self.shared.tx.send(Msg::Stop(done)).await.is_ok() {
                let _ = wait.await;
            }
            if handle.await.is_err() {
                self.shared
                    .counters
                    .note_error("the audit writer task failed".to_owned());
            }
            self.shared.db.close().await;
        }
        self.shared.counters.check(&self.shared.target)
    }

    /// Rows that are not in the database: refused by `record` plus lost after it.
    pub fn dropped(&self) -> u64 {
        self.shared.counters.dropped.load(Ordering::Acquire)
    }

    /// Rows `record` acknowledged ([`Recorded::Queued`]) that could not be written.
    pub fn lost(&self) -> u64 {
        self.shared.counters.lost.load(Ordering::Acquire)
    }

    /// Rows committed so far.
    pub fn written(&self) -> u64 {
        self.shared.counters.written.load(Ordering::Acquire)
    }

    /// The shared dropped-row counter (for [`crate::MetricsHook::with_audit`]).
    pub fn dropped_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.shared.counters.dropped)
    }

    /// The database, password removed.
    pub fn target(&self) -> &str {
        &self.shared.target
    }

    /// A reader over the same database.
    pub fn reader(&self) -> AuditReader {
        AuditReader {
            db: self.shared.db.clone(),
            target: self.shared.target.clone(),
        }
    }
}

/// The writer task: one batch per wake-up, one transaction per batch. A transient failure
/// (PostgreSQL restarting) is retried with backoff while the outage is younger than the
/// write timeout; the queue meanwhile fills (bounded), then `record` refuses and counts.
async fn writer(
    db: Db,
    key: ChainKey,
    mut rx: mpsc::Receiver<Msg>,
    options: AuditOptions,
    counters: Arc<Counters>,
    target: String,
) {
    let max_batch = options.max_batch.max(1);
    let mut batch: Vec<AuditRow> = Vec::with_capacity(max_batch);
    let mut waiters: Vec<oneshot::Sender<()>> = Vec::new();
    let mut stopping = false;
    // When the current run of failures began; a success ends it.
    let mut outage: Option<Instant> = None;
    loop {
        let Some(first) = rx.recv().await else {
            break;
        };
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Row(row) => batch.push(*row),
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
            write_with_retry(
                &db,
                &key,
                &mut batch,
                &options,
                &counters,
                &target,
                &mut outage,
            )
            .await;
            batch.clear();
        }
        // A waiter is answered only once everything queued before it is settled; while
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

async fn write_with_retry(
    db: &Db,
    key: &ChainKey,
    batch: &mut Vec<AuditRow>,
    options: &AuditOptions,
    counters: &Counters,
    target: &str,
    outage: &mut Option<Instant>,
) {
    let n = batch.len() as u64;
    let mut delay = Duration::from_millis(20);
    loop {
        match db.write_batch(batch, key, options.write_timeout).await {
            Ok(()) => {
                counters.written.fetch_add(n, Ordering::AcqRel);
                if outage.take().is_some() {
                    tracing::info!(target_db = %target, "audit database reachable again");
                }
                return;
            }
            Err(err) => {
                if db.is_transient(&err) {
                    let began = *outage.get_or_insert_with(Instant::now);
                    if began.elapsed() + delay < options.write_timeout {
                        tracing::warn!(target_db = %target, rows = n, "audit write failed, retrying in {delay:?}: {err}");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(1));
                        continue;
                    }
                    // Given up: later batches of the same outage fail after one attempt.
                } else {
                    // Not an outage (a lock timeout, a constraint): the next outage gets its
                    // full retry budget.
                    *outage = None;
                }
                counters.lost.fetch_add(n, Ordering::AcqRel);
                let total = counters.dropped.fetch_add(n, Ordering::AcqRel) + n;
                counters.note_error(err.to_string());
                tracing::error!(target_db = %target, rows = n, dropped_total = total, "audit batch lost: {err}");
                return;
            }
        }
    }
}

/// Read access for the CLI and tests: never creates or migrates the database.
#[derive(Debug, Clone)]
pub struct AuditReader {
    db: Db,
    target: String,
}

impl AuditReader {
    /// Opens an existing log read-only (a SQLite path or a PostgreSQL URL); a missing SQLite
    /// file is [`Error::MissingDatabase`].
    pub async fn open(target: impl AsRef<Path>) -> Result<AuditReader, Error> {
        let target = AuditTarget::parse(target);
        let db = Db::open(&target, Access::Read, &AuditOptions::default(), 1).await?;
        Ok(AuditReader {
            db,
            target: target.to_string(),
        })
    }

    fn err(&self) -> impl FnOnce(sqlx::Error) -> Error + '_ {
        move |source| Error::Database {
            path: self.target.clone(),
            source,
        }
    }

    /// Rows matching `q`, oldest first.
    pub async fn query(&self, q: &AuditQuery) -> Result<Vec<AuditRecord>, Error> {
        self.db.query(q).await.map_err(self.err())
    }

    /// Per-tool totals over the rows matching `q` (its `limit` is ignored).
    pub async fn summary(&self, q: &AuditQuery) -> Result<Vec<ToolSummary>, Error> {
        self.db.summary(q).await.map_err(self.err())
    }

    /// Checks the keyed chain over every row with the user's chain key (which must exist: a
    /// missing key is an error, not an empty report): a row changed, deleted or inserted by
    /// anything but the guard's writer breaks it, even with every later link recomputed.
    pub async fn verify(&self) -> Result<VerifyReport, Error> {
        let key = ChainKey::load(&ChainKey::default_path()?)?;
        self.verify_with(&key).await
    }

    /// [`AuditReader::verify`] with `key`.
    pub async fn verify_with(&self, key: &ChainKey) -> Result<VerifyReport, Error> {
        // The whole file's b-tree too: the guard's per-call opens do not check it.
        if let Db::Sqlite(pool) = &self.db {
            sqlite::quick_check(pool, &self.target).await?;
        }
        let rows = self.query(&AuditQuery::default()).await?;
        Ok(verify_records(&rows, key))
    }

    /// Closes the connection.
    pub async fn close(&self) {
        self.db.close().await;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A held database in a fresh directory, with its key there too.
    async fn held() -> (tempfile::TempDir, AuditDb, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        let db = AuditDb::open_held_keyed(&dir.path().join("audit.db"), key.clone())
            .await
            .unwrap();
        (dir, db, key)
    }

    /// What a guarded call runs on a held database (the held check, the kill switch, the
    /// ledger's count, one chained row) finds every statement parsed by `prepare_calls`: the
    /// connection prepares none of its own.
    #[tokio::test]
    async fn a_call_on_a_held_database_parses_no_statement() {
        use sqlx::Connection as _;
        let (_dir, db, key) = held().await;
        db.prepare_calls().await.unwrap();
        let Db::Sqlite(pool) = &db.db else { panic!() };
        let prepared = pool.acquire().await.unwrap().cached_statements_size();
        assert!(prepared >= 5, "{prepared}");

        assert!(db.is_current_with(&key).await);
        let kill = crate::KillSwitch::on(&db).await.unwrap();
        assert!(!kill.is_cancelled("s"));
        crate::Ledger::on(&db)
            .count_call("s", "Read", "hash")
            .await
            .unwrap();
        let log = AuditLog::on(&db);
        log.record(AuditRow::session_stop(&SessionStopContext::default()))
            .await;
        log.flush().await.unwrap();
        let after = pool.acquire().await.unwrap().cached_statements_size();
        assert_eq!(
            after, prepared,
            "a statement the call ran was not prepared ahead"
        );
    }

    #[tokio::test]
    async fn a_held_database_is_current_until_its_file_or_schema_or_key_changes() {
        let (dir, db, key) = held().await;
        assert!(db.is_current_with(&key).await);
        assert!(!db.is_current_with(&dir.path().join("other-key")).await);

        // Another connection changes the schema (a planted trigger is such a change).
        let Db::Sqlite(pool) = &db.db else { panic!() };
        sqlx::query("CREATE TABLE planted (x)")
            .execute(pool)
            .await
            .unwrap();
        assert!(!db.is_current_with(&key).await);

        // The file is replaced: the path names another database now.
        let (dir3, db3, key3) = held().await;
        assert!(db3.is_current_with(&key3).await);
        let path = dir3.path().join("audit.db");
        std::fs::rename(&path, dir3.path().join("moved.db")).unwrap();
        assert!(!db3.is_current_with(&key3).await, "the file is gone");
        std::fs::copy(dir3.path().join("moved.db"), &path).unwrap();
        assert!(!db3.is_current_with(&key3).await, "another file is there");
        drop(dir);
    }

    #[tokio::test]
    async fn a_database_not_held_is_never_current() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        let db = AuditDb::open_keyed(
            dir.path().join("audit.db"),
            AuditOptions::default(),
            ChainKey::load_or_create(&key).unwrap(),
            Access::Control,
            POOL_SIZE,
        )
        .await
        .unwrap();
        assert!(!db.is_current_with(&key).await);
    }

    /// Rows holding `text` in each redacted field, as hooks store them.
    fn rows_with(text: &str) -> Vec<AuditRow> {
        let base = AuditRow::decided(Decision::Ask, "p7_config_ask", "");
        let mut as_input = base.clone();
        as_input.set_input(&serde_json::json!({ "command": text }));
        let mut as_plain_input = base.clone();
        as_plain_input.set_input(&serde_json::Value::String(text.to_owned()));
        let mut as_output = base.clone();
        as_output.output_preview = text.to_owned();
        let mut as_resolution = base;
        as_resolution.resolution = Some(text.to_owned());
        vec![as_input, as_plain_input, as_output, as_resolution]
    }

    #[test]
    fn every_detectors_sample_is_redacted_through_the_prefilter() {
        let scanner = SecretScanner::default_set();
        let examples = crate::redact::builtin_examples();
        assert!(examples.len() >= 30, "{}", examples.len());
        for (id, hit, miss) in examples {
            assert!(scanner.may_find(&hit), "{id}: its sample has no anchor");
            for text in [&hit, &miss] {
                for row in rows_with(text) {
                    let mut fast = row.clone();
                    sanitize(&mut fast);
                    let mut full = row;
                    sanitize_scanned(scanner, &mut full);
                    assert_eq!(fast, full, "{id}: `{text}`");
                }
            }
            for row in rows_with(&hit) {
                let mut stored = row;
                sanitize(&mut stored);
                let held = [
                    stored.input.as_str(),
                    stored.output_preview.as_str(),
                    stored.resolution.as_deref().unwrap_or_default(),
                ];
                assert!(
                    held.iter().any(|t| t.contains("[REDACTED")),
                    "{id}: `{hit}` stored as {held:?}"
                );
            }
        }
    }

    #[test]
    fn text_without_an_anchor_skips_the_scanner_and_keeps_its_bounds() {
        let scanner = SecretScanner::default_set();
        let mut row = AuditRow::decided(Decision::Allow, "p7_config_allow", "total 0\n.");
        row.set_input(&serde_json::json!({"command": "ls -la src && cargo test -p perm-hooks"}));
        row.resolution = Some("run_bash(cargo test:*)".to_owned());
        assert!(!may_hold_secret(scanner, &row));
        // An escape in JSON text may spell an anchor: the scanner decodes it, so must we.
        let mut escaped = row.clone();
        escaped.input = r#"{"command":"echo \u0041KIAQ3EGTW7ZL5MXRB2N"}"#.to_owned();
        assert!(may_hold_secret(scanner, &escaped));
        sanitize(&mut escaped);
        assert!(
            !escaped.input.contains("Q3EGTW7ZL5MXRB2N"),
            "{}",
            escaped.input
        );
        // Bounds and NUL still apply on the fast path.
        row.output_preview = "x\0".repeat(OUTPUT_PREVIEW_CHARS);
        sanitize(&mut row);
        assert_eq!(row.output_preview.chars().count(), OUTPUT_PREVIEW_CHARS);
        assert!(!row.output_preview.contains('\0'));
    }

    #[test]
    fn stored_texts_parse_back_to_their_value() {
        for status in AuditStatus::ALL {
            assert_eq!(status.as_str().parse::<AuditStatus>(), Ok(status));
            let lower = status.as_str().to_ascii_lowercase();
            assert_eq!(lower.parse::<AuditStatus>(), Ok(status), "{lower}");
        }
        for resolver in Resolver::ALL {
            assert_eq!(resolver.as_str().parse::<Resolver>(), Ok(resolver));
        }
        assert!("RULE".parse::<Resolver>().is_err());
        assert!("maybe".parse::<AuditStatus>().is_err());
    }
}
