//! `agent-guard audit`: list audit rows and a per-tool summary.

use std::path::PathBuf;
use std::process::ExitCode;

use perm_hooks::{AuditQuery, AuditReader, AuditStatus, Error};

/// Arguments of `agent-guard audit`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The audit database (default: the policy's `hooks.audit_db`, else `.agent-guard/audit.db`).
    #[arg(long, value_name = "FILE")]
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
    /// Only rows at or after this time (ms since the Unix epoch).
    #[arg(long, value_name = "MS")]
    pub since: Option<i64>,
    /// Only rows before this time (ms since the Unix epoch).
    #[arg(long, value_name = "MS")]
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

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let db = match &args.db {
        Some(db) => db.clone(),
        None => crate::policy::Policy::load(args.policy.as_deref())?
            .doc
            .hooks
            .audit_db_path(),
    };
    let query = AuditQuery {
        session_id: args.session.clone(),
        tool_name: args.tool.clone(),
        status: args.status,
        since: args.since,
        until: args.until,
        limit: args.limit,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        let reader = AuditReader::open(&db).await?;
        let rows = reader.query(&query).await?;
        let summary = reader.summary(&query).await?;
        reader.close().await;
        Ok::<_, Error>((rows, summary))
    });
    let (rows, summary) = match result {
        Ok(found) => found,
        Err(Error::MissingDatabase(path)) => {
            eprintln!("error: audit database `{path}` does not exist (pass --db FILE)");
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
            serde_json::json!({ "db": db.display().to_string(), "rows": rows, "summary": summary })
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
