//! `agent-guard run`: a user's scripted session (or a real model) through the full runtime.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::Model;
use anyhow::Context as _;

use super::session::{self, ApproveMode, SessionOptions, SessionScript};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
The script is JSON: {\"prompt\": \"...\", \"system\": \"...\", \"turns\": [{\"content\": \"...\",
\"tool_calls\": [{\"id\": \"c1\", \"name\": \"read_file\", \"arguments\": {...}}]}, ...],
\"subagent_turns\": [...]} (see crates/agent-guard/demo/script.json).

Exit status:
  0  the session ran (whatever was refused in it)
  2  bad arguments, a bad policy or a bad script";

/// Arguments of `agent-guard run`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The scripted session (JSON). With --model-url only its prompts are used.
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,
    /// The policy file (default: every layer's defaults).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The audit log (default: the policy's `hooks.audit_db`, relative to --cwd).
    #[arg(long, value_name = "FILE")]
    pub audit_db: Option<PathBuf>,
    /// The project directory the agent works in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// How Asks are answered: yes, no (default), prompt (on the terminal), or
    /// http://HOST:PORT: an approval server (`agent-guard serve`) where a person answers.
    #[arg(long, value_name = "yes|no|prompt|URL", default_value = "no")]
    pub approve: ApproveMode,
    /// The approval server's token file, with --approve http://... (default:
    /// ~/.agent-guard/serve.token; it must be yours and 0600).
    #[arg(long, value_name = "FILE")]
    pub approve_token_file: Option<PathBuf>,
    /// An OpenAI-compatible chat-completions endpoint (e.g. http://127.0.0.1:8080/v1) to use
    /// instead of the script's turns; the key is read from OPENAI_API_KEY.
    #[arg(long, value_name = "URL")]
    pub model_url: Option<String>,
    /// The model name sent to --model-url.
    #[arg(long, value_name = "NAME", default_value = "gpt-4o-mini")]
    pub model: String,
    /// Print one JSON object instead of the trace.
    #[arg(long)]
    pub json: bool,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let policy = Policy::load(args.policy.as_deref())?;
    let text = std::fs::read_to_string(&args.script)
        .with_context(|| format!("cannot read script `{}`", args.script.display()))?;
    let script = SessionScript::parse(&args.script.display().to_string(), &text)?;
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = session::absolute(&here, args.cwd.as_deref().unwrap_or(&here))
        .canonicalize()
        .context("cannot resolve --cwd")?;
    let audit_db = match &args.audit_db {
        Some(db) => session::audit_target(&here, db),
        None => session::audit_target(&cwd, &policy.doc.hooks.audit_db_path()?),
    };
    let model: Option<Arc<dyn Model>> = match &args.model_url {
        Some(url) => {
            let mut m = agent_core::OpenAiModel::new(url.clone(), args.model.clone())
                .map_err(|e| anyhow::anyhow!("cannot set up the model client: {e}"))?;
            if let Ok(key) = std::env::var("OPENAI_API_KEY") {
                m = m.with_api_key(key);
            }
            Some(Arc::new(m))
        }
        None => None,
    };
    session::run(SessionOptions {
        policy: &policy,
        script,
        cwd,
        audit_db,
        approve: match args.approve {
            ApproveMode::Http { url, .. } => ApproveMode::Http {
                url,
                token_file: args.approve_token_file.clone(),
            },
            other => other,
        },
        model,
        json: args.json,
    })
}
