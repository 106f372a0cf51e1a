//! `agent-guard path`: decide one path against the filesystem sandbox (layer 4).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use fs_sandbox::{Access, Op, Sandbox};
use perm_rules::Decision;

use crate::policy::Policy;
use crate::report::{Reason, Report};

/// Arguments of `agent-guard path`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The policy file (its `[sandbox]` table); `--root`/`--read-only-root` add to its roots.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// A read-write root (may repeat). With no root from flags or policy, the cwd is the one
    /// writable root.
    #[arg(long = "root")]
    pub roots: Vec<PathBuf>,
    /// A read-only root (may repeat).
    #[arg(long = "read-only-root")]
    pub read_only_roots: Vec<PathBuf>,
    /// The working directory relative paths and roots resolve against (default: the current one).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// What the path is for: read, write, list or execute-dir.
    #[arg(long, default_value = "read", value_parser = ["read", "write", "list", "execute-dir"])]
    pub op: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// The path to decide.
    #[arg(required = true, allow_hyphen_values = true)]
    pub path: PathBuf,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let policy = Policy::load(args.policy.as_deref())?;
    let cwd = match args.cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let op = match args.op.as_str() {
        "read" => Op::Read,
        "write" => Op::Write,
        "list" => Op::List,
        "execute-dir" => Op::ExecuteDir,
        other => anyhow::bail!("unknown op `{other}`; expected read, write, list or execute-dir"),
    };
    let mut builder = policy.doc.sandbox.builder(&cwd);
    for root in args.roots {
        builder = builder.root(root, Access::ReadWrite);
    }
    for root in args.read_only_roots {
        builder = builder.root(root, Access::ReadOnly);
    }
    // Sniffed with the same detectors as every other door's reads.
    let scanner = policy.doc.hooks.secret_scanner()?;
    builder = builder.content_sniffer(std::sync::Arc::new(agent_core::DetectorSniffer::new(
        scanner,
    )));
    let sandbox: Sandbox = builder.build().map_err(|err| {
        anyhow::anyhow!(
            "bad sandbox configuration ({}): {err}",
            policy.source_name()
        )
    })?;
    let report = match sandbox.check(&args.path, op) {
        Ok(checked) => Report::new(
            Decision::Allow,
            vec![Reason::new(
                "fs-sandbox",
                "inside_root",
                format!(
                    "`{}` is inside the {} root `{}`",
                    checked.path().display(),
                    match checked.root().access() {
                        Access::ReadWrite => "read-write",
                        Access::ReadOnly => "read-only",
                    },
                    checked.root().path().display()
                ),
            )],
        )
        .with("resolved", checked.path().display().to_string()),
        Err(err) => {
            let resolved = match &err {
                fs_sandbox::SandboxError::OutsideRoots { resolved, .. }
                | fs_sandbox::SandboxError::ReadOnlyRoot { resolved, .. }
                | fs_sandbox::SandboxError::Protected { resolved, .. }
                | fs_sandbox::SandboxError::HardLink { resolved, .. }
                | fs_sandbox::SandboxError::SpecialFile { resolved, .. }
                | fs_sandbox::SandboxError::OtherFilesystem { resolved, .. }
                | fs_sandbox::SandboxError::Sensitive { path: resolved, .. } => {
                    serde_json::Value::from(resolved.display().to_string())
                }
                _ => serde_json::Value::Null,
            };
            Report::new(
                agent_core::sandbox_refusal_decision(&err, op),
                vec![Reason::new("fs-sandbox", err.code(), err.to_string())],
            )
            .with("resolved", resolved)
        }
    };
    report.print(args.json)?;
    Ok(ExitCode::SUCCESS)
}
