//! `agent-guard bash`: classify one bash command (layer 5), with the real fs-sandbox judging
//! every path it reads or writes.

use std::path::PathBuf;
use std::process::ExitCode;

use agent_core::tools::SandboxJudge;
use anyhow::Context as _;
use bash_guard::Analyzer;
use fs_sandbox::Access;
use perm_rules::Decision;

use crate::policy::Policy;
use crate::report::{Reason, Report};

/// Arguments of `agent-guard bash`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The policy file (its `[bash]` and `[sandbox]` tables).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// A read-write root (may repeat). With no root from flags or policy, the cwd is the one
    /// writable root.
    #[arg(long = "root")]
    pub roots: Vec<PathBuf>,
    /// A read-only root (may repeat).
    #[arg(long = "read-only-root")]
    pub read_only_roots: Vec<PathBuf>,
    /// The directory the command would run in (default: the current one).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Ask about network clients instead of denying them (overrides `AGENT_BLOCK_NETWORK`).
    #[arg(long)]
    pub allow_network: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// The command to classify (after the options; `--` before it is optional).
    #[arg(
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<String>,
}

fn to_decision(d: bash_guard::Decision) -> Decision {
    match d {
        bash_guard::Decision::Allow => Decision::Allow,
        bash_guard::Decision::Ask => Decision::Ask,
        bash_guard::Decision::Deny => Decision::Deny,
    }
}

/// `AGENT_BLOCK_NETWORK`: anything but an explicit false keeps the network blocked.
fn block_network_from_env() -> Option<bool> {
    let v = std::env::var("AGENT_BLOCK_NETWORK").ok()?;
    Some(!matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "0" | "false" | "no" | "off"
    ))
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let policy = Policy::load(args.policy.as_deref())?;
    let cwd = match args.cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let mut builder = policy.doc.sandbox.builder(&cwd);
    for root in args.roots {
        builder = builder.root(root, Access::ReadWrite);
    }
    for root in args.read_only_roots {
        builder = builder.root(root, Access::ReadOnly);
    }
    let sandbox = builder.build().map_err(|err| {
        anyhow::anyhow!(
            "bad sandbox configuration ({}): {err}",
            policy.source_name()
        )
    })?;
    let mut config = policy.doc.bash.clone();
    if let Some(block) = block_network_from_env() {
        config.block_network = block;
    }
    if args.allow_network {
        config.block_network = false;
    }
    let command = args.command.join(" ");
    let verdict = Analyzer::new(config).analyze(
        &command,
        &cwd,
        &SandboxJudge::new(std::sync::Arc::new(sandbox)),
    );
    // The findings that decide come first, so the first reason a person reads is the one to
    // act on (`cat x | less`: `less`, not `cat`'s read); the rest keep their order.
    let mut ordered: Vec<&bash_guard::Finding> = verdict.findings.iter().collect();
    ordered.sort_by_key(|f| f.decision != verdict.decision);
    let reasons = ordered
        .into_iter()
        .map(|f| {
            let message = if f.subcommand.is_empty() {
                f.message.clone()
            } else {
                format!("{} (in `{}`)", f.message, f.subcommand)
            };
            Reason::new("bash-guard", f.code, message)
        })
        .collect();
    let mut report = Report::new(to_decision(verdict.decision), reasons);
    if args.json {
        report = report
            .with("command", command)
            .with("findings", serde_json::to_value(&verdict.findings)?);
    }
    report.print(args.json)?;
    Ok(ExitCode::SUCCESS)
}
