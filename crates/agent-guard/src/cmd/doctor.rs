//! `agent-guard doctor`: check an installation end to end, and say what to fix.
//!
//! The checks follow what a client does with the hook: it reads the settings file, runs the
//! handler registered for each event, the handler runs the program with the policy, and the
//! client reads the answer by its own protocol. A self-test replays two recorded tool calls
//! through the configured command exactly as the client would run it (`bash -c`, in the
//! project, with the client's project variables) and reads the answer by that client's rules:
//! a catastrophic command must come back denied in a form the client honours, and an
//! everyday read must not be denied.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::init::{
    ClientName, ClientSpec, EventSpec, Scope, TimeoutUnit, shell_quote, shell_words,
};
use super::lint::{ProgramStatus, Severity, hook_program_status, lint_policy};

const AFTER_HELP: &str = "\
Checks, for each client (all configured clients when none is named):
  settings   the client's settings file exists, is JSON, and hooks are not switched off
  <event>    an agent-guard handler is registered for every event the guard needs, with a
             matcher that covers every tool on the events that judge calls
  program    the handler's program resolves (absolute and executable, or on PATH)
  policy     the handler names a policy (--policy) that exists and lints clean
  self-test  the handler, run as the client runs it, denies `rm -rf ~` in a form the client
             honours, and does not deny a read inside the project

The self-test runs the real hook: with the policy's audit log on, it records two rows under
a session id `agent-guard-doctor-<time>` of its own (a new one per run, so the hook's
per-session limits never count earlier runs).

Exit status:
  0  every check passed
  1  a check failed (each FAIL says what to fix)
  2  bad arguments";

/// Arguments of `agent-guard doctor`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The client to check (default: every client with a settings file in the scope).
    pub client: Option<ClientName>,
    /// Check this project's settings (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// Check the user's settings under $HOME (the self-test runs in the current directory).
    #[arg(long)]
    pub user: bool,
    /// Seconds the self-test waits for each hook answer.
    #[arg(long, default_value_t = 20, value_name = "SECS")]
    pub timeout: u64,
}

/// The outcome of one check.
struct Check {
    name: String,
    ok: bool,
    detail: String,
    fix: Option<String>,
}

impl Check {
    fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: true,
            detail: detail.into(),
            fix: None,
        }
    }
    fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// How a client reads a hook's answer to a tool call.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// The call is blocked; the reason the client shows.
    Deny(String),
    /// The user is asked.
    Ask,
    /// The hook approves (the client may still apply its own rules).
    Allow,
    /// No decision: the client's own permission flow decides.
    NoDecision,
    /// The client rejects or ignores the answer (and, for a PreToolUse, runs the call).
    Broken(String),
}

impl Answer {
    fn describe(&self) -> String {
        match self {
            Answer::Deny(reason) if reason.is_empty() => "deny".to_owned(),
            Answer::Deny(reason) => format!("deny ({})", first_line(reason, 160)),
            Answer::Ask => "ask".to_owned(),
            Answer::Allow => "allow".to_owned(),
            Answer::NoDecision => {
                "no decision (the client's own permission flow decides)".to_owned()
            }
            Answer::Broken(why) => format!("an answer the client cannot use: {why}"),
        }
    }
}

/// What running a hook command produced.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn first_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}...")
    } else {
        line.to_owned()
    }
}

/// The JSON object a hook printed, when its stdout is one (clients look at the first
/// non-blank character).
fn json_answer(stdout: &str) -> Result<Option<Value>, String> {
    let trimmed = stdout.trim();
    if !trimmed.starts_with('{') {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(_) | Err(_) => Err(format!(
            "stdout starts with `{{` but is not one JSON object: `{}`",
            first_line(trimmed, 120)
        )),
    }
}

fn str_field<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |v, key| v.get(key))
        .and_then(Value::as_str)
}

/// Claude Code: exit 2 blocks; JSON decides whatever the exit code; any other exit without
/// valid JSON is a non-blocking error (the call runs).
fn read_claude(o: &Outcome) -> Answer {
    if o.code == Some(2) {
        return Answer::Deny(o.stderr.clone());
    }
    match json_answer(&o.stdout) {
        Err(why) => Answer::Broken(why),
        Ok(Some(v)) => {
            let reason = str_field(&v, &["hookSpecificOutput", "permissionDecisionReason"])
                .unwrap_or_default()
                .to_owned();
            match str_field(&v, &["hookSpecificOutput", "permissionDecision"]) {
                Some("deny") => Answer::Deny(reason),
                Some("ask") => Answer::Ask,
                Some("allow") => Answer::Allow,
                // Valid JSON decides whatever the exit code; without a decision, nothing is
                // decided (unless the legacy top-level block).
                Some("defer") | None => match str_field(&v, &["decision"]) {
                    Some("block") => {
                        Answer::Deny(str_field(&v, &["reason"]).unwrap_or_default().to_owned())
                    }
                    _ => Answer::NoDecision,
                },
                Some(other) => Answer::Broken(format!("unknown permissionDecision `{other}`")),
            }
        }
        Ok(None) if o.code == Some(0) => Answer::NoDecision,
        Ok(None) => Answer::Broken(format!(
            "exit {} without a JSON answer is a non-blocking error: Claude Code runs the call{}",
            code_text(o.code),
            stderr_hint(&o.stderr)
        )),
    }
}

/// Codex: only a deny with a non-empty reason (or exit 2 with stderr) blocks; `ask`, a bare
/// `allow`, and a reply carrying `continue`/`stopReason`/`suppressOutput` are rejected.
fn read_codex(o: &Outcome) -> Answer {
    if o.code == Some(2) {
        return if o.stderr.trim().is_empty() {
            Answer::Broken(
                "exit 2 with an empty stderr is a failed hook: Codex runs the call".to_owned(),
            )
        } else {
            Answer::Deny(o.stderr.clone())
        };
    }
    if o.code != Some(0) {
        return Answer::Broken(format!(
            "exit {} is a failed hook: Codex runs the call{}",
            code_text(o.code),
            stderr_hint(&o.stderr)
        ));
    }
    let v = match json_answer(&o.stdout) {
        Err(why) => return Answer::Broken(why),
        Ok(None) => return Answer::NoDecision,
        Ok(Some(v)) => v,
    };
    if let Some(key) = ["continue", "stopReason", "suppressOutput"]
        .into_iter()
        .find(|k| v.get(k).is_some())
    {
        return Answer::Broken(format!(
            "Codex rejects a PreToolUse reply that carries `{key}`, deny included"
        ));
    }
    let specific = str_field(&v, &["hookSpecificOutput", "permissionDecision"]);
    let reason = str_field(&v, &["hookSpecificOutput", "permissionDecisionReason"]).unwrap_or("");
    match specific {
        Some("deny") if reason.trim().is_empty() => {
            Answer::Broken("Codex rejects a deny without a reason".to_owned())
        }
        Some("deny") => Answer::Deny(reason.to_owned()),
        Some("ask") => Answer::Broken("Codex rejects `ask` and runs the call".to_owned()),
        Some("allow") if v.pointer("/hookSpecificOutput/updatedInput").is_some() => Answer::Allow,
        Some("allow") => Answer::Broken(
            "Codex rejects a bare `allow` (without updatedInput) as a failed hook".to_owned(),
        ),
        Some(other) => Answer::Broken(format!("unknown permissionDecision `{other}`")),
        None => match (str_field(&v, &["decision"]), str_field(&v, &["reason"])) {
            (Some("block"), Some(r)) if !r.trim().is_empty() => Answer::Deny(r.to_owned()),
            (Some(d), _) => Answer::Broken(format!("Codex rejects decision `{d}` here")),
            (None, _) => Answer::NoDecision,
        },
    }
}

/// Gemini CLI: JSON (on stdout, or on stderr when stdout is empty) decides whatever the exit
/// code; plain text: exit 0 allows, exit 1 allows with a warning, other codes deny.
fn read_gemini(o: &Outcome) -> Answer {
    let source = if o.stdout.trim().is_empty() {
        &o.stderr
    } else {
        &o.stdout
    };
    match json_answer(source) {
        Err(why) => Answer::Broken(why),
        Ok(Some(v)) => {
            let reason = str_field(&v, &["reason"]).unwrap_or_default().to_owned();
            match str_field(&v, &["decision"]) {
                Some("deny" | "block") => Answer::Deny(reason),
                Some("ask") => Answer::Ask,
                Some("allow" | "approve") => Answer::Allow,
                None => Answer::NoDecision,
                Some(other) => Answer::Broken(format!("unknown decision `{other}`")),
            }
        }
        Ok(None) => match o.code {
            Some(0) => Answer::NoDecision,
            Some(1) => Answer::Broken(format!(
                "exit 1 without JSON: Gemini CLI warns and runs the call{}",
                stderr_hint(&o.stderr)
            )),
            None => Answer::Broken(
                "the hook was killed by a signal: Gemini CLI runs the call".to_owned(),
            ),
            Some(_) => Answer::Deny(o.stderr.clone()),
        },
    }
}

fn code_text(code: Option<i32>) -> String {
    code.map_or_else(|| "by signal".to_owned(), |c| c.to_string())
}

fn stderr_hint(stderr: &str) -> String {
    match first_line(stderr, 200) {
        line if line.is_empty() => String::new(),
        line => format!(" (stderr: {line})"),
    }
}

/// The recorded events of the self-test: (what, event JSON, must be denied).
fn probes(name: ClientName, project: &Path) -> Vec<(String, Value, bool)> {
    let cwd = project.display().to_string();
    let readme = project.join("README.md").display().to_string();
    // A session of its own per run: the hooks' per-session call count and duplicate check
    // (kept in the audit database) must not see earlier runs' probes.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let session = format!("agent-guard-doctor-{stamp}");
    let session = session.as_str();
    match name {
        ClientName::Claude => {
            let event = |tool: &str, input: Value, id: &str| {
                json!({
                    "session_id": session,
                    "transcript_path": "/dev/null",
                    "cwd": cwd,
                    "permission_mode": "default",
                    "hook_event_name": "PreToolUse",
                    "tool_name": tool,
                    "tool_input": input,
                    "tool_use_id": id,
                })
            };
            vec![
                (
                    "Bash `rm -rf ~`".to_owned(),
                    event("Bash", json!({"command": "rm -rf ~"}), "toolu_doctor_1"),
                    true,
                ),
                (
                    format!("Read `{readme}`"),
                    event("Read", json!({"file_path": readme}), "toolu_doctor_2"),
                    false,
                ),
            ]
        }
        ClientName::Codex => {
            let event = |input: Value, id: &str| {
                json!({
                    "session_id": session,
                    "turn_id": "agent-guard-doctor-turn",
                    "transcript_path": null,
                    "cwd": cwd,
                    "hook_event_name": "PreToolUse",
                    "model": "gpt-5-codex",
                    "permission_mode": "default",
                    "tool_name": "Bash",
                    "tool_input": input,
                    "tool_use_id": id,
                })
            };
            vec![
                (
                    "Bash `rm -rf ~`".to_owned(),
                    event(json!({"command": "rm -rf ~"}), "call_doctor_1"),
                    true,
                ),
                (
                    "Bash `ls`".to_owned(),
                    event(json!({"command": "ls"}), "call_doctor_2"),
                    false,
                ),
            ]
        }
        ClientName::Gemini => {
            let event = |tool: &str, input: Value| {
                json!({
                    "session_id": session,
                    "transcript_path": "",
                    "cwd": cwd,
                    "hook_event_name": "BeforeTool",
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "tool_name": tool,
                    "tool_input": input,
                })
            };
            vec![
                (
                    "run_shell_command `rm -rf ~`".to_owned(),
                    event("run_shell_command", json!({"command": "rm -rf ~"})),
                    true,
                ),
                (
                    format!("read_file `{readme}`"),
                    event("read_file", json!({"file_path": readme})),
                    false,
                ),
            ]
        }
    }
}

/// Runs `command` as the client does (`bash -c` in the project), feeding `input`.
fn run_hook(
    command: &str,
    project: &Path,
    input: &Value,
    timeout: Duration,
) -> Result<Outcome, String> {
    let mut child = std::process::Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(project)
        .env("CLAUDE_PROJECT_DIR", project)
        .env("GEMINI_PROJECT_DIR", project)
        .env("GEMINI_CWD", project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `bash -c {command}`: {e}"))?;
    let payload = input.to_string();
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut pipe) = stdin {
            // A hook that exits without reading its input is fine.
            let _ = pipe.write_all(payload.as_bytes());
        }
    });
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(4 * 1024 * 1024).read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "no answer within {} s: the client would time out and run the call",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for the hook: {e}")),
        }
    };
    let _ = writer.join();
    Ok(Outcome {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Whether a matcher sends every tool to the handler.
fn covers_every_tool(name: ClientName, matcher: Option<&str>) -> bool {
    match matcher.map(str::trim) {
        None | Some("" | ".*" | "^.*$") => true,
        // Claude Code's and Codex's match-all; as a regex (Gemini CLI) it does not compile.
        Some("*") => name != ClientName::Gemini,
        Some(_) => false,
    }
}

/// One agent-guard handler found in the settings.
struct Handler {
    matcher: Option<String>,
    command: String,
    timeout: Option<f64>,
}

/// The agent-guard handlers of one event.
fn our_handlers(spec: &ClientSpec, settings: &Value, event: &EventSpec) -> Vec<Handler> {
    let groups = settings
        .pointer(&format!("/hooks/{}", event.name))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    groups
        .iter()
        .flat_map(|group| {
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .map(str::to_owned);
            group
                .get("hooks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|h| spec.is_our_handler(h))
                .filter_map(move |h| {
                    h.get("command").and_then(Value::as_str).map(|c| Handler {
                        matcher: matcher.clone(),
                        command: c.to_owned(),
                        timeout: h.get("timeout").and_then(Value::as_f64),
                    })
                })
        })
        .collect()
}

/// The approval wait of a hook command (`--approve-wait-secs`, else the default).
fn approve_wait_of(command: &str) -> u64 {
    let words = shell_words(command);
    let mut iter = words.iter();
    while let Some(w) = iter.next() {
        let value = match w.strip_prefix("--approve-wait-secs") {
            Some("") => iter.next().map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => continue,
        };
        if let Some(n) = value.and_then(|v| v.parse().ok()) {
            return n;
        }
    }
    super::init::DEFAULT_APPROVE_WAIT_SECS
}

/// The `--policy` argument of a hook command.
fn policy_of(command: &str) -> Option<String> {
    let words = shell_words(command);
    let mut iter = words.iter();
    while let Some(w) = iter.next() {
        if w == "--policy" {
            return iter.next().cloned();
        }
        if let Some(p) = w.strip_prefix("--policy=") {
            return Some(p.to_owned());
        }
    }
    None
}

/// Every check of one client.
fn check_client(spec: &ClientSpec, scope: &Scope, timeout: Duration) -> Vec<Check> {
    let mut checks = Vec::new();
    let path = spec.settings_path(&scope.base);
    let scope_flag = if scope.user {
        " --user".to_owned()
    } else {
        format!(
            " --project {}",
            shell_quote(&scope.base.display().to_string())
        )
    };
    let client = spec.subcommand.trim_end_matches("-hook");
    let init_fix = format!("agent-guard init {client}{scope_flag}");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            checks.push(Check::fail(
                "settings",
                format!("cannot read {}: {e}", path.display()),
                init_fix,
            ));
            return checks;
        }
    };
    let settings: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            checks.push(Check::fail(
                "settings",
                format!("{} is not JSON: {e}", path.display()),
                format!("fix the JSON by hand, then run `{init_fix}`"),
            ));
            return checks;
        }
    };
    let switched_off = match spec.name {
        ClientName::Claude => (settings.get("disableAllHooks") == Some(&Value::Bool(true)))
            .then_some("`disableAllHooks` is true: Claude Code runs no hook"),
        ClientName::Gemini => (settings.pointer("/hooks/enabled") == Some(&Value::Bool(false)))
            .then_some("`hooks.enabled` is false: Gemini CLI runs no hook"),
        ClientName::Codex => None,
    };
    match switched_off {
        Some(why) => checks.push(Check::fail(
            "settings",
            format!("{}: {why}", path.display()),
            "remove that setting",
        )),
        None => checks.push(Check::ok(
            "settings",
            format!("{} is valid JSON", path.display()),
        )),
    }

    let mut commands: Vec<String> = Vec::new();
    for event in spec.events {
        let handlers = our_handlers(spec, &settings, event);
        if handlers.is_empty() {
            checks.push(Check::fail(
                event.name,
                format!("no agent-guard `{}` handler", spec.subcommand),
                init_fix.clone(),
            ));
            continue;
        }
        let narrow: Vec<&str> = handlers
            .iter()
            .filter(|h| event.judges && !covers_every_tool(spec.name, h.matcher.as_deref()))
            .map(|h| h.matcher.as_deref().unwrap_or(""))
            .collect();
        // Gemini counts milliseconds: `30` (meant as seconds) times out at once, and a hook
        // that times out decides nothing, so the call runs.
        let too_short = handlers
            .iter()
            .filter_map(|h| h.timeout)
            .find(|t| spec.unit == TimeoutUnit::Millis && *t < 1000.0);
        // An approval wait the client's timeout cuts short: the hook is killed, decides
        // nothing, and the call runs (Codex, Gemini CLI).
        let short_wait = handlers.iter().filter(|_| event.judges).find_map(|h| {
            let secs = match spec.unit {
                TimeoutUnit::Seconds => h.timeout?,
                TimeoutUnit::Millis => h.timeout? / 1000.0,
            };
            let wait = approve_wait_of(&h.command);
            (secs < (wait + 5) as f64).then_some((secs, wait))
        });
        if let Some(m) = narrow.first() {
            checks.push(Check::fail(
                event.name,
                format!(
                    "the matcher `{m}` sends only some tools to the guard; the others run unjudged"
                ),
                init_fix.clone(),
            ));
        } else if let Some((secs, wait)) = short_wait {
            checks.push(Check::fail(
                event.name,
                format!(
                    "the hook timeout ({secs} s) does not cover the approval wait ({wait} s) and an answer: an unanswered ask times out, and the call runs"
                ),
                init_fix.clone(),
            ));
        } else if let Some(t) = too_short {
            checks.push(Check::fail(
                event.name,
                format!("the timeout {t} is in milliseconds: the hook times out before it answers, and the call runs"),
                init_fix.clone(),
            ));
        } else {
            let matcher = handlers
                .first()
                .and_then(|h| h.matcher.clone())
                .map_or_else(|| "no matcher".to_owned(), |m| format!("matcher `{m}`"));
            checks.push(Check::ok(
                event.name,
                format!("agent-guard handler, {matcher}"),
            ));
        }
        for h in handlers {
            if !commands.contains(&h.command) {
                commands.push(h.command);
            }
        }
    }

    if spec.name == ClientName::Codex {
        codex_trust(&scope.project, &commands, timeout, &mut checks);
    }
    if spec.name == ClientName::Gemini && !scope.user {
        let trust_env = std::env::var("GEMINI_CLI_TRUST_WORKSPACE").ok();
        let trusted = super::init::home().is_ok_and(|home| {
            super::client_trust::gemini_trusts(&home, &scope.project, trust_env.as_deref())
        });
        if trusted {
            checks.push(Check::ok("trust", "Gemini CLI trusts this folder"));
        } else {
            checks.push(Check::fail(
                "trust",
                "Gemini CLI does not trust this folder: it runs no project hook here, and `gemini --skip-trust` runs without them, silently",
                "trust the folder in Gemini CLI (or install with `agent-guard init gemini --user`, which --skip-trust keeps)",
            ));
        }
    }
    for command in &commands {
        let program_ok = match hook_program_status(command, &scope.project) {
            ProgramStatus::Resolves => {
                let program = shell_words(command).into_iter().next().unwrap_or_default();
                checks.push(Check::ok("program", format!("`{program}` resolves")));
                true
            }
            ProgramStatus::Unknowable(why) => {
                checks.push(Check::ok(
                    "program",
                    format!("not checked: cannot tell which program it runs ({why})"),
                ));
                true
            }
            ProgramStatus::Missing(why) => {
                checks.push(Check::fail(
                    "program",
                    format!(
                        "{why}: {} cannot start the hook, and a hook that cannot start decides nothing (the call runs)",
                        spec.display
                    ),
                    format!(
                        "install agent-guard on PATH, or rerun `{init_fix} --binary /path/to/agent-guard`"
                    ),
                ));
                false
            }
        };
        let policy_ok = check_policy(command, &scope.project, &mut checks);
        if program_ok {
            self_test(
                spec,
                command,
                &scope.project,
                timeout,
                policy_ok,
                &mut checks,
            );
        }
    }
    checks
}

/// Whether Codex runs our hooks: it skips a new or edited one, silently, until it is trusted.
fn codex_trust(project: &Path, ours: &[String], timeout: Duration, checks: &mut Vec<Check>) {
    match super::client_trust::codex_hooks(project, timeout) {
        Err(why) => checks.push(Check::fail(
            "trust",
            format!("cannot ask Codex whether it runs the hooks: {why}"),
            "put codex on PATH and run doctor again, or check `/hooks` in Codex",
        )),
        Ok(hooks) => {
            let ours: Vec<_> = hooks.iter().filter(|h| ours.contains(&h.command)).collect();
            let skipped: Vec<&str> = ours
                .iter()
                .filter(|h| !h.runs())
                .map(|h| h.event.as_str())
                .collect();
            if ours.is_empty() {
                checks.push(Check::fail(
                    "trust",
                    "Codex lists none of the agent-guard hooks for this project",
                    "check the project is trusted in Codex, then open `/hooks`",
                ));
            } else if skipped.is_empty() {
                checks.push(Check::ok("trust", "Codex trusts every agent-guard hook"));
            } else {
                checks.push(Check::fail(
                    "trust",
                    format!(
                        "Codex skips the agent-guard hooks for {} until they are trusted: every call runs unguarded",
                        skipped.join(", ")
                    ),
                    "open `/hooks` in Codex and trust the agent-guard hooks",
                ));
            }
        }
    }
}

/// The policy named by `command`: exists and lints clean. Returns whether it does.
fn check_policy(command: &str, project: &Path, checks: &mut Vec<Check>) -> bool {
    let Some(policy) = policy_of(command) else {
        checks.push(Check::fail(
            "policy",
            "the hook names no --policy, so only the built-in layers and AGENT_PERMISSIONS_* apply",
            "rerun `agent-guard init` (it adds --policy and a starter policy)",
        ));
        return false;
    };
    let path = project.join(&policy);
    if !path.is_file() {
        checks.push(Check::fail(
            "policy",
            format!(
                "{} does not exist: the hook refuses every call",
                path.display()
            ),
            "rerun `agent-guard init` to write a starter policy, or fix --policy",
        ));
        return false;
    }
    match lint_policy(&path, project, project) {
        Err(e) => {
            checks.push(Check::fail(
                "policy",
                format!("{}: {}", path.display(), crate::front::one_line(e)),
                format!(
                    "fix the policy; `agent-guard lint {}` shows it",
                    shell_quote(&policy)
                ),
            ));
            false
        }
        Ok(report) if report.errors() > 0 => {
            let lines: Vec<String> = report
                .problems
                .iter()
                .filter(|p| p.severity == Severity::Error)
                .take(3)
                .map(|p| p.line())
                .collect();
            checks.push(Check::fail(
                "policy",
                format!(
                    "{} has {} lint problem(s): {}",
                    path.display(),
                    report.errors(),
                    lines.join("; ")
                ),
                format!(
                    "agent-guard lint {} --project {}",
                    shell_quote(&policy),
                    shell_quote(&project.display().to_string())
                ),
            ));
            false
        }
        Ok(report) => {
            let warnings = report.problems.len();
            let extra = match warnings {
                0 => String::new(),
                n => format!(", {n} warning(s)"),
            };
            checks.push(Check::ok(
                "policy",
                format!(
                    "{} lints clean ({} rules{extra})",
                    path.display(),
                    report.rules
                ),
            ));
            true
        }
    }
}

fn self_test(
    spec: &ClientSpec,
    command: &str,
    project: &Path,
    timeout: Duration,
    policy_ok: bool,
    checks: &mut Vec<Check>,
) {
    let read = match spec.name {
        ClientName::Claude => read_claude,
        ClientName::Codex => read_codex,
        ClientName::Gemini => read_gemini,
    };
    for (what, event, must_deny) in probes(spec.name, project) {
        let name = "self-test";
        let outcome = match run_hook(command, project, &event, timeout) {
            Ok(o) => o,
            Err(why) => {
                checks.push(Check::fail(
                    name,
                    format!("{what}: {why}"),
                    "run the command by hand to see why",
                ));
                continue;
            }
        };
        if outcome.stderr.contains("unrecognized subcommand") {
            checks.push(Check::fail(
                name,
                format!(
                    "{what}: this agent-guard has no `{}` subcommand ({})",
                    spec.subcommand,
                    first_line(&outcome.stderr, 160)
                ),
                "install a newer agent-guard",
            ));
            return;
        }
        let answer = read(&outcome);
        let check = match (&answer, must_deny) {
            (Answer::Deny(_), true) => Check::ok(name, format!("{what} -> {}", answer.describe())),
            (_, true) => Check::fail(
                name,
                format!(
                    "{what} -> {}; {} would run it",
                    answer.describe(),
                    spec.display
                ),
                if policy_ok {
                    "this is a bug in the hook's answer: report it, and keep the client's own approval on"
                } else {
                    "fix the policy problem above first"
                },
            ),
            (Answer::Deny(_) | Answer::Broken(_), false) => Check::fail(
                name,
                format!(
                    "{what} -> {}; the guard would block everyday work",
                    answer.describe()
                ),
                "allow reads inside the project in the policy (e.g. `allow = [\"read_file\"]`) and check [sandbox] roots",
            ),
            (_, false) => Check::ok(name, format!("{what} -> {}", answer.describe())),
        };
        checks.push(check);
    }
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_inner(args).map_err(crate::front::one_line)
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let scope = Scope::resolve(args.project.as_deref(), args.user)?;
    let timeout = Duration::from_secs(args.timeout.max(1));
    let specs: Vec<&ClientSpec> = match args.client {
        Some(name) => vec![ClientSpec::of(name)],
        None => super::init::CLIENTS
            .iter()
            .copied()
            .filter(|s| s.settings_path(&scope.base).exists())
            .collect(),
    };
    if specs.is_empty() {
        let places: Vec<String> = super::init::CLIENTS
            .iter()
            .map(|s| s.settings_path(&scope.base).display().to_string())
            .collect();
        println!("FAIL  no client settings found ({})", places.join(", "));
        println!("      fix: agent-guard init claude|codex|gemini");
        return Ok(ExitCode::from(1));
    }
    let mut failed = 0;
    for spec in specs {
        println!(
            "{} ({})",
            spec.display,
            spec.settings_path(&scope.base).display()
        );
        for check in check_client(spec, &scope, timeout) {
            let tag = if check.ok { "OK  " } else { "FAIL" };
            println!("  {tag}  {}: {}", check.name, check.detail);
            if let Some(fix) = &check.fix {
                println!("        fix: {fix}");
            }
            failed += usize::from(!check.ok);
        }
        println!("  note: {}", spec.note);
    }
    match failed {
        0 => println!("all checks passed"),
        n => println!("{n} check(s) failed"),
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(code: i32, stdout: &str, stderr: &str) -> Outcome {
        Outcome {
            code: Some(code),
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
        }
    }

    const DENY: &str = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
    const ASK: &str = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"hm"}}"#;

    #[test]
    fn claude_answers() {
        assert_eq!(
            read_claude(&outcome(0, DENY, "")),
            Answer::Deny("no".into())
        );
        assert_eq!(
            read_claude(&outcome(1, DENY, "")),
            Answer::Deny("no".into())
        );
        assert_eq!(
            read_claude(&outcome(2, "", "blocked")),
            Answer::Deny("blocked".into())
        );
        assert_eq!(read_claude(&outcome(0, ASK, "")), Answer::Ask);
        assert_eq!(read_claude(&outcome(0, "", "")), Answer::NoDecision);
        assert!(matches!(
            read_claude(&outcome(1, "", "boom")),
            Answer::Broken(_)
        ));
        assert!(matches!(
            read_claude(&outcome(101, "panicked", "")),
            Answer::Broken(_)
        ));
        assert!(matches!(
            read_claude(&outcome(0, "{not json", "")),
            Answer::Broken(_)
        ));
    }

    #[test]
    fn codex_answers() {
        assert_eq!(read_codex(&outcome(0, DENY, "")), Answer::Deny("no".into()));
        assert!(matches!(
            read_codex(&outcome(0, ASK, "")),
            Answer::Broken(_)
        ));
        let voided = r#"{"continue":true,"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
        assert!(matches!(
            read_codex(&outcome(0, voided, "")),
            Answer::Broken(_)
        ));
        let no_reason = r#"{"hookSpecificOutput":{"permissionDecision":"deny"}}"#;
        assert!(matches!(
            read_codex(&outcome(0, no_reason, "")),
            Answer::Broken(_)
        ));
        assert!(matches!(read_codex(&outcome(2, "", "")), Answer::Broken(_)));
        assert_eq!(
            read_codex(&outcome(2, "", "why")),
            Answer::Deny("why".into())
        );
        assert_eq!(read_codex(&outcome(0, "", "")), Answer::NoDecision);
        let bare_allow = r#"{"hookSpecificOutput":{"permissionDecision":"allow"}}"#;
        assert!(matches!(
            read_codex(&outcome(0, bare_allow, "")),
            Answer::Broken(_)
        ));
        let legacy = r#"{"decision":"block","reason":"r"}"#;
        assert_eq!(
            read_codex(&outcome(0, legacy, "")),
            Answer::Deny("r".into())
        );
        assert!(matches!(
            read_codex(&outcome(1, DENY, "")),
            Answer::Broken(_)
        ));
    }

    #[test]
    fn gemini_answers() {
        assert_eq!(
            read_gemini(&outcome(0, r#"{"decision":"deny","reason":"r"}"#, "")),
            Answer::Deny("r".into())
        );
        assert_eq!(
            read_gemini(&outcome(1, r#"{"decision":"block","reason":"r"}"#, "")),
            Answer::Deny("r".into())
        );
        assert_eq!(
            read_gemini(&outcome(0, r#"{"decision":"ask"}"#, "")),
            Answer::Ask
        );
        assert_eq!(
            read_gemini(&outcome(3, "", r#"{"decision":"deny","reason":"e"}"#)),
            Answer::Deny("e".into())
        );
        assert_eq!(read_gemini(&outcome(0, "plain", "")), Answer::NoDecision);
        assert!(matches!(
            read_gemini(&outcome(1, "", "crash")),
            Answer::Broken(_)
        ));
        assert_eq!(
            read_gemini(&outcome(2, "", "no")),
            Answer::Deny("no".into())
        );
    }

    #[test]
    fn matchers_that_cover_every_tool() {
        assert!(covers_every_tool(ClientName::Claude, Some("*")));
        assert!(covers_every_tool(ClientName::Codex, None));
        assert!(covers_every_tool(ClientName::Gemini, Some(".*")));
        assert!(covers_every_tool(ClientName::Codex, Some("*")));
        assert!(!covers_every_tool(ClientName::Gemini, Some("*")));
        assert!(!covers_every_tool(ClientName::Claude, Some("Bash")));
        assert!(!covers_every_tool(
            ClientName::Codex,
            Some("^(Bash|apply_patch)$")
        ));
    }

    #[test]
    fn approve_wait_argument() {
        assert_eq!(approve_wait_of("/a/agent-guard claude-hook"), 55);
        assert_eq!(
            approve_wait_of("/a/agent-guard claude-hook --approve-wait-secs 10"),
            10
        );
        assert_eq!(
            approve_wait_of("/a/agent-guard claude-hook --approve-wait-secs=99"),
            99
        );
    }

    #[test]
    fn policy_argument() {
        assert_eq!(
            policy_of("agent-guard claude-hook --policy '/a b/p.toml'"),
            Some("/a b/p.toml".into())
        );
        assert_eq!(
            policy_of("agent-guard codex-hook --policy=/p"),
            Some("/p".into())
        );
        assert_eq!(policy_of("agent-guard codex-hook"), None);
    }

    #[test]
    fn every_client_has_a_deny_probe_and_a_benign_probe() {
        for name in [ClientName::Claude, ClientName::Codex, ClientName::Gemini] {
            let p = probes(name, Path::new("/p"));
            assert_eq!(p.iter().filter(|(_, _, deny)| *deny).count(), 1);
            assert_eq!(p.iter().filter(|(_, _, deny)| !*deny).count(), 1);
            let judged = ClientSpec::of(name)
                .events
                .iter()
                .find(|e| e.judges)
                .unwrap();
            for (_, event, _) in p {
                assert_eq!(event["hook_event_name"], judged.name);
            }
        }
    }
}
