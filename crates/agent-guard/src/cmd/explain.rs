//! `agent-guard explain`: a decision with a human trace of every layer consulted.
//!
//! `explain check`, `explain bash` and `explain path` take the arguments of `check`, `bash`
//! and `path`, decide the call through agent-core's `Guard::evaluate` (the one composition the
//! runtime and the hooks use), and print what each layer saw and decided. Colour is used when
//! stdout is a terminal and `NO_COLOR` is unset.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use agent_core::clients::{self, Client};
use agent_core::{Call, Verdict};
use anyhow::Context as _;
use perm_rules::Decision;
use serde_json::{Value, json};

use crate::front::{Front, FrontOptions, KNOWN_TOOLS, parse_mode, refusal, report};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Every layer that applies is consulted and shown: hooks, perm-rules, fs-sandbox (every path,
sensitive files included), bash-guard (run_bash), the network policy (URLs), then the mode. The
overall decision is the strictest one; the first layer that gave it is the one that decided.

Colour: when stdout is a terminal, unless NO_COLOR is set.

Exit status:
  0  the explanation was printed (whatever the decision)
  2  bad arguments, a bad policy file or bad input";

/// Arguments of `agent-guard explain`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub what: What,
}

/// What to explain.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum What {
    /// Explain one tool call (the arguments of `agent-guard check`; Claude Code tool names such
    /// as `Bash` are translated as `claude-hook` does).
    Check(super::check::Args),
    /// Explain one bash command (the arguments of `agent-guard bash`): `run_bash` through the
    /// rules and bash-guard.
    Bash(super::bash::Args),
    /// Explain one path (the arguments of `agent-guard path`).
    Path(super::path::Args),
}

fn current_dir() -> anyhow::Result<PathBuf> {
    std::env::current_dir().context("cannot read the current directory")
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_inner(args).map_err(crate::front::one_line)
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let (trace, json, policy) = match args.what {
        What::Check(a) => (explain_check(&a)?, a.json, a.policy.clone()),
        What::Bash(a) => {
            let (json, policy) = (a.json, a.policy.clone());
            (explain_bash(a)?, json, policy)
        }
        What::Path(a) => {
            let (json, policy) = (a.json, a.policy.clone());
            (explain_path(a)?, json, policy)
        }
    };
    let auto = auto_preview(policy.as_deref(), &trace)?;
    if json {
        let mut out = serde_json::to_value(report(&trace)?)?;
        if let (Some(obj), Some((config, prompt))) = (out.as_object_mut(), &auto) {
            obj.insert(
                "auto".to_owned(),
                json!({"endpoint": config.endpoint, "model": config.model, "prompt": prompt}),
            );
        }
        println!("{out}");
    } else {
        print!("{}", render(&trace, Style::detect()));
        if let Some((config, prompt)) = auto {
            println!(
                "\nauto mode would ask model `{}` at {} (the session's user requests go where the placeholder is):\n--- system\n{}\n--- user\n{}",
                config.model,
                config.endpoint.as_deref().unwrap_or_default(),
                prompt.system,
                prompt.user
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What auto mode would be sent for `v`, when the policy has an `[auto]` model and the verdict
/// is an ask it may resolve (`explain` never calls the model).
fn auto_preview(
    policy: Option<&std::path::Path>,
    v: &Verdict,
) -> anyhow::Result<Option<(agent_core::auto::AutoConfig, agent_core::auto::AutoPrompt)>> {
    let policy = Policy::load(policy)?;
    let config = policy.doc.auto.clone();
    if !config.enabled()
        || v.decision != Decision::Ask
        || !agent_core::only_side_effects(&v.asks)
        || v.steps.iter().any(|s| s.decision == Decision::Deny)
    {
        return Ok(None);
    }
    let scanner = policy.doc.hooks.secret_scanner()?;
    let prompt = agent_core::auto::build_prompt(
        &["<the user's requests in the session>".to_owned()],
        &v.tool,
        &v.final_args,
        &current_dir()?,
        &v.asks,
        &scanner,
        config.max_context_chars,
    );
    Ok(Some((config, prompt)))
}

fn explain_check(a: &super::check::Args) -> anyhow::Result<Verdict> {
    let policy = Policy::load(a.policy.as_deref())?;
    let cwd = current_dir()?;
    let opts = FrontOptions {
        mode: a.mode.as_deref().map(parse_mode).transpose()?,
        ..FrontOptions::default()
    };
    let front = Front::load(&policy, &cwd, &opts)?;
    let input = match &a.input {
        Some(text) => {
            let value: Value = serde_json::from_str(text)
                .with_context(|| format!("`--input` is not valid JSON: `{text}`"))?;
            anyhow::ensure!(
                value.is_object(),
                "`--input` must be a JSON object, got `{text}`"
            );
            value
        }
        None => json!({}),
    };
    let calls = if KNOWN_TOOLS.contains(&a.tool.as_str()) {
        let mut call = Call::new(a.tool.clone(), input).with_cwd(&cwd);
        call.read_only = a.read_only;
        vec![call]
    } else {
        match clients::translate(Client::ClaudeCode, &a.tool, &input, &cwd) {
            Ok(mut calls) => {
                for c in &mut calls {
                    c.read_only |= a.read_only;
                }
                calls
            }
            Err(message) => {
                return Ok(refusal(&a.tool, "client-input", "bad-tool-input", message));
            }
        }
    };
    Ok(front.evaluate(&calls).unwrap_or_else(|| {
        refusal(
            &a.tool,
            "client-input",
            "no-call",
            "nothing to judge".into(),
        )
    }))
}

fn explain_bash(a: super::bash::Args) -> anyhow::Result<Verdict> {
    let policy = Policy::load(a.policy.as_deref())?;
    let cwd = match a.cwd {
        Some(cwd) => cwd,
        None => current_dir()?,
    };
    let opts = FrontOptions {
        roots: a.roots,
        read_only_roots: a.read_only_roots,
        allow_network: a.allow_network,
        ..FrontOptions::default()
    };
    let front = Front::load(&policy, &cwd, &opts)?;
    let call = Call::new("run_bash", json!({ "command": a.command.join(" ") })).with_cwd(&cwd);
    Ok(front.evaluate(&[call]).unwrap_or_else(|| {
        refusal(
            "run_bash",
            "client-input",
            "no-call",
            "nothing to judge".into(),
        )
    }))
}

fn explain_path(a: super::path::Args) -> anyhow::Result<Verdict> {
    let policy = Policy::load(a.policy.as_deref())?;
    let cwd = match a.cwd {
        Some(cwd) => cwd,
        None => current_dir()?,
    };
    let (tool, key) = match a.op.as_str() {
        "read" => ("read_file", "file_path"),
        "write" => ("file_write", "file_path"),
        "list" => ("glob_files", "path"),
        "execute-dir" => ("run_bash", "working_dir"),
        other => anyhow::bail!("unknown op `{other}`; expected read, write, list or execute-dir"),
    };
    let opts = FrontOptions {
        roots: a.roots,
        read_only_roots: a.read_only_roots,
        ..FrontOptions::default()
    };
    let front = Front::load(&policy, &cwd, &opts)?;
    let path = a.path.display().to_string();
    let mut input = json!({ key: path });
    if tool == "run_bash"
        && let Some(obj) = input.as_object_mut()
    {
        obj.insert("command".to_owned(), json!("true"));
    }
    let call = Call::new(tool, input).with_cwd(&cwd);
    Ok(front
        .evaluate(&[call])
        .unwrap_or_else(|| refusal(tool, "client-input", "no-call", "nothing to judge".into())))
}

/// ANSI styling, or none.
#[derive(Debug, Clone, Copy)]
struct Style {
    on: bool,
}

impl Style {
    fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            on: !no_color && std::io::stdout().is_terminal(),
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn decision(self, decision: Decision) -> String {
        let code = match decision {
            Decision::Allow => "1;32",
            Decision::Ask => "1;33",
            Decision::Deny => "1;31",
        };
        self.paint(code, decision.as_str())
    }
}

fn render(trace: &Verdict, style: Style) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} `{}` (mode {})\n",
        style.paint("1", "explain"),
        trace.tool,
        trace.mode
    ));
    let deciding = trace.deciding();
    for (i, step) in trace.steps.iter().enumerate() {
        let marker = if deciding.is_some_and(|d| std::ptr::eq(d, step)) {
            "*"
        } else {
            " "
        };
        out.push_str(&format!(
            "{marker}{}. {}\n",
            i + 1,
            style.paint("1;36", step.layer)
        ));
        out.push_str(&format!("     saw:     {}\n", step.saw));
        out.push_str(&format!(
            "     decided: {} ({})\n",
            style.decision(step.decision),
            step.code
        ));
        out.push_str(&format!("     why:     {}\n", step.message));
        if let (Some(rule), Some(source)) = (&step.rule, &step.source) {
            out.push_str(&format!("     rule:    `{rule}` at {source}\n"));
        }
    }
    let by = trace
        .deciding()
        .map(|s| format!(" (decided by {}: {})", s.layer, s.code))
        .unwrap_or_default();
    out.push_str(&format!(
        "decision: {}{by}\n",
        style.decision(trace.decision)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::Step;

    fn trace() -> Verdict {
        let step = |layer, decision, code: &str| Step {
            layer,
            saw: "x".into(),
            decision,
            code: code.into(),
            message: "m".into(),
            rule: None,
            source: None,
        };
        Verdict {
            tool: "run_bash".into(),
            mode: perm_rules::PermissionMode::Default,
            decision: Decision::Deny,
            steps: vec![
                step("perm-rules", Decision::Allow, "rule-allow"),
                step("bash-guard", Decision::Deny, "network"),
            ],
            final_args: Value::Null,
            additional_context: String::new(),
            resolution: None,
            asks: Vec::new(),
            resolved_by: None,
            advice: None,
        }
    }

    #[test]
    fn plain_render_marks_the_deciding_layer() {
        let text = render(&trace(), Style { on: false });
        assert!(text.contains("*2. bash-guard"), "{text}");
        assert!(text.contains(" 1. perm-rules"), "{text}");
        assert!(
            text.ends_with("decision: deny (decided by bash-guard: network)\n"),
            "{text}"
        );
        assert!(!text.contains('\x1b'));
    }

    #[test]
    fn colour_render_uses_ansi() {
        let text = render(&trace(), Style { on: true });
        assert!(text.contains("\x1b[1;31mdeny\x1b[0m"), "{text}");
    }
}
