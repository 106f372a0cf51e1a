//! `agent-guard exec`: validate a bash command with bash-guard, then run it confined.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agent_core::tools::SandboxJudge;
use anyhow::Context as _;
use bash_guard::{
    Analyzer, BashConfig, Confinement, ExecConfig, ExecError, ExecRequest, Runner,
    StartedTrampoline, Trampoline,
};
use fs_sandbox::{Access, Op, SandboxConfig};
use perm_rules::Decision;

use crate::report::{Reason, Report};

/// Arguments of `agent-guard exec`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Policy file (`[sandbox]` roots, `[bash]` analysis, `[bash.exec]` execution).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// A read-write root (repeatable); the cwd is the root when none is given.
    #[arg(long = "root")]
    roots: Vec<PathBuf>,
    /// A read-only root (repeatable).
    #[arg(long = "read-only-root")]
    read_only_roots: Vec<PathBuf>,
    /// Working directory (default: the current directory); must be inside a root.
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Timeout in seconds (default `AGENT_TOOL_TIMEOUT_SECS`, else 60; clamped to the maximum).
    #[arg(long, env = "AGENT_TOOL_TIMEOUT_SECS")]
    timeout: Option<u64>,
    /// Let the command use the network (TCP connect/bind is denied otherwise).
    #[arg(long)]
    allow_network: bool,
    /// Memory cap of the whole run: bytes, or with a `K`/`M`/`G` suffix (default: `[bash.exec]
    /// memory_max_bytes`, else 4G). A memory cgroup where available, else `RLIMIT_AS`.
    #[arg(long, value_parser = parse_size)]
    memory_max: Option<u64>,
    /// Run a command the analyzer asks about (never one it denies).
    #[arg(long)]
    yes: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// The command, after `--`.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

/// Hidden arguments of `agent-guard __sandbox-exec` (the trampoline).
#[derive(clap::Args, Debug)]
pub(crate) struct TrampolineArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<std::ffi::OsString>,
}

/// `512M`, `4G`, `1048576`: a size in bytes with an optional binary suffix.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                _ => return Err(format!("unknown size suffix in `{text}` (use K, M or G)")),
            };
            (t.get(..i).unwrap_or_default(), shift)
        }
        _ => (t, 0),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 512M, 4G)"))?;
    n.checked_mul(1u64 << shift)
        .filter(|b| *b > 0)
        .ok_or_else(|| format!("`{text}` is out of range"))
}

/// Runs the trampoline: confines this process, then executes the shell.
pub(crate) fn trampoline(args: TrampolineArgs) -> ExitCode {
    bash_guard::trampoline_main(args.args)
}

/// The name of the small trampoline binary installed beside `agent-guard`.
const TRAMPOLINE_BIN: &str = "agent-guard-sandbox-exec";

/// The trampoline to confine with, and its leading arguments: the small
/// `agent-guard-sandbox-exec` beside this executable when there is one (same package, same
/// build), else this executable's `__sandbox-exec`. Both run the same `trampoline_main`; the
/// small one only starts faster. `exec` and `run`/`demo` both take theirs from here.
pub(crate) fn trampoline_program() -> anyhow::Result<(std::path::PathBuf, Vec<&'static str>)> {
    let exe = std::env::current_exe().context("cannot find the agent-guard executable")?;
    let small = exe.with_file_name(TRAMPOLINE_BIN);
    if small.is_file() {
        return Ok((small, Vec::new()));
    }
    Ok((exe, vec!["__sandbox-exec", "--"]))
}

/// What `exec` starts before its arguments are parsed: the sandbox trampoline, which waits for
/// its spec while the policy and the analysis run (and the async runtime, when the trampoline
/// is tokio's child).
pub(crate) struct Early {
    rt: Option<tokio::runtime::Runtime>,
    started: Option<StartedTrampoline>,
}

impl Early {
    /// A started trampoline. A trampoline that cannot start is started again by the run, which
    /// reports why it cannot.
    ///
    /// Called first in `main`, while the process has one thread: the trampoline is then a fork
    /// of this process (no executable to load), and the runtime is left for the run to start
    /// after the trampoline has its spec. Where the fork is refused (no pidfds) it is the small
    /// executable, started within a runtime started now.
    pub(crate) fn start() -> Early {
        // The namespaces of the default limits (isolated; the network blocked unless the
        // arguments allow it) are entered at once; a policy that asks for others makes the run
        // start a trampoline again.
        let allow_network = std::env::args_os()
            .skip(2)
            .take_while(|a| a != "--")
            .any(|a| a == "--allow-network");
        if let Ok(forked) = StartedTrampoline::fork_isolated(!allow_network) {
            return Early {
                rt: None,
                started: Some(forked),
            };
        }
        let rt = runtime().ok();
        let started = rt.as_ref().and_then(|rt| {
            let _in_runtime = rt.enter();
            trampoline_program()
                .ok()
                .and_then(|(program, args)| Trampoline::with_args(program, args).start().ok())
        });
        Early { rt, started }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn refuse(
    json: bool,
    decision: Decision,
    reasons: Vec<Reason>,
    extra: Option<serde_json::Value>,
) -> anyhow::Result<ExitCode> {
    let mut report = Report::new(decision, reasons).with("ran", false);
    if let Some(extra) = extra {
        report = report.with("verdict", extra);
    }
    report.print(json)?;
    Ok(ExitCode::from(1))
}

/// Runs the subcommand. Exit status: the command's own exit code when it ran (128+signal when
/// killed, 124 on timeout), 1 when it was refused, 2 for bad arguments.
pub(crate) fn run(args: Args, early: Option<Early>) -> anyhow::Result<ExitCode> {
    let policy = crate::policy::Policy::load(args.policy.as_deref())?;
    let mut bash_table = match toml::Value::try_from(&policy.doc.bash) {
        Ok(toml::Value::Table(t)) => t,
        Ok(_) => toml::Table::new(),
        Err(e) => anyhow::bail!("bad [bash] section: {e}"),
    };
    let exec_config: ExecConfig = match bash_table.remove("exec") {
        Some(v) => v
            .try_into()
            .map_err(|e| anyhow::anyhow!("bad [bash.exec] section: {e}"))?,
        None => ExecConfig::default(),
    };
    let bash_config: BashConfig = toml::Value::Table(bash_table)
        .try_into()
        .map_err(|e| anyhow::anyhow!("bad [bash] section: {e}"))?;

    // The run's limits: the started trampoline gets them (and its cgroups) now, and enters its
    // namespaces while the sandbox is built. The roots follow once it is.
    let mut limits = Confinement::from_config(&exec_config, Vec::new(), Vec::new());
    limits.block_network = !args.allow_network;
    if let Some(bytes) = args.memory_max {
        limits.memory_max = Some(bytes);
    }
    let runner = Runner::new(exec_config);
    let (rt, started) = match early {
        Some(Early { rt, started }) => (rt, started),
        None => (None, None),
    };
    // A trampoline that cannot be prepared is dropped (killed); the run then starts one of its
    // own and reports why it cannot be confined.
    let mut started = started.and_then(|mut s| runner.prepare(&mut s, &limits).ok().map(|()| s));
    let cwd = match &args.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("bad working directory `{}`", cwd.display()))?;
    let command = args.command.join(" ");

    // Round-trip through a TOML value so this works whether the policy holds the section typed or
    // as a raw table.
    let sandbox_config: SandboxConfig = toml::Value::try_from(&policy.doc.sandbox)
        .map_err(|e| anyhow::anyhow!("bad [sandbox] section: {e}"))?
        .try_into()
        .map_err(|e| anyhow::anyhow!("bad [sandbox] section: {e}"))?;
    let mut builder = sandbox_config.builder(&cwd);
    for r in &args.roots {
        builder = builder.root(r, Access::ReadWrite);
    }
    for r in &args.read_only_roots {
        builder = builder.root(r, Access::ReadOnly);
    }
    if args.roots.is_empty() && sandbox_config.roots.is_empty() {
        builder = builder.root(&cwd, Access::ReadWrite);
    }
    let sandbox = std::sync::Arc::new(builder.build().context("bad sandbox roots")?);

    if let Err(e) = sandbox.check(&cwd, Op::ExecuteDir) {
        return refuse(
            args.json,
            Decision::Deny,
            vec![Reason::new("fs-sandbox", e.code(), e.to_string())],
            None,
        );
    }

    let (mut read_roots, mut write_roots) = (Vec::new(), Vec::new());
    for root in sandbox.roots() {
        match root.access() {
            Access::ReadWrite => write_roots.push(root.path().to_path_buf()),
            Access::ReadOnly => read_roots.push(root.path().to_path_buf()),
        }
    }
    let confinement = Confinement {
        read_roots,
        write_roots,
        ..limits
    };
    // The trampoline confines itself with these roots while the command is judged; a run that
    // is refused kills it before it names any command.
    if let Some(s) = started.as_mut()
        && runner.prepare_files(s, &confinement).is_err()
    {
        started = None;
    }

    let verdict = Analyzer::new(bash_config).analyze(
        &command,
        &cwd,
        &SandboxJudge::new(std::sync::Arc::clone(&sandbox)),
    );
    let reasons: Vec<Reason> = verdict
        .deciding()
        .map(|f| Reason::new("bash-guard", f.code, f.message.clone()))
        .collect();
    let verdict_json = serde_json::to_value(&verdict)?;
    match verdict.decision {
        bash_guard::Decision::Deny => {
            return refuse(args.json, Decision::Deny, reasons, Some(verdict_json));
        }
        bash_guard::Decision::Ask if !args.yes => {
            let mut reasons = reasons;
            reasons.push(Reason::new(
                "agent-guard",
                "exec.ask_needs_yes",
                "the command needs confirmation: review it and pass `--yes` to run it",
            ));
            return refuse(args.json, Decision::Ask, reasons, Some(verdict_json));
        }
        _ => {}
    }

    let request = ExecRequest {
        command,
        cwd,
        timeout: args.timeout.map(Duration::from_secs),
        confinement: Some(confinement),
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let rt = match rt {
        Some(rt) => rt,
        None => runtime()?,
    };
    let ran = match started {
        Some(started) => rt.block_on(runner.run_started(started, &request, &cancel)),
        None => {
            let (program, args) = trampoline_program()?;
            let runner = runner.with_trampoline_args(program, args);
            rt.block_on(runner.run(&request, &cancel))
        }
    };
    let result = match ran {
        Ok(r) => r,
        Err(ExecError::Unconfined(why)) => {
            return refuse(
                args.json,
                Decision::Deny,
                vec![Reason::new(
                    "bash-guard",
                    "exec.unconfined",
                    format!("refusing to run unconfined: {why}"),
                )],
                None,
            );
        }
        Err(e) => return Err(e.into()),
    };
    let code = if result.timed_out {
        124
    } else {
        match (result.exit_code, result.signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => 1,
        }
    };
    if args.json {
        let mut value = serde_json::to_value(&result)?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("ran".into(), true.into());
            obj.insert("decision".into(), serde_json::to_value(verdict.decision)?);
            obj.insert(
                "truncated".into(),
                (result.stdout_truncated || result.stderr_truncated).into(),
            );
        }
        println!("{}", serde_json::to_string(&value)?);
    } else {
        print!("{}", result.stdout);
        eprint!("{}", result.stderr);
        if result.timed_out {
            eprintln!(
                "agent-guard: timed out after {} s",
                result.timeout.as_secs()
            );
        }
        if result.write_cap_exceeded {
            eprintln!(
                "agent-guard: stopped after writing {} bytes (the cap is [bash.exec] \
                 max_written_bytes = {})",
                result.bytes_written,
                request
                    .confinement
                    .as_ref()
                    .and_then(|c| c.max_written)
                    .unwrap_or_default()
            );
        }
    }
    Ok(ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4g"), Ok(4 << 30));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }
}
