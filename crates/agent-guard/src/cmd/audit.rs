//! `agent-guard audit`: what was asked, decided, run, and by whom, per session, from SQLite or
//! PostgreSQL; `--verify` checks the keyed hash chain; `audit stats` counts decisions by layer and
//! code over time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use perm_hooks::{
    AuditQuery, AuditReader, AuditRecord, AuditStatus, AuditTarget, CallEntry, Error, Outcome,
};
use perm_rules::Decision;
use serde::Serialize;

/// Arguments of `agent-guard audit`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub sub: Option<Sub>,
    #[command(flatten)]
    pub filter: Filter,
    /// Print one row per line (with its chain hash) instead of the per-session timeline.
    #[arg(long)]
    pub rows: bool,
    /// Print one JSON object: {"db", "calls": [...], "rows": [...], "summary": [...]}.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV: one line per call (with --rows: per row).
    #[arg(long)]
    pub csv: bool,
    /// Check the chain with your audit key (`~/.agent-guard/audit.key`): exit 1
    /// when a row was changed, deleted or inserted by other means, or carries no link under
    /// the key (even with every later link recomputed, which only the key's holder can do).
    #[arg(long, conflicts_with_all = ["json", "csv", "rows"])]
    pub verify: bool,
}

/// Subcommands of `agent-guard audit`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum Sub {
    /// Decisions by layer and reason code, per hour or day.
    Stats(StatsArgs),
}

/// Arguments of `agent-guard audit stats`.
#[derive(clap::Args, Debug)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    pub filter: Filter,
    /// The time bucket.
    #[arg(long, value_parser = ["hour", "day"], default_value = "day")]
    pub by: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which database and which rows.
#[derive(clap::Args, Debug)]
pub(crate) struct Filter {
    /// The audit database: a SQLite file or a `postgres://` URL (default: the policy's
    /// `hooks.audit_db`, else `audit.db` in the guard's state directory).
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
    /// Only this client: claude-code, codex or gemini.
    #[arg(long, value_name = "NAME")]
    pub client: Option<String>,
    /// Only rows of this status: ok, fail, denied, allowed, asked or session_stop.
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Option<AuditStatus>,
    /// Only this permission decision: allow, ask or deny.
    #[arg(long, value_name = "DECISION", value_parser = parse_decision)]
    pub decision: Option<Decision>,
    /// The call a refusal's reference names (`Ref 9YPD-5RW8`, an allow-once code).
    #[arg(long = "ref", value_name = "CODE", value_parser = parse_ref)]
    pub ref_code: Option<String>,
    /// Only rows at or after this time: ms since the Unix epoch, or an age such as `90s`,
    /// `15m`, `2h`, `7d`.
    #[arg(long, value_name = "MS|AGE", value_parser = parse_time)]
    pub since: Option<i64>,
    /// Only rows before this time (same forms as --since).
    #[arg(long, value_name = "MS|AGE", value_parser = parse_time)]
    pub until: Option<i64>,
    /// At most this many rows (the oldest first); the summary counts only what is shown.
    #[arg(long)]
    pub limit: Option<u32>,
}

impl Filter {
    fn query(&self) -> AuditQuery {
        AuditQuery {
            session_id: self.session.clone(),
            tool_name: self.tool.clone(),
            status: self.status,
            decision: self.decision,
            since: self.since,
            until: self.until,
            limit: self.limit,
            client: self.client.clone(),
            ref_code: self.ref_code.clone(),
        }
    }
}

fn parse_status(s: &str) -> Result<AuditStatus, String> {
    s.parse()
}

fn parse_ref(s: &str) -> Result<String, String> {
    let s = s.trim();
    let s = s.strip_prefix("Ref ").unwrap_or(s);
    perm_hooks::normalize_code(s)
        .ok_or_else(|| format!("`{s}` is not a reference (8 letters and digits, like 9YPD-5RW8)"))
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

/// The database named by `--db`, else by the policy's `hooks.audit_db`, else the default in
/// the guard's state directory.
pub(crate) fn target(db: Option<&Path>, policy: Option<&Path>) -> anyhow::Result<AuditTarget> {
    Ok(match db {
        Some(db) => AuditTarget::parse(db),
        None => AuditTarget::parse(
            crate::policy::Policy::load(policy)?
                .doc
                .hooks
                .audit_db_path()?,
        ),
    })
}

/// `YYYY-MM-DD HH:MM:SS.mmm` UTC for ms since the epoch.
pub(crate) fn human_ts(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{millis:03}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

fn open_and<T>(
    target: &AuditTarget,
    f: impl AsyncFnOnce(&AuditReader) -> Result<T, Error>,
) -> Result<T, ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::from(2)
        })?;
    let result = rt.block_on(async {
        let reader = AuditReader::open(target).await?;
        let out = f(&reader).await;
        reader.close().await;
        out
    });
    result.map_err(|err| {
        match err {
            Error::MissingDatabase(path) => eprintln!(
                "error: audit database `{path}` does not exist (pass --db FILE|URL, or --policy FILE)"
            ),
            err => eprintln!("error: {err}"),
        }
        ExitCode::from(2)
    })
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Sub::Stats(stats)) = args.sub {
        return run_stats(&stats);
    }
    let target = target(args.filter.db.as_deref(), args.filter.policy.as_deref())?;
    if args.verify {
        let report = match open_and(&target, async |r| r.verify().await) {
            Ok(report) => report,
            Err(code) => return Ok(code),
        };
        for p in &report.problems {
            println!("BROKEN: {p}");
        }
        println!(
            "{}: {} rows, {} chained under your key, {} without a keyed link, {} under another key, {} broken",
            target, report.rows, report.chained, report.unkeyed, report.foreign, report.broken
        );
        return Ok(if report.is_intact() {
            println!("chain intact");
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let query = args.filter.query();
    let rows = match open_and(&target, async |r| r.query(&query).await) {
        Ok(rows) => rows,
        Err(code) => return Ok(code),
    };
    if args.filter.ref_code.is_some() && rows.is_empty() {
        eprintln!(
            "error: no row in `{target}` has the reference {}",
            args.filter.ref_code.as_deref().unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
    }
    let calls = perm_hooks::timeline(&rows);
    let summary = summarize(&calls);
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "db": target.to_string(), "calls": calls, "rows": rows, "summary": summary,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.csv {
        print!(
            "{}",
            if args.rows {
                rows_csv(&rows)
            } else {
                calls_csv(&calls)
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.rows {
        print_rows(&rows);
    } else {
        print_timeline(&calls);
    }
    println!(
        "summary ({} calls in {} rows shown{}):",
        calls
            .iter()
            .filter(|c| c.outcome != Outcome::SessionStop)
            .count(),
        rows.len(),
        if args.filter.limit.is_some() {
            ", --limit applied"
        } else {
            ""
        }
    );
    for s in &summary {
        println!(
            "  {}: calls={} allowed={} asked={} denied={} ran={} failed={} not-run={} avg={:.1}ms max={}ms",
            s.tool_name,
            s.calls,
            s.allowed,
            s.asked,
            s.denied,
            s.ran,
            s.failed,
            s.not_run,
            s.avg_elapsed_ms,
            s.max_elapsed_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Per-tool totals over the calls shown.
#[derive(Debug, Default, Serialize)]
struct Summary {
    tool_name: String,
    calls: u64,
    allowed: u64,
    asked: u64,
    denied: u64,
    ran: u64,
    failed: u64,
    not_run: u64,
    avg_elapsed_ms: f64,
    max_elapsed_ms: u64,
}

fn summarize(calls: &[CallEntry]) -> Vec<Summary> {
    let mut by_tool: BTreeMap<&str, (Summary, u64)> = BTreeMap::new();
    for c in calls.iter().filter(|c| c.outcome != Outcome::SessionStop) {
        let (s, total) = by_tool.entry(c.tool_name.as_str()).or_default();
        s.calls += 1;
        match c.decision {
            Some(Decision::Allow) => s.allowed += 1,
            Some(Decision::Ask) => s.asked += 1,
            Some(Decision::Deny) => s.denied += 1,
            None => {}
        }
        match c.outcome {
            Outcome::Ran => s.ran += 1,
            Outcome::Failed => s.failed += 1,
            Outcome::NotRun => s.not_run += 1,
            Outcome::Refused | Outcome::SessionStop => {}
        }
        if matches!(c.outcome, Outcome::Ran | Outcome::Failed) {
            *total += c.elapsed_ms;
            s.max_elapsed_ms = s.max_elapsed_ms.max(c.elapsed_ms);
        }
    }
    by_tool
        .into_iter()
        .map(|(name, (mut s, total))| {
            s.tool_name = name.to_owned();
            // Precision loss only past 2^53 ms.
            #[allow(clippy::cast_precision_loss)]
            let avg = total as f64 / (s.ran + s.failed).max(1) as f64;
            s.avg_elapsed_ms = avg;
            s
        })
        .collect()
}

fn one_line(text: &str, max: usize) -> String {
    let flat = text.replace('\n', "\\n");
    let (cut, truncated) = agent_core::truncate_chars(&flat, max);
    if truncated {
        format!("{cut}...")
    } else {
        cut.to_owned()
    }
}

/// "asked -> allowed by a person (how)", "denied by \[layer\] code", ...
fn story(c: &CallEntry) -> String {
    let mut text = match c.decision {
        Some(Decision::Allow) => "allowed".to_owned(),
        Some(Decision::Ask) => "asked".to_owned(),
        Some(Decision::Deny) => "denied".to_owned(),
        None => "recorded".to_owned(),
    };
    if let (Some(layer), Some(code)) = (&c.layer, &c.reason_code) {
        text.push_str(&format!(" [{layer}] {code}"));
    } else if let Some(code) = &c.reason_code {
        text.push_str(&format!(" ({code})"));
    }
    if let Some(by) = c.resolved_by {
        text.push_str(&format!(" - by {}", by.as_str()));
        if let Some(how) = &c.resolution {
            text.push_str(&format!(": {}", one_line(how, 120)));
        }
    }
    if let Some(code) = &c.ref_code {
        text.push_str(&format!(" - Ref {code}"));
    }
    text.push_str(" -> ");
    text.push_str(c.outcome.as_str());
    if matches!(c.outcome, Outcome::Ran | Outcome::Failed) {
        text.push_str(&format!(" in {}ms", c.elapsed_ms));
    }
    text
}

fn print_timeline(calls: &[CallEntry]) {
    let mut sessions: Vec<&str> = Vec::new();
    for c in calls {
        if !sessions.contains(&c.session_id.as_str()) {
            sessions.push(&c.session_id);
        }
    }
    for session in sessions {
        let mine: Vec<&CallEntry> = calls.iter().filter(|c| c.session_id == session).collect();
        let client = mine
            .iter()
            .map(|c| c.client.as_str())
            .find(|c| !c.is_empty())
            .unwrap_or("runtime");
        println!("session {session} ({client})");
        for c in mine {
            if c.outcome == Outcome::SessionStop {
                println!(
                    "  {}  session stopped: {}",
                    human_ts(c.ts),
                    one_line(&c.preview, 120)
                );
                continue;
            }
            println!(
                "  {}  {} {} {}",
                human_ts(c.ts),
                c.agent_name,
                c.tool_name,
                one_line(&c.input, 160)
            );
            println!("      {}", story(c));
            if !c.preview.is_empty() {
                println!("      | {}", one_line(&c.preview, 160));
            }
        }
    }
}

fn print_rows(rows: &[AuditRecord]) {
    for r in rows {
        let row = &r.row;
        println!(
            "{:>6} {} {} {} step={} {} {} {}ms{}{}{}{} {} | {}",
            r.id,
            human_ts(row.ts),
            row.session_id,
            if row.client.is_empty() {
                "runtime"
            } else {
                &row.client
            },
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
            row.resolved_by
                .map(|b| format!(" by={}", b.as_str()))
                .unwrap_or_default(),
            row.ref_code
                .as_ref()
                .map(|c| format!(" ref={c}"))
                .unwrap_or_default(),
            one_line(&row.input, 120),
            one_line(&row.output_preview, 120),
        );
    }
}

fn csv_field(text: &str) -> String {
    // A leading formula character is neutralised so a spreadsheet does not run it.
    let text = if text.starts_with(['=', '+', '-', '@']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

fn csv_line(fields: &[String]) -> String {
    let mut line = fields
        .iter()
        .map(|f| csv_field(f))
        .collect::<Vec<_>>()
        .join(",");
    line.push('\n');
    line
}

fn opt(o: Option<&str>) -> String {
    o.unwrap_or_default().to_owned()
}

fn calls_csv(calls: &[CallEntry]) -> String {
    let mut out = csv_line(
        &[
            "time",
            "session",
            "client",
            "agent",
            "tool",
            "call_id",
            "input",
            "decision",
            "layer",
            "code",
            "resolved_by",
            "resolution",
            "ref",
            "outcome",
            "elapsed_ms",
            "preview",
        ]
        .map(str::to_owned),
    );
    for c in calls {
        out.push_str(&csv_line(&[
            human_ts(c.ts),
            c.session_id.clone(),
            c.client.clone(),
            c.agent_name.clone(),
            c.tool_name.clone(),
            c.call_id.clone(),
            c.input.clone(),
            opt(c.decision.map(Decision::as_str)),
            opt(c.layer.as_deref()),
            opt(c.reason_code.as_deref()),
            opt(c.resolved_by.map(perm_hooks::Resolver::as_str)),
            opt(c.resolution.as_deref()),
            opt(c.ref_code.as_deref()),
            c.outcome.as_str().to_owned(),
            c.elapsed_ms.to_string(),
            c.preview.clone(),
        ]));
    }
    out
}

fn rows_csv(rows: &[AuditRecord]) -> String {
    let mut out = csv_line(
        &[
            "id",
            "time",
            "session",
            "client",
            "agent",
            "step",
            "tool",
            "status",
            "elapsed_ms",
            "decision",
            "layer",
            "code",
            "resolved_by",
            "resolution",
            "ref",
            "call_id",
            "input",
            "preview",
            "prev_hash",
            "row_hash",
        ]
        .map(str::to_owned),
    );
    for r in rows {
        let row = &r.row;
        out.push_str(&csv_line(&[
            r.id.to_string(),
            human_ts(row.ts),
            row.session_id.clone(),
            row.client.clone(),
            row.agent_name.clone(),
            row.step.to_string(),
            row.tool_name.clone(),
            row.status.as_str().to_owned(),
            row.elapsed_ms.to_string(),
            opt(row.decision.map(Decision::as_str)),
            opt(row.layer.as_deref()),
            opt(row.reason_code.as_deref()),
            opt(row.resolved_by.map(perm_hooks::Resolver::as_str)),
            opt(row.resolution.as_deref()),
            opt(row.ref_code.as_deref()),
            row.call_id.clone(),
            row.input.clone(),
            row.output_preview.clone(),
            opt(r.prev_hash.as_deref()),
            opt(r.row_hash.as_deref()),
        ]));
    }
    out
}

/// One bucket of `audit stats`.
#[derive(Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
struct StatLine {
    period: String,
    decision: String,
    layer: String,
    code: String,
    count: u64,
}

fn run_stats(args: &StatsArgs) -> anyhow::Result<ExitCode> {
    let target = target(args.filter.db.as_deref(), args.filter.policy.as_deref())?;
    let query = args.filter.query();
    let rows = match open_and(&target, async |r| r.query(&query).await) {
        Ok(rows) => rows,
        Err(code) => return Ok(code),
    };
    let cut = if args.by == "hour" { 13 } else { 10 };
    let mut counts: BTreeMap<(String, String, String, String), u64> = BTreeMap::new();
    for c in perm_hooks::timeline(&rows) {
        let Some(decision) = c.decision else { continue };
        let ts = human_ts(c.ts);
        let period = ts.get(..cut).unwrap_or(&ts).to_owned();
        *counts
            .entry((
                period,
                decision.as_str().to_owned(),
                c.layer.unwrap_or_else(|| "-".to_owned()),
                c.reason_code.unwrap_or_else(|| "-".to_owned()),
            ))
            .or_default() += 1;
    }
    let lines: Vec<StatLine> = counts
        .into_iter()
        .map(|((period, decision, layer, code), count)| StatLine {
            period,
            decision,
            layer,
            code,
            count,
        })
        .collect();
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "db": target.to_string(), "by": args.by, "stats": lines })
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<14} {:<6} {:<12} {:<40} {:>6}",
        args.by, "", "layer", "code", "count"
    );
    for l in &lines {
        println!(
            "{:<14} {:<6} {:<12} {:<40} {:>6}",
            l.period, l.decision, l.layer, l.code, l.count
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_human_utc() {
        assert_eq!(human_ts(0), "1970-01-01 00:00:00.000");
        assert_eq!(human_ts(1_700_000_000_123), "2023-11-14 22:13:20.123");
        assert_eq!(human_ts(951_782_400_000), "2000-02-29 00:00:00.000");
    }

    #[test]
    fn csv_quotes_and_neutralises_formulas() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=cmd()"), "'=cmd()");
        assert_eq!(csv_line(&["x".into(), "y".into()]), "x,y\n");
    }

    #[test]
    fn references_are_normalised() {
        assert_eq!(parse_ref("Ref 9ypd-5rw8").unwrap(), "9YPD-5RW8");
        assert!(parse_ref("nope").is_err());
    }
}
