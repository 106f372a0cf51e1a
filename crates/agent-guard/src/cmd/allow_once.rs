//! `agent-guard allow-once CODE`: a person lets one refused call through, once.
//!
//! A hook's refusal carries a code bound to that exact call (session, the client's tool, its
//! input, the working directory). Granting it here lets the next identical call of that
//! session run once within ten minutes; the hook consumes the grant atomically. Configured
//! denies and the catastrophic class are recorded as not liftable and are never granted.
//!
//! The person runs this, not the agent: bash-guard refuses it as an agent's command, and it
//! refuses to run where an agent's shell marks its environment.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use perm_hooks::{ALLOW_ONCE_WINDOW, AuditTarget, GrantOutcome, Ledger, Offer, normalize_code};

const AFTER_HELP: &str = "\
Run it yourself, in your own terminal: never through the agent. The code comes from a refusal
the agent-guard hook answered (\"... `agent-guard allow-once ABCD-EFGH` ...\"), and lets that
exact call (same session, tool, input and directory) run once within ten minutes. Configured
deny rules and the catastrophic class (destroying the system or home, fork bombs, device
writes, privilege escalation, credential stores) are never let through.

It needs the audit database the hooks record into (`[hooks] audit_db`, or --audit-db).

Exit status:
  0  granted
  1  not granted (the reason is printed)
  2  no audit database, a bad code, or an error";

/// Environment variables the agents set in the shells they run tools in. A grant issued from
/// such a shell would be the agent granting itself.
const AGENT_SHELL_VARS: &[(&str, &str)] = &[
    ("CLAUDECODE", "Claude Code"),
    ("GEMINI_CLI", "Gemini CLI"),
    ("CODEX_SANDBOX", "Codex"),
    ("CODEX_SANDBOX_NETWORK_DISABLED", "Codex"),
];

/// Arguments of `agent-guard allow-once`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The code from the refusal (`ABCD-EFGH`; case and the dash do not matter).
    pub code: String,
    /// The audit database the hooks record into: a `postgres://` URL or a SQLite file
    /// (default: the policy's `hooks.audit_db`, else `audit.db` in the guard's state directory).
    #[arg(long, visible_alias = "db", value_name = "URL|FILE")]
    pub audit_db: Option<PathBuf>,
    /// A policy file to take `hooks.audit_db` from.
    #[arg(long, env = "AGENT_GUARD_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn describe(offer: &Offer) -> String {
    let (input, cut) = agent_core::truncate_chars(&offer.args, 300);
    format!(
        "  session: {}\n  tool:    {}\n  input:   {input}{}\n  cwd:     {}\n  refused: {}",
        offer.session_id,
        offer.tool_name,
        if cut { " ..." } else { "" },
        offer.cwd,
        offer.summary
    )
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some((var, agent)) = AGENT_SHELL_VARS
        .iter()
        .find(|(var, _)| std::env::var_os(var).is_some())
    {
        eprintln!(
            "agent-guard: refusing: `{var}` is set, so this looks like {agent}'s tool shell; \
             an agent cannot grant its own calls. Run `agent-guard allow-once` in your own terminal."
        );
        return Ok(ExitCode::from(1));
    }
    let Some(code) = normalize_code(&args.code) else {
        eprintln!(
            "agent-guard: `{}` is not an allow-once code (eight letters and digits, like `ABCD-EFGH`)",
            args.code
        );
        return Ok(ExitCode::from(2));
    };
    let target = super::audit::target(args.audit_db.as_deref(), args.policy.as_deref())?;
    let spec = match &target {
        AuditTarget::Sqlite(path) => {
            if !path.is_file() {
                eprintln!(
                    "agent-guard: no audit database at `{}`: allow-once needs the audit database \
                     the hooks record into (set `[hooks] audit_db` in the policy, or pass --audit-db)",
                    path.display()
                );
                return Ok(ExitCode::from(2));
            }
            path.display().to_string()
        }
        AuditTarget::Postgres(url) => url.clone(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(async {
        let ledger = Ledger::open(&spec).await?;
        let outcome = ledger.grant(&code, now_ms(), ALLOW_ONCE_WINDOW).await;
        ledger.close().await;
        outcome
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(err) => {
            eprintln!("agent-guard: {err}");
            return Ok(ExitCode::from(2));
        }
    };
    match outcome {
        GrantOutcome::Granted(offer) => {
            println!(
                "granted {code}: the next identical call of this session runs once, within {} minutes\n{}",
                ALLOW_ONCE_WINDOW.as_secs() / 60,
                describe(&offer)
            );
            Ok(ExitCode::SUCCESS)
        }
        GrantOutcome::NotLiftable(offer) => {
            println!(
                "not granted: allow-once cannot let this call through: {}\n{}",
                offer
                    .not_liftable_because
                    .as_deref()
                    .unwrap_or("it is final"),
                describe(&offer)
            );
            Ok(ExitCode::from(1))
        }
        GrantOutcome::AlreadyGranted(offer) => {
            println!(
                "not granted: {code} was granted before (codes are single-use; the next refusal of the call gives a new one)\n{}",
                describe(&offer)
            );
            Ok(ExitCode::from(1))
        }
        GrantOutcome::Unknown => {
            println!("not granted: no refusal has the code {code} in {target}");
            Ok(ExitCode::from(1))
        }
    }
}
