//! `agent-guard check`: decide one tool call against the permission rules (layer 2).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use perm_rules::PermissionMode;

use crate::policy::Policy;
use crate::report::{Reason, Report};

/// Arguments of `agent-guard check`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The policy file (its `[permissions]` table); `AGENT_PERMISSIONS_*` apply on top.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Override the mode: default, acceptEdits, plan, dontAsk, bypassPermissions.
    #[arg(long)]
    pub mode: Option<String>,
    /// The tool name, e.g. `run_bash`.
    #[arg(long)]
    pub tool: String,
    /// The tool's arguments as a JSON object, e.g. `{"command":"ls"}`.
    #[arg(long)]
    pub input: Option<String>,
    /// The tool is read-only (matters in `plan` mode); the seed's read-only tools are implied.
    #[arg(long)]
    pub read_only: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

const READ_ONLY_TOOLS: &[&str] = &["read_file", "grep_files", "glob_files", "web_fetch"];

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let policy = Policy::load(args.policy.as_deref())?;
    let env: HashMap<String, String> = crate::policy::process_env()?;
    let mut checker = policy.checker(&env)?;
    if let Some(mode) = &args.mode {
        checker.set_mode(PermissionMode::parse(mode).with_context(|| {
            format!("unknown mode `{mode}`; expected default, acceptEdits, plan, dontAsk or bypassPermissions")
        })?);
    }
    if let Ok(cwd) = std::env::current_dir() {
        checker.set_cwd(cwd.display().to_string());
    }
    let input = match &args.input {
        Some(text) => {
            let value: serde_json::Value = serde_json::from_str(text)
                .with_context(|| format!("`--input` is not valid JSON: `{text}`"))?;
            anyhow::ensure!(
                value.is_object(),
                "`--input` must be a JSON object, got `{text}`"
            );
            Some(value)
        }
        None => None,
    };
    let read_only = args.read_only || READ_ONLY_TOOLS.contains(&args.tool.as_str());
    let result = checker.check(&args.tool, input.as_ref());
    let result = checker.apply_mode(result, &args.tool, read_only);
    let reason = Reason::new("perm-rules", result.code(), result.message());
    let mut report = Report::new(result.decision, vec![reason])
        .with("tool", args.tool.clone())
        .with("mode", checker.mode().as_str());
    if let Some(rule) = &result.rule {
        report = report
            .with("rule", rule.text())
            .with("source", rule.source().to_string());
    }
    report.print(args.json)?;
    Ok(ExitCode::SUCCESS)
}
