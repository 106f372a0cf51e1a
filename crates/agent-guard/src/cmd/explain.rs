//! `agent-guard explain`: a decision with a human trace of every layer consulted.
//!
//! `explain check`, `explain bash` and `explain path` take the arguments of `check`, `bash`
//! and `path`, run the call through the same composed layers as `claude-hook` (`trace.rs`),
//! and print what each layer saw and decided. Colour is used when stdout is a terminal and
//! `NO_COLOR` is unset.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use fs_sandbox::{Access, Sandbox};
use perm_rules::Decision;
use serde_json::{Value, json};

use bash_guard::Analyzer;

use super::trace::{Call, Guard, Trace, bash_config};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Every layer that applies is consulted and shown: perm-rules (the rules and mode), the built-in
credential paths, fs-sandbox (path tools) and bash-guard (run_bash). The overall decision is the
strictest one; the first layer that gave it is the one that decided.

Colour: when stdout is a terminal, unless NO_COLOR is set.

Exit status:
  0  the explanation was printed (whatever the decision)
  2  bad arguments, a bad policy file or bad input";

/// Arguments of `agent-guard explain`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

/// What to explain.
#[derive(clap::Subcommand, Debug)]
pub enum What {
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
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_inner(args).map_err(super::trace::one_line)
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let (trace, json) = match args.what {
        What::Check(a) => (explain_check(&a)?, a.json),
        What::Bash(a) => {
            let json = a.json;
            (explain_bash(a)?, json)
        }
        What::Path(a) => {
            let json = a.json;
            (explain_path(a)?, json)
        }
    };
    if json {
        println!("{}", serde_json::to_string(&trace.report()?)?);
    } else {
        print!("{}", render(&trace, Style::detect()));
    }
    Ok(ExitCode::SUCCESS)
}

fn explain_check(a: &super::check::Args) -> anyhow::Result<Trace> {
    let policy = Policy::load(a.policy.as_deref())?;
    let cwd = current_dir()?;
    let guard = Guard::load(&policy, a.mode.as_deref(), &cwd)?;
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
    Ok(
        match super::claude_hook::from_claude(&a.tool, &input, &cwd) {
            Ok(mut call) => {
                call.read_only = a.read_only;
                guard.evaluate(&call, true)
            }
            Err(_) => super::claude_hook::evaluate_claude(&guard, &a.tool, &input, &cwd, true),
        },
    )
}

fn explain_bash(a: super::bash::Args) -> anyhow::Result<Trace> {
    let policy = Policy::load(a.policy.as_deref())?;
    let cwd = match a.cwd {
        Some(cwd) => cwd,
        None => current_dir()?,
    };
    let mut guard = Guard::load(&policy, None, &cwd)?;
    guard.set_sandbox(Ok(sandbox_with_roots(
        &policy,
        &cwd,
        a.roots,
        a.read_only_roots,
    )?));
    let mut config = bash_config(&policy);
    if a.allow_network {
        config.block_network = false;
    }
    guard.set_analyzer(Analyzer::new(config));
    let call = Call {
        tool: "run_bash".to_owned(),
        input: json!({ "command": a.command.join(" ") }),
        read_only: false,
    };
    Ok(guard.evaluate(&call, true))
}

/// The sandbox exactly as `agent-guard path` and `agent-guard bash` build it: the policy's
/// roots plus the `--root`/`--read-only-root` flags.
fn sandbox_with_roots(
    policy: &Policy,
    cwd: &std::path::Path,
    roots: Vec<PathBuf>,
    read_only_roots: Vec<PathBuf>,
) -> anyhow::Result<Sandbox> {
    let mut builder = policy.doc.sandbox.builder(cwd);
    for root in roots {
        builder = builder.root(root, Access::ReadWrite);
    }
    for root in read_only_roots {
        builder = builder.root(root, Access::ReadOnly);
    }
    builder.build().map_err(|err| {
        anyhow::anyhow!(
            "bad sandbox configuration ({}): {err}",
            policy.source_name()
        )
    })
}

fn explain_path(a: super::path::Args) -> anyhow::Result<Trace> {
    let policy = Policy::load(a.policy.as_deref())?;
    let cwd = match a.cwd {
        Some(cwd) => cwd,
        None => current_dir()?,
    };
    let tool = match a.op.as_str() {
        "read" => "read_file",
        "write" => "file_write",
        "list" | "execute-dir" => "glob_files",
        other => anyhow::bail!("unknown op `{other}`; expected read, write, list or execute-dir"),
    };
    let mut guard = Guard::load(&policy, None, &cwd)?;
    guard.set_sandbox(Ok(sandbox_with_roots(
        &policy,
        &cwd,
        a.roots,
        a.read_only_roots,
    )?));
    let path = a.path.display().to_string();
    let key = if tool == "glob_files" {
        "path"
    } else {
        "file_path"
    };
    let call = Call {
        tool: tool.to_owned(),
        input: json!({ key: path }),
        read_only: false,
    };
    Ok(guard.evaluate(&call, true))
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

fn render(trace: &Trace, style: Style) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} `{}` (mode {})\n",
        style.paint("1", "explain"),
        trace.tool,
        trace.mode
    ));
    let deciding = trace.deciding().map(|s| s.layer);
    for (i, step) in trace.steps.iter().enumerate() {
        let marker = if Some(step.layer) == deciding && step.decision == trace.decision() {
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
        style.decision(trace.decision())
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::trace::Step;

    fn trace() -> Trace {
        let step = |layer, decision, code: &str| Step {
            layer,
            saw: "x".into(),
            decision,
            code: code.into(),
            message: "m".into(),
            rule: None,
            source: None,
        };
        Trace {
            tool: "run_bash".into(),
            mode: "default".into(),
            steps: vec![
                step("perm-rules", Decision::Allow, "rule-allow"),
                step("bash-guard", Decision::Deny, "network"),
            ],
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
