//! `agent-guard demo`: a bundled scripted research-assistant session through the full runtime.
//!
//! It reads, greps, writes notes, runs bash, spawns a subagent, hits denials of several layers,
//! an Ask, a duplicate call and the step limit, and prints each call with its decision, the
//! layer that decided and why, then the audit summary. It needs no setup: the project it works
//! in is created in a temporary directory.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::session::{self, ApproveMode, SessionOptions, SessionScript};
use crate::policy::Policy;

const POLICY: &str = include_str!("../../demo/policy.toml");
const SCRIPT: &str = include_str!("../../demo/script.json");

/// The demo project's files: (relative path, content).
const FILES: &[(&str, &str)] = &[
    (
        "papers/attention.md",
        "# Attention is all you need\n\nSelf-attention relates every token to every other token,\n\
         so its cost is quadratic in sequence length.\n\nLab notebook: the AWS key used in the \
         experiments was AKIAIOSFODNN7EXAMPLE (rotate it).\n",
    ),
    (
        "papers/rlhf.md",
        "# RLHF\n\nRLHF trains a reward model on human preference rankings, then optimises the\n\
         policy against it with PPO.\n",
    ),
    ("notes/README.md", "Notes the assistant writes go here.\n"),
    (
        ".env",
        "OPENAI_API_KEY=sk-demo-0000000000000000000000000000\n",
    ),
];

const AFTER_HELP: &str = "\
Exit status:
  0  the session ran (whatever was refused in it)
  2  bad arguments, or the demo could not be set up";

/// Arguments of `agent-guard demo`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Keep the audit log in this SQLite file (default: inside the temporary project, removed
    /// at exit).
    #[arg(long, value_name = "FILE")]
    pub audit_db: Option<PathBuf>,
    /// Create the demo project here instead of in a temporary directory (kept afterwards).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// How the session's Ask is answered: yes, no (default), prompt, or an approval server's
    /// http://HOST:PORT.
    #[arg(long, value_name = "yes|no|prompt|URL", default_value = "no")]
    pub approve: ApproveMode,
    /// Print one JSON object instead of the trace.
    #[arg(long)]
    pub json: bool,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (tmp, dir) = match &args.dir {
        Some(dir) => (None, dir.clone()),
        None => {
            let tmp = tempfile::Builder::new()
                .prefix("agent-guard-demo-")
                .tempdir()
                .context("cannot create a temporary directory for the demo project")?;
            let dir = tmp.path().to_path_buf();
            (Some(tmp), dir)
        }
    };
    for (path, content) in FILES {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        std::fs::write(&file, content)
            .with_context(|| format!("cannot write `{}`", file.display()))?;
    }
    // Physical paths, so the sandbox's roots and the printed paths agree.
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve `{}`", dir.display()))?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| dir.clone());
    let audit_db = match &args.audit_db {
        Some(db) => session::audit_target(&cwd, db),
        None => dir.join(".agent-guard").join("audit.db"),
    };
    let policy = Policy::from_text("<bundled demo policy>", POLICY)?;
    let script = SessionScript::parse("<bundled demo script>", SCRIPT)?;
    let code = session::run(SessionOptions {
        policy: &policy,
        script,
        cwd: dir,
        audit_db,
        approve: args.approve,
        model: None,
        json: args.json,
    })?;
    if tmp.is_some() && args.audit_db.is_none() && !args.json {
        println!("(the demo project was temporary; pass --audit-db FILE to keep the audit log)");
    }
    drop(tmp);
    Ok(code)
}
