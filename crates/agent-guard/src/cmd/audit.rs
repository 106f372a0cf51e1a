//! `agent-guard audit`: list audit rows and a per-tool summary, from SQLite or PostgreSQL.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use perm_hooks::{AuditQuery, AuditReader, AuditStatus, AuditTarget, Error};
use perm_rules::Decision;

/// Arguments of `agent-guard audit`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The audit database: a SQLite file or a `postgres://` URL (default: the policy's
    /// `hooks.audit_db`, else `.agent-guard/audit.db`).
    #[arg(long, visible_alias = "audit-db", value_name = "FILE|URL")]
    pub db: Option<PathBuf>,
    /// A policy file to take `hooks.audit_db` from.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Only this session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only this tool.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only this status: ok, fail, denied or session_stop.
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Option<AuditStatus>,
    /// Only this permission decision: allow, ask or deny.
    #[arg(long, value_name = "DECISION", value_parser = parse_decision)]
    pub decision: Option<Decision>,
    /// Only rows at or after this time: ms since the Unix epoch, or an age such as `90s`,
    /// `15m`, `2h`, `7d`.
    #[arg(long, value_name = "MS|AGE", value_parser = parse_time)]
    pub since: Option<i64>,
    /// Only rows before this time (same forms as --since).
    #[arg(long, value_name = "MS|AGE", value_parser = parse_time)]
    pub until: Option<i64>,
    /// At most this many rows.
    #[arg(long)]
    pub limit: Option<u32>,
    /// Print one JSON object: {"rows": [...], "summary": [...]}.
    #[arg(long)]
    pub json: bool,
}

fn parse_status(s: &str) -> Result<AuditStatus, String> {
    s.parse()
}

fn parse_decision(s: &str) -> Result<Decision, String> {
    match s.to_ascii_lowercase().as_str() {
        "allow" => Ok(Decision::Allow),
        "ask" => Ok(Decision::Ask),
        "deny" => Ok(Decision::Deny),
        _ => Err(format!(
            "unknown decision `{s}` (expected allow, ask or deny)"
        )),
    }
}

/// Milliseconds since the epoch, or an age (`90s`, `15m`, `2h`, `7d`) before now.
fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    let bad =
        || format!("bad time `{s}` (expected ms since the epoch, or an age like 15m, 2h, 7d)");
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err(bad()),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let at = now.saturating_sub(Duration::from_secs(secs));
    Ok(i64::try_from(at.as_millis()).unwrap_or(i64::MAX))
}

/// The database named by `--db`, else by the policy's `hooks.audit_db`.
pub(crate) fn target(db: Option<&Path>, policy: Option<&Path>) -> anyhow::Result<AuditTarget> {
    Ok(match db {
        Some(db) => AuditTarget::parse(db),
        None => AuditTarget::parse(
            crate::policy::Policy::load(policy)?
                .doc
                .hooks
                .audit_db_path(),
        ),
    })
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let target = target(args.db.as_deref(), args.policy.as_deref())?;
    let query = AuditQuery {
        session_id: args.session.clone(),
        tool_name: args.tool.clone(),
        status: args.status,
        decision: args.decision,
        since: args.since,
        until: args.until,
        limit: args.limit,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        let reader = AuditReader::open(&target).await?;
        let rows = reader.query(&query).await?;
        let summary = reader.summary(&query).await?;
        reader.close().await;
        Ok::<_, Error>((rows, summary))
    });
    let (rows, summary) = match result {
        Ok(found) => found,
        Err(Error::MissingDatabase(path)) => {
            eprintln!("error: audit database `{path}` does not exist (pass --db FILE|URL)");
            return Ok(ExitCode::from(2));
        }
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "db": target.to_string(), "rows": rows, "summary": summary })
        );
        return Ok(ExitCode::SUCCESS);
    }
    for r in &rows {
        let row = &r.row;
        println!(
            "{:>6} {} {} step={} {} {} {}ms{}{} {}",
            r.id,
            row.ts,
            row.session_id,
            row.step,
            row.tool_name,
            row.status.as_str(),
            row.elapsed_ms,
            row.decision
                .map(|d| format!(" decision={d}"))
                .unwrap_or_default(),
            row.reason_code
                .as_ref()
                .map(|c| format!(" code={c}"))
                .unwrap_or_default(),
            row.output_preview.replace('\n', "\\n"),
        );
    }
    println!("summary ({} rows):", rows.len());
    for s in &summary {
        println!(
            "  {}: calls={} ok={} fail={} denied={} avg={:.1}ms max={}ms",
            s.tool_name, s.calls, s.ok, s.fail, s.denied, s.avg_elapsed_ms, s.max_elapsed_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}
