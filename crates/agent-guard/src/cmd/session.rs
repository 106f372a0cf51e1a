//! Shared by `demo` and `run`: compose the full stack from a policy, replay a scripted session
//! through `AgentRuntime::run_turn`, print every tool call with its decision and the layer that
//! decided, then the audit summary.

use std::collections::HashMap;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::{
    Approval, ApprovalRequest, Approver, AssistantMessage, FixedApprover, Message, Model,
    ScriptedModel, ToolCallResult, TurnOutcome,
};
use anyhow::Context as _;
use perm_hooks::{AuditLog, AuditQuery, AuditReader};
use perm_rules::Decision;
use serde::Deserialize;
use serde_json::json;

use super::serve::client;
use crate::policy::Policy;

/// How Asks are answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApproveMode {
    /// Approve every Ask.
    Yes,
    /// Refuse every Ask (fails closed; the default).
    No,
    /// Ask on the terminal.
    Prompt,
    /// Ask through an approval server (`agent-guard serve`) at this `http://` URL.
    Http {
        url: String,
        /// The server's token file (default: ~/.agent-guard/serve.token).
        token_file: Option<PathBuf>,
    },
}

impl std::str::FromStr for ApproveMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "yes" => Ok(ApproveMode::Yes),
            "no" => Ok(ApproveMode::No),
            "prompt" => Ok(ApproveMode::Prompt),
            url if url.starts_with("http://") => Ok(ApproveMode::Http {
                url: url.to_owned(),
                token_file: None,
            }),
            other => Err(format!(
                "`{other}` is not one of yes, no, prompt or an approval server's http://HOST:PORT"
            )),
        }
    }
}

/// A scripted session: the system prompt, the user's prompt, the assistant turns to replay and
/// the turns a subagent replays.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionScript {
    /// The system prompt.
    #[serde(default = "default_system")]
    pub system: String,
    /// The user's message.
    pub prompt: String,
    /// The lead agent's turns, in order.
    pub turns: Vec<AssistantMessage>,
    /// The turns subagents replay (shared by every child, in order).
    #[serde(default)]
    pub subagent_turns: Vec<AssistantMessage>,
}

fn default_system() -> String {
    "You are a careful research assistant working in a sandboxed project.".to_owned()
}

impl SessionScript {
    /// Parses a script file's text.
    pub(crate) fn parse(name: &str, text: &str) -> anyhow::Result<SessionScript> {
        serde_json::from_str(text).map_err(|e| anyhow::anyhow!("bad script `{name}`: {e}"))
    }
}

/// Everything a session run needs.
pub(crate) struct SessionOptions<'a> {
    pub policy: &'a Policy,
    pub script: SessionScript,
    /// The working directory (the sandbox's default root).
    pub cwd: PathBuf,
    pub audit_db: PathBuf,
    pub approve: ApproveMode,
    /// A real model instead of the script's turns (`--model-url`).
    pub model: Option<Arc<dyn Model>>,
    pub json: bool,
}

struct PromptApprover;

#[async_trait::async_trait]
impl Approver for PromptApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let question = format!(
            "\n? {} wants to run `{}` {}\n  {}\n  allow? [y/N] ",
            request.session_id, request.tool, request.args, request.message
        );
        let answer = tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) if matches!(line.trim(), "y" | "Y" | "yes") => Approval::Approve,
            // EOF, an error or anything but yes: fail closed.
            _ => Approval::Deny,
        }
    }
}

/// The layer a refusal or result code belongs to, for the printed trace.
pub(crate) fn layer_of(result: &ToolCallResult) -> &str {
    if let Some(layer) = &result.layer {
        return layer;
    }
    let code = result.code.as_deref().unwrap_or("");
    if result.content.contains("bash-guard:") || code.starts_with("bash-") {
        "bash-guard"
    } else if code.starts_with("sandbox-") {
        "fs-sandbox"
    } else if code.starts_with("p3-") || code.starts_with("p4-hook") || code.starts_with("hook") {
        "perm-hooks"
    } else if code.starts_with('p') && code.as_bytes().get(1).is_some_and(u8::is_ascii_digit) {
        "perm-rules"
    } else if code.starts_with("approval") || code.starts_with("ask") || code == "mode" {
        "approver"
    } else if matches!(code, "duplicate_call" | "repeated_error") || code.starts_with("duplicate") {
        "runtime-limits"
    } else if code.is_empty() {
        "tool"
    } else {
        "agent-core"
    }
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        out.push('…');
    }
    out
}

fn args_summary(result: &ToolCallResult) -> String {
    let args = &result.final_args;
    for key in [
        "command",
        "file_path",
        "pattern",
        "path",
        "prompt",
        "question",
        "kind",
    ] {
        if let Some(v) = args.get(key).and_then(|v| v.as_str()) {
            return first_line(v, 60);
        }
    }
    first_line(&args.to_string(), 60)
}

fn print_outcome(outcome: &TurnOutcome) {
    println!("\ntool calls ({}):", outcome.results.len());
    for (i, r) in outcome.results.iter().enumerate() {
        let decision = r.decision.map_or("-", Decision::as_str);
        let status = if r.executed {
            if r.is_error { "ran, failed" } else { "ran" }
        } else {
            "refused"
        };
        // A call that ran cleanly passed every layer; only a refusal or failure names one.
        let decided = if r.executed && !r.is_error {
            String::new()
        } else {
            format!(
                "[{}{}]",
                layer_of(r),
                r.code
                    .as_deref()
                    .map(|c| format!(": {c}"))
                    .unwrap_or_default()
            )
        };
        println!(
            "{:>3}. {:<12} {:<46} {:<5} {:<11} {decided}",
            i + 1,
            r.tool,
            format!("`{}`", args_summary(r)),
            decision,
            status,
        );
        if r.is_error || !r.executed {
            println!("       why: {}", first_line(&r.content, 140));
        }
    }
    if !outcome.interventions.is_empty() {
        println!("\nruntime limits (layer 7):");
        for iv in &outcome.interventions {
            println!("  - {}: {}", iv.code(), first_line(&iv.message(), 140));
        }
    }
    println!(
        "\nturn ended: {} after {} steps (~{} tokens)",
        outcome.stop.code(),
        outcome.steps,
        outcome.tokens_used
    );
    println!("answer: {}", first_line(&outcome.answer, 200));
}

/// Runs the session and prints it. Exit 0 when the session ran, whatever was refused.
pub(crate) fn run(opts: SessionOptions<'_>) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(run_async(opts))
}

async fn run_async(opts: SessionOptions<'_>) -> anyhow::Result<ExitCode> {
    let env: HashMap<String, String> = crate::policy::process_env()?;
    let doc = &opts.policy.doc;
    if !perm_hooks::is_postgres_url(&opts.audit_db.to_string_lossy())
        && let Some(dir) = opts.audit_db.parent()
    {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    let audit = AuditLog::open(&opts.audit_db)
        .await
        .with_context(|| format!("cannot open audit log `{}`", opts.audit_db.display()))?;
    // The fleet kill switch lives in the same database: `agent-guard cancel --session ID`.
    let kill = perm_hooks::KillSwitch::open(&opts.audit_db.to_string_lossy())
        .await
        .with_context(|| {
            format!(
                "cannot open the kill switch in `{}`",
                opts.audit_db.display()
            )
        })?;

    let lead: Arc<dyn Model> = match &opts.model {
        Some(m) => Arc::clone(m),
        None => Arc::new(ScriptedModel::new(opts.script.turns.clone())),
    };
    let child: Arc<dyn Model> = match &opts.model {
        Some(m) => Arc::clone(m),
        None => Arc::new(ScriptedModel::new(opts.script.subagent_turns.clone())),
    };
    let session_id = format!("demo-{}", std::process::id());
    // A cancellation recorded from anywhere (`agent-guard cancel`, the approval server) stops
    // this run at its next step.
    let cancel = kill.watch(&session_id);
    let mut server = None;
    let approver: Arc<dyn Approver> = match &opts.approve {
        ApproveMode::Yes => Arc::new(FixedApprover(Approval::Approve)),
        ApproveMode::No => Arc::new(FixedApprover(Approval::Deny)),
        ApproveMode::Prompt => Arc::new(PromptApprover),
        ApproveMode::Http { url, token_file } => {
            let token = client::client_token(token_file.as_deref())?;
            let api = Arc::new(client::ApprovalClient::new(url, token, "run")?);
            api.check().await?;
            let (sink, reports) = client::ReportSink::new(Arc::clone(&api), session_id.clone());
            let approver = Arc::new(
                client::HttpApprover::new(Arc::clone(&api), agent_core::DEFAULT_APPROVAL_TIMEOUT)
                    .cancelling(cancel.clone()),
            );
            server = Some((api, Arc::new(sink), reports));
            approver
        }
    };
    let spawner = subagent::SubAgentRunner::new(child).with_limits(doc.limits.clone());
    let mut builder = opts
        .policy
        .guard_builder(&opts.cwd, &env)?
        .approver(approver)
        .subagents(Arc::new(spawner))
        .audit(audit.clone())
        .kill_switch(kill.clone());
    if let Some((_, sink, _)) = &server {
        builder = builder.events(Arc::clone(sink) as Arc<dyn agent_core::EventSink>);
    }
    if let Ok((program, args)) = super::exec::trampoline_program() {
        builder = builder.trampoline_with_args(program, args);
    }
    let guard = builder.build().await?;
    let runtime = guard.runtime(lead);

    let mut messages = vec![
        Message::system(opts.script.system.clone()),
        Message::user(opts.script.prompt.clone()),
    ];
    if !opts.json {
        println!(
            "agent-guard session `{session_id}` in {}",
            opts.cwd.display()
        );
        println!("user: {}", first_line(&opts.script.prompt, 200));
    }
    // `POST /api/chat/cancel` on the approval server stops this session like a local cancel.
    let watcher = server.as_ref().map(|(api, _, _)| {
        let api = Arc::clone(api);
        tokio::spawn(api.watch_cancel_owned(session_id.clone(), cancel.clone()))
    });
    let outcome = runtime.run_turn(&session_id, &mut messages, &cancel).await;
    if let Some(w) = watcher {
        w.abort();
    }
    drop(runtime);
    drop(guard);
    if let Some((_, sink, reports)) = server {
        sink.stop(outcome.stop.code());
        drop(sink);
        // The reports are best effort; a slow server must not hold the run's exit for long.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), reports).await;
    }
    audit.shutdown().await?;

    let reader = AuditReader::open(&opts.audit_db).await?;
    // Subagents log under `{session}/{kind}-{n}`, so the session's rows are its own and its
    // children's.
    let child_prefix = format!("{session_id}/");
    let rows: Vec<_> = reader
        .query(&AuditQuery::default())
        .await?
        .into_iter()
        .filter(|r| r.row.session_id == session_id || r.row.session_id.starts_with(&child_prefix))
        .collect();
    reader.close().await;
    let summary = summarise(&rows);

    if opts.json {
        let calls: Vec<_> = outcome
            .results
            .iter()
            .map(|r| {
                json!({
                    "tool": r.tool,
                    "args": r.final_args,
                    "decision": r.decision,
                    "executed": r.executed,
                    "is_error": r.is_error,
                    "layer": layer_of(r),
                    "code": r.code,
                    "content": r.content,
                })
            })
            .collect();
        let interventions: Vec<_> = outcome
            .interventions
            .iter()
            .map(|iv| json!({"code": iv.code(), "message": iv.message()}))
            .collect();
        let out = json!({
            "session_id": session_id,
            "stop": outcome.stop.code(),
            "steps": outcome.steps,
            "answer": outcome.answer,
            "calls": calls,
            "interventions": interventions,
            "audit_db": opts.audit_db,
            "audit_rows": rows,
            "audit_summary": summary,
        });
        println!("{out}");
        return Ok(ExitCode::SUCCESS);
    }

    print_outcome(&outcome);
    let children: Vec<_> = rows
        .iter()
        .filter(|r| r.row.session_id.starts_with(&child_prefix))
        .collect();
    if !children.is_empty() {
        println!("\nsubagent calls (isolated, silent; from the audit log):");
        for r in children {
            println!(
                "  {:<8} {:<12} {:<13} {:<5} {}",
                r.row.agent_name,
                r.row.tool_name,
                r.row.status.as_str(),
                r.row.decision.map_or("-", Decision::as_str),
                r.row.reason_code.as_deref().unwrap_or(""),
            );
        }
    }
    println!(
        "\naudit log `{}` ({} rows for this session and its subagents; `agent-guard audit --db {}` lists them):",
        opts.audit_db.display(),
        rows.len(),
        opts.audit_db.display(),
    );
    println!(
        "  {:<16} {:>5} {:>4} {:>5} {:>7} {:>9}",
        "tool", "calls", "ok", "fail", "denied", "avg ms"
    );
    for s in &summary {
        println!(
            "  {:<16} {:>5} {:>4} {:>5} {:>7} {:>9.1}",
            s.tool_name, s.calls, s.ok, s.fail, s.denied, s.avg_elapsed_ms
        );
    }
    let agents: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.row.agent_name.as_str()).collect();
    println!(
        "  agents seen: {}",
        agents.into_iter().collect::<Vec<_>>().join(", ")
    );
    if std::io::stdout().is_terminal() {
        println!("\n(try `--json` for machine-readable output)");
    }
    Ok(ExitCode::SUCCESS)
}

/// Per-tool totals of `rows` (the reader's own summary filters by one exact session id).
fn summarise(rows: &[perm_hooks::AuditRecord]) -> Vec<perm_hooks::ToolSummary> {
    let mut by_tool: std::collections::BTreeMap<&str, perm_hooks::ToolSummary> =
        std::collections::BTreeMap::new();
    let mut total_ms: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| r.row.status != perm_hooks::AuditStatus::SessionStop)
    {
        let name = r.row.tool_name.as_str();
        let s = by_tool
            .entry(name)
            .or_insert_with(|| perm_hooks::ToolSummary {
                tool_name: name.to_owned(),
                calls: 0,
                ok: 0,
                fail: 0,
                denied: 0,
                avg_elapsed_ms: 0.0,
                max_elapsed_ms: 0,
            });
        s.calls += 1;
        match r.row.status {
            perm_hooks::AuditStatus::Ok => s.ok += 1,
            perm_hooks::AuditStatus::Fail => s.fail += 1,
            perm_hooks::AuditStatus::Denied => s.denied += 1,
            perm_hooks::AuditStatus::SessionStop
            | perm_hooks::AuditStatus::Allowed
            | perm_hooks::AuditStatus::Asked => {}
        }
        s.max_elapsed_ms = s.max_elapsed_ms.max(r.row.elapsed_ms);
        *total_ms.entry(name).or_default() += r.row.elapsed_ms;
    }
    by_tool
        .into_iter()
        .map(|(name, mut s)| {
            let total = total_ms.get(name).copied().unwrap_or(0);
            // Precision loss only past 2^53 ms, far beyond any session.
            #[allow(clippy::cast_precision_loss)]
            let avg = total as f64 / s.calls.max(1) as f64;
            s.avg_elapsed_ms = avg;
            s
        })
        .collect()
}

/// Where an audit database is: a `postgres://` URL as it is, a SQLite path against `base`.
pub(crate) fn audit_target(base: &Path, spec: &Path) -> PathBuf {
    perm_hooks::AuditTarget::parse(spec)
        .resolve(base)
        .as_ref()
        .to_path_buf()
}

/// Resolves `path` against `cwd`.
pub(crate) fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approve_takes_the_three_modes_or_an_http_server() {
        assert_eq!("no".parse::<ApproveMode>(), Ok(ApproveMode::No));
        assert_eq!(
            "http://127.0.0.1:8917".parse::<ApproveMode>(),
            Ok(ApproveMode::Http {
                url: "http://127.0.0.1:8917".into(),
                token_file: None
            })
        );
        let err = "https://x".parse::<ApproveMode>().unwrap_err();
        assert!(err.contains("http://HOST:PORT"), "{err}");
    }
}
