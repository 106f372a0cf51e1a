//! What the three agent hooks (`claude-hook`, `codex-hook`, `gemini-hook`) share: reading the
//! event, never failing open, and deciding through the one composed guard.
//!
//! Never failing open: every client runs the call when its hook crashes or exits with anything
//! but its blocking status (2). So the judging work runs on a thread with a known, large stack;
//! a panic anywhere writes the client's deny answer and exits 2 (a process-wide panic hook,
//! so even a panic on another thread cannot end the process any other way); an internal error
//! is a deny with its reason. Events that do not judge a call are answered with exit 0 and no
//! decision before anything that could fail runs, so a broken policy never blocks a prompt.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agent_core::Verdict;
use agent_core::clients::{self, Client};
use anyhow::Context as _;
use perm_rules::{Decision, PermissionMode};
use serde_json::{Map, Value};

use crate::front::{Front, FrontOptions, parse_mode, refusal};
use crate::policy::Policy;

/// Hook input larger than this is refused rather than buffered without bound.
pub(crate) const MAX_INPUT: u64 = 32 * 1024 * 1024;

/// The longest one database wait may take in a hook process (a handful of waits at most; the
/// deadline wrapper bounds their sum). Parallel hooks of one agent wait on each other for
/// milliseconds; a held lock costs a few seconds and a deny.
const HOOK_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The stack the judging thread runs on: room for bash-guard's nesting cap many times over.
pub(crate) const HOOK_STACK: usize = 256 * 1024 * 1024;

/// Arguments every hook takes.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct HookArgs {
    /// The policy file; `AGENT_PERMISSIONS_*` apply on top. Without one, only the
    /// environment rules and the built-in layers apply.
    #[arg(long, env = "AGENT_GUARD_POLICY")]
    pub policy: Option<PathBuf>,
    /// Override the policy's mode.
    #[arg(long)]
    pub mode: Option<String>,
    /// The audit database (a SQLite path or a `postgres://` URL); overrides the policy's
    /// `[hooks] audit_db`. Without it, a policy file with `[hooks] audit = true` (the default)
    /// records into its `audit_db`; with no policy file nothing is recorded.
    #[arg(long, value_name = "PATH|URL")]
    pub audit_db: Option<PathBuf>,
    /// Send what the guard would ask about to an approval server (`agent-guard serve`,
    /// http://HOST:PORT) and wait for a person's answer there; anything but an allow denies.
    #[arg(long, value_name = "URL", env = "AGENT_GUARD_APPROVE_VIA")]
    pub approve_via: Option<String>,
    /// The approval server's token file (default: ~/.agent-guard/serve.token); it must be
    /// yours and 0600. Never an environment variable: the agent's tools inherit those.
    #[arg(long, value_name = "FILE", env = "AGENT_GUARD_SERVE_TOKEN_FILE")]
    pub approve_token_file: Option<PathBuf>,
    /// Seconds to wait for that answer: keep it under the hook timeout `init` writes (`doctor`
    /// checks it).
    #[arg(long, value_name = "SECS", default_value_t = super::init::DEFAULT_APPROVE_WAIT_SECS)]
    pub approve_wait_secs: u64,
}

/// How one client's hook protocol answers.
pub(crate) trait Protocol: Sync {
    /// The client.
    fn client(&self) -> Client;
    /// The answer that blocks a call, for a crash or an internal error: (stdout, stderr).
    fn crash_answer(&self, reason: &str) -> (String, String);
    /// Answers one parsed event. `Ok(None)` = exit 0 with no output.
    fn answer(&self, event: &Event, args: &HookArgs) -> anyhow::Result<Answer>;
}

/// What a hook prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub stdout: Option<Value>,
    pub stderr: Option<String>,
    pub exit: u8,
}

impl Answer {
    pub(super) fn silent() -> Answer {
        Answer {
            stdout: None,
            stderr: None,
            exit: 0,
        }
    }
    pub(super) fn json(value: Value) -> Answer {
        Answer {
            stdout: Some(value),
            stderr: None,
            exit: 0,
        }
    }
}

/// The fields of a hook event the guard uses (the three clients share these names).
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub name: String,
    pub session_id: String,
    pub cwd: Option<PathBuf>,
    pub permission_mode: Option<String>,
    pub tool_name: Option<String>,
    pub tool_input: Option<Value>,
    pub tool_response: Option<Value>,
    pub raw: Map<String, Value>,
}

impl Event {
    /// Parses the event; only `hook_event_name` is required here (each event checks the rest).
    pub(super) fn parse(text: &str) -> anyhow::Result<Event> {
        // A key given twice is read as its last value here, and maybe as its first by
        // whatever else reads the event or the tool input: the guard would judge one call and
        // the tool run another. No client writes duplicate keys, so they are refused.
        serde_json::from_str::<UniqueKeys>(text)
            .map_err(|e| anyhow::anyhow!("malformed hook JSON on stdin: {e}"))?;
        let value: Value = serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("malformed hook JSON on stdin: {e}"))?;
        let Value::Object(raw) = value else {
            anyhow::bail!("malformed hook JSON on stdin: expected an object");
        };
        let string = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_owned);
        let name = string("hook_event_name")
            .filter(|s| !s.is_empty())
            .context("malformed hook JSON on stdin: `hook_event_name` is missing")?;
        Ok(Event {
            name,
            session_id: string("session_id").unwrap_or_default(),
            cwd: string("cwd").filter(|s| !s.is_empty()).map(PathBuf::from),
            permission_mode: string("permission_mode"),
            tool_name: string("tool_name").filter(|s| !s.is_empty()),
            tool_input: raw.get("tool_input").cloned(),
            tool_response: raw.get("tool_response").cloned(),
            raw,
        })
    }

    /// The event's cwd, which must be absolute (it is where relative paths resolve).
    pub(super) fn cwd(&self) -> anyhow::Result<&Path> {
        let cwd = self
            .cwd
            .as_deref()
            .context("malformed hook JSON on stdin: `cwd` is missing")?;
        anyhow::ensure!(
            cwd.is_absolute(),
            "malformed hook JSON on stdin: `cwd` must be an absolute path, got `{}`",
            cwd.display()
        );
        Ok(cwd)
    }
}

/// A JSON document in which no object names a key twice (deserializing it checks that, at
/// every depth, and keeps nothing).
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value whose objects have unique keys")
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<UniqueKeys>()?;
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{}` appears twice in one object",
                    agent_core::truncate_chars(&key, 80).0
                )));
            }
        }
        Ok(UniqueKeys)
    }
}

/// Runs a hook: reads stdin, answers, and never fails open.
pub(crate) fn run(protocol: &'static dyn Protocol, args: HookArgs) -> ExitCode {
    let started = std::time::Instant::now();
    install_crash_answer(protocol);
    // Each wait on the database (a lock another process holds, a server that does not answer)
    // costs at most this, so a hook answers long before its client's timeout; what could not
    // be read is refused.
    perm_hooks::set_lock_wait(HOOK_LOCK_WAIT);
    // The judging thread sends nothing: it ends the process with its answer. Its end of the
    // channel goes only when it unwinds without one.
    let (judging, silence) = std::sync::mpsc::channel::<Answer>();
    let client = protocol.client();
    let wait = move || {
        // Answered before the client's deadline, whatever the judgement waits for.
        let answer = super::hook_deadline::await_answer(
            client,
            started,
            || EVENT_NAME.get().cloned(),
            &silence,
            |reason| crash(protocol, reason),
        );
        finish(&answer)
    };
    let judge = move || {
        let _judging = judging;
        finish(&answer_stdin(protocol, &args))
    };
    // A resident judge's judging thread judges on itself, its waiting thread waits.
    let Some(wait) = crate::resident::hand_wait(Box::new(wait)) else {
        judge()
    };
    let worker = std::thread::Builder::new()
        .name("hook".to_owned())
        .stack_size(HOOK_STACK)
        .spawn(judge);
    match worker {
        Ok(_) => wait(),
        Err(e) => finish(&crash(
            protocol,
            &format!("cannot start the hook thread: {e}"),
        )),
    }
    // The wait ends the process (`finish`); this is not reached.
    finish(&crash(protocol, "the hook's wait ended without an answer"))
}

/// Prints `answer` and ends the process with its status. The first caller does; any other
/// (the deadline racing the judgement, a panic while the answer is printed) waits for that
/// end, so a call gets one answer; should the end not come (a client that stopped reading
/// the answer), it ends the process with a refusal's status.
fn finish(answer: &Answer) -> ! {
    static ANSWERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if ANSWERED.swap(true, std::sync::atomic::Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_secs(2));
        crate::resident::exit(2)
    }
    emit(answer);
    // The judging thread may still be stuck (a slow mount): leave without waiting for it.
    crate::resident::exit(answer.exit)
}

fn answer_stdin(protocol: &dyn Protocol, args: &HookArgs) -> Answer {
    let mut text = String::new();
    if let Err(e) = std::io::stdin()
        .take(MAX_INPUT + 1)
        .read_to_string(&mut text)
    {
        return crash(
            protocol,
            &format!("cannot read the hook JSON from stdin: {e}"),
        );
    }
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_INPUT {
        return crash(
            protocol,
            &format!("hook input is larger than {MAX_INPUT} bytes; refusing it"),
        );
    }
    let event = match Event::parse(&text) {
        Ok(event) => event,
        Err(e) => return crash(protocol, &e.to_string()),
    };
    // From here a crash answers in the shape of this event (a PermissionRequest's deny is not
    // a PreToolUse's).
    let _ = EVENT_NAME.set(event.name.clone());
    match protocol.answer(&event, args) {
        Ok(answer) => answer,
        Err(e) => crash(protocol, &crate::front::one_line(e).to_string()),
    }
}

/// Judges a few synthetic calls in this process, so that what a hook touches (code pages, the
/// command table, the compiled scanner) is in memory before the resident server forks its
/// judges. No policy, no audit database; nothing is printed, kept or set for later calls, and
/// the thread it runs on has ended when this returns.
pub(crate) fn warm_up(protocol: &'static dyn Protocol, calls: usize) {
    let worker = std::thread::Builder::new()
        .stack_size(HOOK_STACK)
        .spawn(move || warm_up_here(protocol, calls));
    if let Ok(worker) = worker {
        let _ = worker.join();
    }
}

/// [`warm_up`] on the calling thread, which must have the judging stack ([`HOOK_STACK`]): a
/// resident judge's judging thread, whose own stack pages the call then finds in place.
pub(crate) fn warm_up_here(protocol: &'static dyn Protocol, calls: usize) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let src = dir.path().join("src");
    let _ = std::fs::create_dir(&src);
    let _ = std::fs::write(src.join("lib.rs"), "pub fn f() {}\n");
    let args = HookArgs {
        policy: None,
        mode: None,
        audit_db: None,
        approve_via: None,
        approve_token_file: None,
        approve_wait_secs: 1,
    };
    let cwd = dir.path().display().to_string();
    let all = [
        (
            "Bash",
            serde_json::json!({"command": "cat src/lib.rs | head -n 5 && git status --short"}),
        ),
        (
            "Read",
            serde_json::json!({"file_path": format!("{cwd}/src/lib.rs")}),
        ),
        (
            "Edit",
            serde_json::json!({"file_path": format!("{cwd}/src/lib.rs"),
                "old_string": "f()", "new_string": "g()"}),
        ),
    ];
    for (tool, input) in all.into_iter().take(calls) {
        let event = serde_json::json!({"hook_event_name": "PreToolUse",
            "session_id": "warm-up", "cwd": cwd, "tool_name": tool,
            "tool_input": input});
        if let Ok(event) = Event::parse(&event.to_string()) {
            let _ = protocol.answer(&event, &args);
        }
    }
}

/// The event being answered, once it is known (for the crash answer's shape).
static EVENT_NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn crash(protocol: &dyn Protocol, reason: &str) -> Answer {
    let reason = format!("agent-guard: {reason}");
    // A permission request is denied by its own answer shape with exit 0: Claude Code and
    // Codex ignore exit 2 there (and a PreToolUse-shaped answer) and show their prompt.
    if EVENT_NAME.get().map(String::as_str) == Some("PermissionRequest")
        && matches!(protocol.client(), Client::ClaudeCode | Client::Codex)
    {
        return Answer {
            stdout: Some(serde_json::json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }})),
            stderr: Some(reason),
            exit: 0,
        };
    }
    let (stdout, stderr) = protocol.crash_answer(&reason);
    Answer {
        stdout: serde_json::from_str(&stdout).ok(),
        stderr: Some(stderr),
        exit: 2,
    }
}

fn emit(answer: &Answer) {
    if let Some(value) = &answer.stdout {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{value}");
        let _ = out.flush();
    }
    if let Some(text) = &answer.stderr {
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

/// A panic anywhere in the process answers deny (exit 2; a permission request: its own deny,
/// exit 0) before anything else can happen.
fn install_crash_answer(protocol: &'static dyn Protocol) {
    std::panic::set_hook(Box::new(move |info| {
        let what = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        let answer = crash(
            protocol,
            &format!(
                "internal error ({what}); the call is blocked because the guard could not finish judging it"
            ),
        );
        finish(&answer);
    }));
}

/// For tests: panics inside the judging code when this variable is set, to prove a crash
/// answers deny. It has no other effect.
pub(crate) const CRASH_TEST_VAR: &str = "AGENT_GUARD_TEST_PANIC";

/// The project variables each client sets for its hooks (Gemini CLI sets `CLAUDE_PROJECT_DIR`
/// as an alias too). Codex sets none: a variable inherited from another client's session
/// (Codex started from Claude Code's shell) must not move Codex's roots.
fn project_vars(client: Client) -> &'static [&'static str] {
    match client {
        Client::ClaudeCode => &["CLAUDE_PROJECT_DIR"],
        Client::Gemini => &["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
        Client::Codex => &[],
    }
}

/// The project directory sandbox roots resolve against: the client's own project variable
/// when it is set and absolute, else the event's cwd.
fn project_dir(client: Client, event_cwd: &Path) -> PathBuf {
    for var in project_vars(client) {
        if let Some(dir) = std::env::var_os(var).map(PathBuf::from)
            && dir.is_absolute()
            && dir.is_dir()
        {
            return dir;
        }
    }
    event_cwd.to_owned()
}

/// The guard for an event: the policy, the project directory, the client's mode, and the audit
/// log when one is configured.
pub(crate) fn front(
    client: Client,
    event: &Event,
    args: &HookArgs,
    cwd: &Path,
) -> anyhow::Result<Front> {
    let policy = Policy::load(args.policy.as_deref())?;
    let opts = FrontOptions {
        mode: args.mode.as_deref().map(parse_mode).transpose()?,
        // A client that is itself in `plan` or `dontAsk` makes the guard at least as strict.
        client_mode: event
            .permission_mode
            .as_deref()
            .and_then(PermissionMode::parse),
        audit: args.audit_db.is_some() || (policy.path.is_some() && policy.doc.hooks.audit),
        audit_db: args.audit_db.clone(),
        // Only events that judge a call use the session ledger.
        ledger: JUDGING_EVENTS.contains(&event.name.as_str()),
        auto: JUDGING_EVENTS.contains(&event.name.as_str()),
        ..FrontOptions::default()
    };
    Front::load(&policy, &project_dir(client, cwd), &opts)
}

/// Records a call the client ran (its after-tool event), then flushes.
pub(crate) fn record_run(client: Client, event: &Event, args: &HookArgs) -> anyhow::Result<()> {
    let Ok(cwd) = event.cwd() else {
        return Ok(());
    };
    let front = front(client, event, args, cwd)?;
    let output = match &event.tool_response {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let ctx = perm_hooks::PostToolUseContext {
        session_id: event.session_id.clone(),
        step: 0,
        agent_name: agent_of(event),
        tool_name: event.tool_name.clone().unwrap_or_default(),
        tool_call_id: string_field(event, "tool_use_id"),
        args: event.tool_input.clone().unwrap_or(Value::Null),
        output,
        is_error: super::audit_rec::is_failure(event),
        elapsed: std::time::Duration::from_millis(
            event
                .raw
                .get("duration_ms")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        ),
        cwd: Some(cwd.to_owned()),
        transcript_path: None,
    };
    let mut row = perm_hooks::AuditRow::tool_call(&ctx);
    row.client = super::audit_rec::client_id(client).to_owned();
    super::audit_rec::record(&front, row);
    front.finish()
}

/// Records the end of a session (`SESSION_STOP`), then flushes.
pub(crate) fn record_stop(client: Client, event: &Event, args: &HookArgs) -> anyhow::Result<()> {
    let Ok(cwd) = event.cwd() else {
        return Ok(());
    };
    let front = front(client, event, args, cwd)?;
    let reason = event
        .raw
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or(&event.name)
        .to_owned();
    let ctx = perm_hooks::SessionStopContext {
        session_id: event.session_id.clone(),
        agent_name: agent_of(event),
        reason,
        steps: 0,
        elapsed: std::time::Duration::ZERO,
    };
    let mut row = perm_hooks::AuditRow::session_stop(&ctx);
    row.client = super::audit_rec::client_id(client).to_owned();
    super::audit_rec::record(&front, row);
    front.finish()
}

pub(super) fn string_field(event: &Event, key: &str) -> String {
    event
        .raw
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn agent_of(event: &Event) -> String {
    event
        .raw
        .get("agent_type")
        .and_then(Value::as_str)
        .unwrap_or("lead")
        .to_owned()
}

/// The client events at which a call is counted in the session ledger: the one pre-tool
/// event each client sends for every call. A `PermissionRequest` about the same call comes
/// after it and is judged without counting again.
const COUNTING_EVENTS: &[&str] = &["PreToolUse", "BeforeTool"];

/// The events whose answer is a judgement of the call (and so consult the ledger).
const JUDGING_EVENTS: &[&str] = &["PreToolUse", "BeforeTool", "PermissionRequest"];

/// Canonical inputs longer than this get no allow-once code (the grant store keeps the text).
const MAX_GRANT_INPUT: usize = 256 * 1024;

/// A judged call: the verdict and, for a refusal the client will show, the allow-once
/// sentence (its code, or why there is none).
pub(crate) struct Judged {
    pub verdict: Verdict,
    pub allow_once: Option<String>,
}

impl Judged {
    /// The verdict's reason, with the allow-once sentence.
    pub(crate) fn reason(&self) -> String {
        let mut text = reason(&self.verdict);
        if let Some(note) = &self.allow_once {
            text.push_str(if text.ends_with('.') { " " } else { ". " });
            text.push_str(note);
        }
        text
    }
}

/// Judges the event's tool call through the one composed guard, and records a refusal.
pub(crate) fn judge(client: Client, event: &Event, args: &HookArgs) -> anyhow::Result<Judged> {
    if std::env::var_os(CRASH_TEST_VAR).is_some() {
        #[allow(clippy::panic)]
        {
            panic!("{CRASH_TEST_VAR} is set");
        }
    }
    let cwd = event.cwd()?;
    let tool = event
        .tool_name
        .as_deref()
        .context("malformed hook JSON on stdin: `tool_name` is missing")?;
    let input = match &event.tool_input {
        Some(v @ Value::Object(_)) => v,
        Some(_) => anyhow::bail!("malformed hook JSON on stdin: `tool_input` must be an object"),
        None => anyhow::bail!("malformed hook JSON on stdin: `tool_input` is missing"),
    };
    let front = front(client, event, args, cwd)?;
    let counting = COUNTING_EVENTS.contains(&event.name.as_str());
    let calls = match clients::translate(client, tool, input, cwd) {
        Ok(mut calls) => {
            let single = calls.len() == 1;
            for (i, c) in calls.iter_mut().enumerate() {
                c.session_id.clone_from(&event.session_id);
                c.agent_name = agent_of(event);
                c.call_id = string_field(event, "tool_use_id");
                // Without a session id there is no session to count (every such call would
                // share one count); the clients always send one.
                c.requests = user_requests(client, event);
                c.ledger = (!event.session_id.is_empty()).then(|| agent_core::LedgerUse {
                    tool: tool.to_owned(),
                    input: input.clone(),
                    count: counting && i == 0,
                    grantable: single,
                });
            }
            calls
        }
        Err(message) => {
            return Ok(Judged {
                verdict: refusal(
                    tool,
                    "client-input",
                    "bad-tool-input",
                    format!(
                        "{} sent input the guard cannot judge: {message}",
                        client.as_str()
                    ),
                ),
                allow_once: None,
            });
        }
    };
    let verdict = front
        .evaluate(&calls)
        .unwrap_or_else(|| refusal(tool, "client-input", "no-call", "nothing to judge".into()));
    // The refusals the client shows as refusals: a Deny, and an Ask where the client cannot
    // ask (Codex) and no approval server takes it.
    let refused = verdict.decision == Decision::Deny
        || (verdict.decision == Decision::Ask
            && client == Client::Codex
            && counting
            && args.approve_via.is_none());
    let (allow_once, ref_code) = if refused {
        allow_once_note(&front, event, tool, input, cwd, calls.len(), &verdict)
    } else {
        (None, None)
    };
    let answered = approve_via(verdict.clone(), client, event, args);
    // Every judgement is recorded, once per call: a PermissionRequest about the same call
    // follows its PreToolUse.
    if counting {
        let row = super::audit_rec::decision_row(
            client,
            event,
            tool,
            input,
            &verdict,
            &answered,
            ref_code.as_deref(),
        );
        super::audit_rec::record(&front, row);
    }
    if let Err(e) = front.finish() {
        // The decision stands; the lost row is reported where the client logs hook stderr.
        eprintln!("agent-guard: {e}");
    }
    Ok(Judged {
        verdict: answered,
        allow_once,
    })
}

/// Where the user's own requests of the session are, for auto mode: the client's transcript
/// (read only if auto mode consults its model).
fn user_requests(client: Client, event: &Event) -> Option<agent_core::auto::UserRequests> {
    use agent_core::auto::UserRequests;
    let path = PathBuf::from(
        event
            .raw
            .get("transcript_path")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())?,
    );
    Some(match client {
        Client::ClaudeCode => UserRequests::ClaudeTranscript(path),
        Client::Codex => UserRequests::CodexTranscript(path),
        Client::Gemini => UserRequests::GeminiTranscript(path),
    })
}

/// Records a refusal in the session ledger and says how a person can let the call through
/// once, or why they cannot, and the refusal's code (its reference in the audit log).
/// `None` without a ledger (no audit database).
fn allow_once_note(
    front: &Front,
    event: &Event,
    tool: &str,
    input: &Value,
    cwd: &Path,
    guard_calls: usize,
    verdict: &Verdict,
) -> (Option<String>, Option<String>) {
    let Some(ledger) = front.guard().executor().session_ledger() else {
        return (None, None);
    };
    if event.session_id.is_empty() {
        return (
            Some("(No allow-once code: the event has no session id to bind it to.)".to_owned()),
            None,
        );
    }
    let args = input.to_string();
    if args.len() > MAX_GRANT_INPUT {
        return (
            Some(format!(
                "(No allow-once code: the input is larger than {MAX_GRANT_INPUT} bytes.)"
            )),
            None,
        );
    }
    let several = (guard_calls != 1).then(|| {
        format!("the call is judged as {guard_calls} separate calls, which one grant cannot name")
    });
    let because = several.or_else(|| agent_core::not_liftable_because(verdict));
    let cwd_text = cwd.to_string_lossy();
    let summary = verdict.summary();
    let offer = perm_hooks::Refusal {
        key: perm_hooks::CallKey {
            session_id: &event.session_id,
            tool_name: tool,
            args: &args,
            cwd: &cwd_text,
        },
        reason_code: verdict.code(),
        summary: &summary,
        not_liftable_because: because.as_deref(),
    };
    let offered = front.block_on(ledger.offer(&offer));
    let code = offered.as_ref().ok().cloned();
    let note = match offered {
        Ok(code) if because.is_none() => format!(
            "Allow-once code {code}: if the user wants this exact call to run once, they can run \
             `agent-guard allow-once {code}` in their own terminal (never through the agent), \
             then retry the identical call within ten minutes."
        ),
        Ok(code) => format!(
            "(Ref {code}. allow-once cannot lift this refusal: {})",
            because.unwrap_or_default()
        ),
        Err(e) => format!("(No allow-once code: the audit database failed: {e}.)"),
    };
    (Some(note), code)
}

/// With `--approve-via`, an Ask becomes a request on the approval server and the person's
/// answer decides; without it (or for an Allow or a Deny) the verdict is unchanged.
fn approve_via(verdict: Verdict, client: Client, event: &Event, args: &HookArgs) -> Verdict {
    match &args.approve_via {
        Some(url) if verdict.decision == Decision::Ask => {
            let ask = super::serve::client::HookAsk {
                session_id: &event.session_id,
                raw: &event.raw,
                tool_name: event.tool_name.as_deref(),
                tool_input: event.tool_input.as_ref(),
                cwd: event.cwd.as_deref(),
                wait_secs: args.approve_wait_secs,
                token_file: args.approve_token_file.as_deref(),
            };
            super::serve::client::decide_hook_ask(verdict, url, client.as_str(), &ask)
        }
        _ => verdict,
    }
}

/// One sentence for the model and the user: who decided, why, and how to allow it
/// deliberately when a rule or the default decided.
pub(crate) fn reason(v: &Verdict) -> String {
    let mut text = format!("agent-guard: {}", v.summary());
    if let Some(step) = v.deciding() {
        if let Some(rule) = step
            .rule
            .as_ref()
            .filter(|r| !step.message.contains(r.as_str()))
        {
            let at = step.source.as_deref().unwrap_or("the policy");
            text.push_str(&format!(" (rule `{rule}` at {at})"));
        }
        if v.decision != Decision::Allow
            && let Some(hint) = hint(v, step)
        {
            text.push_str(". ");
            text.push_str(&hint);
        }
    }
    text
}

fn hint(v: &Verdict, step: &agent_core::Step) -> Option<String> {
    // A command's advice comes from the guard, which checked that the rules it names would
    // lift the asks (or said which kind of ask no rule lifts).
    if v.decision == Decision::Ask && v.tool == "run_bash" {
        return v.advice.clone();
    }
    match (step.layer, step.code.as_str()) {
        ("fs-sandbox", "outside_roots") => Some(
            "Work on a path inside the project, or add its directory to `[sandbox] roots` (or `read_only_roots`) in the policy".to_owned(),
        ),
        ("fs-sandbox", "sensitive_path") => Some(
            "Credential stores are never read or written by an agent; ask the user to provide what is needed".to_owned(),
        ),
        ("fs-sandbox", "protected_path") => Some(
            "This file makes tools run code later; ask the user to change it".to_owned(),
        ),
        ("mode", _) => Some(format!(
            "The session's mode is `{}`; a person can allow it by changing the mode",
            v.mode
        )),
        ("perm-rules", code) if code.starts_with("p8") || code.contains("ask") => Some(format!(
            "To allow it deliberately, add an allow rule such as `{}` to the policy's `[permissions] allow`",
            suggested_rule(v)
        )),
        ("bash-guard", code) if code.contains("force") => {
            Some("Prefer `git push --force-with-lease`".to_owned())
        }
        _ => None,
    }
}

fn suggested_rule(v: &Verdict) -> String {
    let key = match v.tool.as_str() {
        "run_bash" => "command",
        "read_file" | "file_write" | "file_edit" => "file_path",
        "web_fetch" => "url",
        _ => "",
    };
    match v.final_args.get(key).and_then(Value::as_str) {
        Some(text) if v.tool == "run_bash" => {
            let words: Vec<&str> = text.split_whitespace().take(2).collect();
            format!("run_bash({}:*)", words.join(" "))
        }
        Some(text) if v.tool == "web_fetch" => url::Url::parse(text)
            .ok()
            .and_then(|u| u.host_str().map(|h| format!("web_fetch(domain:{h})")))
            .unwrap_or_else(|| "web_fetch".to_owned()),
        Some(text) => format!("{}({text})", v.tool),
        None => v.tool.clone(),
    }
}
