//! The `agent-guard` command line. See the workspace README for a tour.

mod cmd;
mod front;
mod policy;
mod report;
mod resident;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit status:
  0  the evaluation completed (whatever the decision)
  2  bad arguments, a bad policy file or bad input";

/// Stand between an LLM agent and the tools it calls.
#[derive(Parser, Debug)]
#[command(name = "agent-guard", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a bundled scripted agent session through every layer and print each decision.
    Demo(cmd::demo::Args),
    /// Run a scripted session (or a real model) through every layer.
    Run(cmd::run::Args),
    /// Decide one tool call against the permission rules (layer 2).
    Check(cmd::check::Args),
    /// Decide one path against the filesystem sandbox (layer 4).
    Path(cmd::path::Args),
    /// Classify one bash command (layer 5).
    Bash(cmd::bash::Args),
    /// List audit-log rows and a per-tool summary (layer 3).
    Audit(cmd::audit::Args),
    /// Stop a session (or all) on every guard sharing the audit database (the kill switch).
    Cancel(cmd::cancel::Args),
    /// Auto mode: `auto eval --corpus FILE` scores the policy's `[auto]` model.
    Auto(cmd::auto::Args),
    /// Let one refused call through once: run it yourself with the code from a hook's refusal.
    AllowOnce(cmd::allow_once::Args),
    /// Validate a bash command, then run it confined (layer 5).
    Exec(cmd::exec::Args),
    #[command(flatten)]
    Hook(HookCommand),
    /// Run policy test cases: expected decisions for tool calls; non-zero exit on any failure.
    Test(cmd::test::Args),
    /// Find rules that can never decide, allow rules that allow everything, unknown tools.
    Lint(cmd::lint::Args),
    /// Explain a decision with a human trace of every layer.
    Explain(cmd::explain::Args),
    /// Install the guard as the hook of Claude Code, Codex or Gemini CLI (merging settings).
    Init(cmd::init::Args),
    /// Check a hook installation end to end (settings, program, policy, a self-test).
    Doctor(cmd::doctor::Args),
    /// Serve approvals: Asks from `run --approve http://ADDR` and the hooks' --approve-via,
    /// answered from a web page.
    Serve(cmd::serve::Args),
    /// The sandbox trampoline `exec` re-executes itself as (internal).
    #[command(name = "__sandbox-exec", hide = true)]
    SandboxExec(cmd::exec::TrampolineArgs),
    /// The resident hook guard `agent-guard-hook` hands calls to (internal).
    #[command(name = "__hook-server", hide = true)]
    HookServer(resident::server::Args),
}

/// `println!` panics when stdout is a closed pipe (`agent-guard demo | head`), because Rust
/// ignores SIGPIPE. Exit quietly with the shell's SIGPIPE status instead of printing a panic;
/// every other panic keeps the default report.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

/// The hook subcommands alone. A client starts a hook process for every tool call, and
/// building the whole command tree (twenty subcommands, their arguments and help) was a few
/// percent of such a call; the parse and the help a hook prints are the same.
#[derive(Parser, Debug)]
#[command(name = "agent-guard", version, about, after_help = EXIT_CODES)]
struct HookCli {
    #[command(subcommand)]
    command: HookCommand,
}

#[derive(Subcommand, Debug)]
enum HookCommand {
    /// A drop-in Claude Code hook for every event: hook JSON on stdin, decision on stdout.
    #[command(name = "claude-hook")]
    Claude(cmd::claude_hook::Args),
    /// A Codex CLI hook (PreToolUse, PermissionRequest, PostToolUse; apply_patch parsed).
    #[command(name = "codex-hook")]
    Codex(cmd::codex_hook::Args),
    /// A Gemini CLI hook (BeforeTool, AfterTool).
    #[command(name = "gemini-hook")]
    Gemini(cmd::gemini_hook::Args),
}

const HOOK_COMMANDS: [&str; 3] = ["claude-hook", "codex-hook", "gemini-hook"];

/// `exec` alone, for the same reason: its run waits on the parse (the trampoline it started
/// waits for its spec), and the parse and help are those of the whole command line's `exec`.
#[derive(Parser, Debug)]
#[command(name = "agent-guard", version, about, after_help = EXIT_CODES)]
struct ExecCli {
    #[command(subcommand)]
    command: ExecCommand,
}

#[derive(Subcommand, Debug)]
enum ExecCommand {
    /// Validate a bash command, then run it confined (layer 5).
    Exec(cmd::exec::Args),
}

impl HookCommand {
    /// The policy file the hook was told to use (`--policy` or `AGENT_GUARD_POLICY`).
    fn policy(&self) -> Option<&std::path::Path> {
        match self {
            HookCommand::Claude(args) => args.hook.policy.as_deref(),
            HookCommand::Codex(args) => args.hook.policy.as_deref(),
            HookCommand::Gemini(args) => args.hook.policy.as_deref(),
        }
    }

    fn run(self) -> ExitCode {
        match self {
            HookCommand::Claude(args) => cmd::claude_hook::run(args),
            HookCommand::Codex(args) => cmd::codex_hook::run(args),
            HookCommand::Gemini(args) => cmd::gemini_hook::run(args),
        }
    }
}

/// The command line, or the exit status after clap printed why not.
fn parse<T: Parser>() -> Result<T, ExitCode> {
    T::try_parse().map_err(|err| ExitCode::from(refused_parse(&err)))
}

/// Prints why clap did not parse the command line; the exit status is 2 for usage errors, 0
/// for `--help`/`--version` (clap's contract).
fn refused_parse(err: &clap::Error) -> u8 {
    let _ = err.print();
    if err.use_stderr() { 2 } else { 0 }
}

/// The hook subcommands' parser, built in advance by an idle judge of the resident guard
/// (building it is most of what parsing a hook's arguments costs).
static HOOK_CLI: std::sync::Mutex<Option<clap::Command>> = std::sync::Mutex::new(None);

/// Builds the hook subcommands' parser now, for the next [`run_hook`].
pub(crate) fn prepare_hook_cli() {
    use clap::CommandFactory as _;
    if let Ok(mut cli) = HOOK_CLI.lock() {
        let mut command = HookCli::command();
        // What the first parse would do (each subcommand's arguments put in order): now.
        command.build();
        *cli = Some(command);
    }
}

/// A hook subcommand with these arguments (without the program name), as a judge of the
/// resident guard runs it: the exit status clap's contract gives a parse that does not run.
pub(crate) fn run_hook(args: Vec<std::ffi::OsString>) -> u8 {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let argv = std::iter::once(std::ffi::OsString::from("agent-guard")).chain(args);
    let mut command = HOOK_CLI
        .lock()
        .ok()
        .and_then(|mut cli| cli.take())
        .unwrap_or_else(HookCli::command);
    let parsed = command
        .try_get_matches_from_mut(argv)
        .and_then(|matches| HookCli::from_arg_matches(&matches));
    match parsed {
        // A hook ends the process itself (through `resident::exit`); returning is a bug, and
        // a refusal.
        Ok(cli) => {
            if let Some(policy) = cli.command.policy() {
                resident::note(resident::Note::Policy, policy);
            }
            let _ = cli.command.run();
            2
        }
        Err(err) => refused_parse(&err),
    }
}

fn main() -> ExitCode {
    quiet_broken_pipe();
    if std::env::args_os()
        .nth(1)
        .is_some_and(|first| HOOK_COMMANDS.iter().any(|h| first == *h))
    {
        return match parse::<HookCli>() {
            Ok(cli) => cli.command.run(),
            Err(code) => code,
        };
    }
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("exec")) {
        // The sandbox trampoline first, forked while this process has one thread: it enters
        // its namespaces beside the parse, the policy's load and the command's analysis (it
        // waits for its spec, and runs nothing it is not sent). Any way out but the run kills
        // it.
        let early = cmd::exec::Early::start();
        let ExecCli {
            command: ExecCommand::Exec(args),
        } = match parse::<ExecCli>() {
            Ok(cli) => cli,
            Err(code) => return code,
        };
        return report_result(cmd::exec::run(args, Some(early)));
    }
    let cli = match parse::<Cli>() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let result = match cli.command {
        Command::Demo(args) => cmd::demo::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Path(args) => cmd::path::run(args),
        Command::Bash(args) => cmd::bash::run(args),
        Command::Audit(args) => cmd::audit::run(args),
        Command::Cancel(args) => cmd::cancel::run(args),
        Command::AllowOnce(args) => cmd::allow_once::run(args),
        Command::Auto(args) => cmd::auto::run(args),
        Command::Exec(args) => cmd::exec::run(args, None),
        Command::Hook(hook) => return hook.run(),
        Command::Test(args) => cmd::test::run(args),
        Command::Lint(args) => cmd::lint::run(args),
        Command::Explain(args) => cmd::explain::run(args),
        Command::Init(args) => cmd::init::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::SandboxExec(args) => return cmd::exec::trampoline(args),
        Command::HookServer(args) => resident::server::run(args),
    };
    report_result(result)
}

/// A subcommand's exit status; an error is printed and exits 2.
fn report_result(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("agent-guard: {err:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    fn exec_help(mut cli: clap::Command) -> String {
        cli.build();
        cli.find_subcommand_mut("exec")
            .unwrap()
            .render_long_help()
            .to_string()
    }

    #[test]
    fn exec_alone_helps_as_the_whole_command_line_s_exec() {
        let whole = exec_help(Cli::command());
        assert!(whole.contains("Usage: agent-guard exec"), "{whole}");
        assert_eq!(exec_help(ExecCli::command()), whole);
    }
}
