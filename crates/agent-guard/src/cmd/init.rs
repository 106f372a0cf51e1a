//! `agent-guard init`: install the guard as a client's hook, merging into its settings.
//!
//! What each client needs is data ([`CLIENTS`]): the settings file, the events, the matcher
//! and the timeout unit. `doctor` reads the same table to check an installation.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use crate::front::absolutize;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// The starter policy written when none exists: the shipped example, which lints clean.
pub(crate) const STARTER_POLICY: &str = include_str!("../../../../examples/policy.toml");

const AFTER_HELP: &str = "\
Writes (or merges into) the client's hook configuration:
  claude  .claude/settings.json  PreToolUse, PermissionRequest, PostToolUse, Stop, SessionEnd
          -> agent-guard claude-hook --policy ABS   (timeout in seconds)
  codex   .codex/hooks.json      PreToolUse, PermissionRequest, PostToolUse
          -> agent-guard codex-hook --policy ABS    (timeout in seconds)
  gemini  .gemini/settings.json  BeforeTool, AfterTool
          -> agent-guard gemini-hook --policy ABS   (timeout in milliseconds)
under the project (--project, default the current directory) or the home directory (--user).

Every unrelated setting and hook is kept. An existing agent-guard entry (a handler whose
program is `agent-guard` running the same hook subcommand) is replaced in place, so running
init twice leaves the file as it was. The file it changes is first copied to `<file>.bak`
(or `<file>.bak.<unix time>` when that exists), and the change is printed as a diff.

The policy (--policy, default .agent-guard/policy.toml in the project, or
~/.config/agent-guard/policy.toml with --user) gets a copy of the shipped example when it does
not exist. The hook command names the policy by absolute path.

The program written is this executable's absolute path (or --binary, a bare name resolved on
PATH now), so the hook does not depend on the client's PATH; when `agent-guard-hook` sits beside
it (as the package installs them), that small entry is written instead: it hands each call to
the user's resident guard and answers exactly as the CLI's hook subcommand does. The events that judge a call run it
fail-closed: if the program is missing or dies (any exit but 0 or 2), the shell wrapper answers
exit 2 with a reason, which every client reads as a refusal.

--uninstall removes what init wrote: the agent-guard handlers and whatever held only them
(a settings file init created is deleted). The policy file is kept.

Exit status:
  0  installed or uninstalled (or, with --dry-run, the change was printed)
  2  bad arguments, or a settings file that is not JSON (it is left untouched)";

/// How long a hook waits for a person's answer on the approval page by default
/// (`--approve-wait-secs`).
pub(crate) const DEFAULT_APPROVE_WAIT_SECS: u64 = 55;

/// The timeout written for the events that judge a call: the approval wait fits inside it
/// with room to answer, so an unanswered ask is refused by the hook, never timed out (a
/// client runs the call when its hook times out). `doctor` checks the installed one.
pub(crate) const JUDGE_TIMEOUT_SECS: u64 = DEFAULT_APPROVE_WAIT_SECS + 35;

/// The clients `init` and `doctor` know.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientName {
    /// Claude Code.
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Google Gemini CLI.
    Gemini,
}

/// Arguments of `agent-guard init`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The client to install the hook for.
    pub client: ClientName,
    /// Install into this project's settings (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// Install into the user's settings under $HOME.
    #[arg(long)]
    pub user: bool,
    /// The policy file the hook uses (created from the example when missing).
    #[arg(long, value_name = "PATH")]
    pub policy: Option<PathBuf>,
    /// The agent-guard program the hook runs (default: see below).
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
    /// Print what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove what init wrote: the agent-guard handlers, and the groups, events and `hooks`
    /// object left empty by that (the policy file is kept: it may hold your edits).
    #[arg(long, conflicts_with_all = ["policy", "binary"])]
    pub uninstall: bool,
}

/// How a client counts hook timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeoutUnit {
    Seconds,
    Millis,
}

/// One hook event the guard must receive.
#[derive(Debug)]
pub(crate) struct EventSpec {
    /// The event name in the settings file.
    pub name: &'static str,
    /// The matcher to write (`None` = no matcher: the event is not about a tool).
    pub matcher: Option<&'static str>,
    /// The timeout, in the client's unit.
    pub timeout: u64,
    /// Whether it judges tool calls (doctor insists its matcher covers every tool).
    pub judges: bool,
}

/// Everything `init` and `doctor` need to know about one client.
#[derive(Debug)]
pub(crate) struct ClientSpec {
    pub name: ClientName,
    /// Its name for people.
    pub display: &'static str,
    /// The `agent-guard` subcommand that speaks its protocol.
    pub subcommand: &'static str,
    /// The settings directory under the project or $HOME.
    pub dir: &'static str,
    /// The settings file in it.
    pub file: &'static str,
    pub unit: TimeoutUnit,
    pub events: &'static [EventSpec],
    /// Extra fields of our handler object, after `type`, `command` and `timeout`.
    pub handler_name: bool,
    /// What the user still has to do after `init`.
    pub note: &'static str,
}

/// Claude Code's `"*"` matches every tool. Codex reads a matcher as a regex with `""` and `*`
/// as match-all; Gemini CLI reads it as a regex, where `*` alone does not compile (and a hook
/// whose matcher never matches never runs): `.*` matches every tool in every reading.
pub(crate) static CLIENTS: [&ClientSpec; 3] = [&CLAUDE, &CODEX, &GEMINI];

static CLAUDE: ClientSpec = ClientSpec {
    name: ClientName::Claude,
    display: "Claude Code",
    subcommand: "claude-hook",
    dir: ".claude",
    file: "settings.json",
    unit: TimeoutUnit::Seconds,
    events: &[
        EventSpec {
            name: "PreToolUse",
            matcher: Some("*"),
            timeout: JUDGE_TIMEOUT_SECS,
            judges: true,
        },
        EventSpec {
            name: "PermissionRequest",
            matcher: Some("*"),
            timeout: JUDGE_TIMEOUT_SECS,
            judges: true,
        },
        EventSpec {
            name: "PostToolUse",
            matcher: Some("*"),
            timeout: 30,
            judges: false,
        },
        EventSpec {
            name: "Stop",
            matcher: None,
            timeout: 10,
            judges: false,
        },
        EventSpec {
            name: "SessionEnd",
            matcher: None,
            timeout: 10,
            judges: false,
        },
    ],
    handler_name: false,
    note: "Claude Code reads the hooks when a session starts: restart running sessions. \
               Project hooks need the workspace to be trusted.",
};

static CODEX: ClientSpec = ClientSpec {
    name: ClientName::Codex,
    display: "Codex",
    subcommand: "codex-hook",
    dir: ".codex",
    file: "hooks.json",
    unit: TimeoutUnit::Seconds,
    events: &[
        EventSpec {
            name: "PreToolUse",
            matcher: Some(".*"),
            timeout: JUDGE_TIMEOUT_SECS,
            judges: true,
        },
        // Codex asks here for sandbox escalations and network access: a deny refuses the
        // escalation, silence leaves it to the user.
        EventSpec {
            name: "PermissionRequest",
            matcher: Some(".*"),
            timeout: JUDGE_TIMEOUT_SECS,
            judges: true,
        },
        EventSpec {
            name: "PostToolUse",
            matcher: Some(".*"),
            timeout: 30,
            judges: false,
        },
    ],
    handler_name: false,
    note: "Codex skips a new or edited hook until you trust it: open `/hooks` in Codex and \
               trust the agent-guard hook (project hooks also need a trusted project).",
};

static GEMINI: ClientSpec = ClientSpec {
    name: ClientName::Gemini,
    display: "Gemini CLI",
    subcommand: "gemini-hook",
    dir: ".gemini",
    file: "settings.json",
    unit: TimeoutUnit::Millis,
    events: &[
        EventSpec {
            name: "BeforeTool",
            matcher: Some(".*"),
            timeout: JUDGE_TIMEOUT_SECS * 1000,
            judges: true,
        },
        EventSpec {
            name: "AfterTool",
            matcher: Some(".*"),
            timeout: 30_000,
            judges: false,
        },
    ],
    handler_name: true,
    note: "Gemini CLI runs a project's hooks only in a folder it trusts (trust it at the next \
               start); `gemini --skip-trust` drops them silently, so for headless runs install \
               with --user, whose hooks it keeps.",
};

impl ClientSpec {
    /// The spec of `name`.
    pub(crate) fn of(name: ClientName) -> &'static ClientSpec {
        match name {
            ClientName::Claude => &CLAUDE,
            ClientName::Codex => &CODEX,
            ClientName::Gemini => &GEMINI,
        }
    }

    /// The settings file under `base` (the project or $HOME).
    pub(crate) fn settings_path(&self, base: &Path) -> PathBuf {
        base.join(self.dir).join(self.file)
    }

    /// Whether a handler object is an agent-guard handler for this client: its command's
    /// program is named `agent-guard` and it runs this client's hook subcommand.
    pub(crate) fn is_our_handler(&self, handler: &serde_json::Value) -> bool {
        handler
            .get("command")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|c| is_agent_guard_command(c, self.subcommand))
    }
}

/// Whether `command` runs `agent-guard <subcommand>`.
pub(crate) fn is_agent_guard_command(command: &str, subcommand: &str) -> bool {
    let words = shell_words(command);
    let mut words = words.iter();
    let program_is_ours = words.next().is_some_and(|w| {
        Path::new(w)
            .file_name()
            .is_some_and(|n| n == "agent-guard" || n == HOOK_ENTRY)
    });
    program_is_ours && words.any(|w| w == subcommand)
}

/// Splits a command into words with shell quoting (no expansion): enough to recognise our own
/// handler, which init writes with plain words or single quotes.
pub(crate) fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                word.push(e);
                            }
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(e) = chars.next() {
                    word.push(e);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Quotes `word` for a POSIX shell when it needs it.
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Where the hook configuration goes.
pub(crate) struct Scope {
    /// The project directory or $HOME: the settings live under it.
    pub base: PathBuf,
    /// The directory hooks run in for a self-test (the project; the cwd with --user).
    pub project: PathBuf,
    pub user: bool,
}

impl Scope {
    pub(crate) fn resolve(project: Option<&Path>, user: bool) -> anyhow::Result<Scope> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        if user {
            let home = home()?;
            return Ok(Scope {
                base: home,
                project: cwd,
                user: true,
            });
        }
        let dir = match project {
            Some(dir) => absolutize(&cwd, dir),
            None => cwd,
        };
        anyhow::ensure!(
            dir.is_dir(),
            "the project directory `{}` does not exist",
            dir.display()
        );
        Ok(Scope {
            base: dir.clone(),
            project: dir,
            user: false,
        })
    }

    /// The default policy path of this scope.
    pub(crate) fn default_policy(&self) -> anyhow::Result<PathBuf> {
        if self.user {
            Ok(home()?.join(".config/agent-guard/policy.toml"))
        } else {
            Ok(self.base.join(".agent-guard/policy.toml"))
        }
    }
}

pub(crate) fn home() -> anyhow::Result<PathBuf> {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => Ok(PathBuf::from(h)),
        _ => bail!("HOME is not set, so the user's settings cannot be found"),
    }
}

/// The program to write into the hook: always an absolute path (see AFTER_HELP).
fn hook_program(binary: Option<&Path>) -> anyhow::Result<String> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let program = match binary {
        // A bare name is looked up on this PATH now: the client's PATH may differ.
        Some(b) if b.components().count() == 1 && !b.has_root() => on_path(b)
            .with_context(|| format!("`{}` is not on PATH; pass its path", b.display()))?,
        Some(b) => absolutize(&cwd, b),
        None => std::env::current_exe().context("cannot find this executable's path")?,
    };
    Ok(hook_entry_beside(&program)
        .unwrap_or(program)
        .display()
        .to_string())
}

/// The small hook entry that hands calls to the resident guard (`src/bin/agent-guard-hook.rs`).
pub(crate) const HOOK_ENTRY: &str = "agent-guard-hook";

/// `agent-guard-hook` beside the `agent-guard` executable `program` (the same package puts
/// them side by side): the hook command then starts the small entry instead of the CLI.
fn hook_entry_beside(program: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    if program.file_name()? != "agent-guard" {
        return None;
    }
    let entry = program.with_file_name(HOOK_ENTRY);
    std::fs::metadata(&entry)
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .then_some(entry)
}

/// The first executable file named `name` in a PATH directory.
fn on_path(name: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Whether `exe` lives in a cargo target directory (which carries cargo's `CACHEDIR.TAG`).
fn in_cargo_target_dir(exe: &Path) -> bool {
    exe.ancestors()
        .skip(1)
        .any(|dir| dir.join("CACHEDIR.TAG").is_file() || dir.file_name() == Some("target".as_ref()))
}

/// The shell command the hook runs.
fn hook_command(program: &str, subcommand: &str, policy: &Path) -> String {
    format!(
        "{} {subcommand} --policy {}",
        shell_quote(program),
        shell_quote(&policy.display().to_string())
    )
}

/// `command` made to fail closed, for the events that judge a call. Claude Code and Codex run
/// the call when a hook exits with anything but 0 or 2 (a missing program is 127, a killed one
/// 137) and Gemini CLI does on exit 1: every such exit becomes exit 2 with a reason on stderr,
/// which all three read as a refusal. Exit 0 and 2 pass through with the guard's own answer.
pub(crate) fn fail_closed(command: &str) -> String {
    format!(
        "{command} || {{ s=$?; [ $s -eq 2 ] || echo '{FAIL_CLOSED_REASON}' \"(exit $s)\" >&2; exit 2; }}"
    )
}

/// What the model and the user read when the hook program is missing or dies (single-quoted
/// in the wrapper: no quote, backtick or dollar in it).
pub(crate) const FAIL_CLOSED_REASON: &str = "agent-guard: the hook program is missing or died, \
     so the call is refused; reinstall it with agent-guard init, check it with agent-guard doctor";

// --- An order-preserving JSON value -------------------------------------------------------
//
// serde_json's `Value` sorts object keys (its `preserve_order` feature would change the key
// order of every JSON answer the binary prints, which the hooks' tests compare byte for byte),
// and a merge must not reorder a user's settings file. So: a small value type of our own.

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at `key` of an object, inserted (at the end) as `default` when absent.
    fn entry(&mut self, key: &str, default: Json) -> Option<&mut Json> {
        let Json::Object(entries) = self else {
            return None;
        };
        let index = match entries.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                entries.push((key.to_owned(), default));
                entries.len() - 1
            }
        };
        entries.get_mut(index).map(|(_, v)| v)
    }

    fn to_value(&self) -> serde_json::Value {
        match self {
            Json::Null => serde_json::Value::Null,
            Json::Bool(b) => serde_json::Value::Bool(*b),
            Json::Number(n) => serde_json::Value::Number(n.clone()),
            Json::String(s) => serde_json::Value::String(s.clone()),
            Json::Array(items) => {
                serde_json::Value::Array(items.iter().map(Json::to_value).collect())
            }
            Json::Object(entries) => serde_json::Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(v) => s.serialize_str(v),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(v)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut entries: Vec<(String, Json)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Json>()? {
                    // A repeated key: the last value wins (as in serde_json), in the first's place.
                    match entries.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => entries.push((k, v)),
                    }
                }
                Ok(Json::Object(entries))
            }
        }
        d.deserialize_any(V)
    }
}

fn json_str(s: &str) -> Json {
    Json::String(s.to_owned())
}

/// Our handler group for one event.
fn our_group(spec: &ClientSpec, event: &EventSpec, command: &str) -> Json {
    let mut handler = vec![("type".to_owned(), json_str("command"))];
    if spec.handler_name {
        handler.push(("name".to_owned(), json_str("agent-guard")));
    }
    let command = if event.judges {
        fail_closed(command)
    } else {
        command.to_owned()
    };
    handler.push(("command".to_owned(), json_str(&command)));
    handler.push(("timeout".to_owned(), Json::Number(event.timeout.into())));
    let mut group = Vec::new();
    if let Some(m) = event.matcher {
        group.push(("matcher".to_owned(), json_str(m)));
    }
    group.push(("hooks".to_owned(), Json::Array(vec![Json::Object(handler)])));
    Json::Object(group)
}

/// Replaces every agent-guard handler of `spec` in `groups` by `ours`, placed where the first
/// one was (or at the end). Groups left empty by the removal are dropped; every other group
/// and handler is kept as it was.
fn merge_event(spec: &ClientSpec, groups: &mut Vec<Json>, ours: Json) {
    let mut insert_at = None;
    let mut kept = Vec::with_capacity(groups.len() + 1);
    for mut group in std::mem::take(groups) {
        let mut removed = false;
        if let Some(Json::Array(handlers)) = group_hooks_mut(&mut group) {
            let before = handlers.len();
            handlers.retain(|h| !spec.is_our_handler(&h.to_value()));
            removed = handlers.len() < before;
            if removed && handlers.is_empty() {
                insert_at.get_or_insert(kept.len());
                continue;
            }
        }
        kept.push(group);
        if removed {
            insert_at.get_or_insert(kept.len());
        }
    }
    let at = insert_at.unwrap_or(kept.len()).min(kept.len());
    kept.insert(at, ours);
    *groups = kept;
}

fn group_hooks_mut(group: &mut Json) -> Option<&mut Json> {
    match group {
        Json::Object(entries) => entries
            .iter_mut()
            .find(|(k, _)| k == "hooks")
            .map(|(_, v)| v),
        _ => None,
    }
}

/// The settings with our hooks merged in.
fn merged_settings(
    spec: &ClientSpec,
    existing: Option<&str>,
    command: &str,
    path: &Path,
) -> anyhow::Result<Json> {
    let mut doc = match existing {
        Some(text) if !text.trim().is_empty() => {
            serde_json::from_str::<Json>(text).with_context(|| {
                format!(
                    "`{}` is not JSON (comments are not supported); it was left untouched",
                    path.display()
                )
            })?
        }
        _ => Json::Object(Vec::new()),
    };
    anyhow::ensure!(
        matches!(doc, Json::Object(_)),
        "`{}` is not a JSON object; it was left untouched",
        path.display()
    );
    let hooks = doc
        .entry("hooks", Json::Object(Vec::new()))
        .context("unreachable: the document is an object")?;
    anyhow::ensure!(
        matches!(hooks, Json::Object(_)),
        "`hooks` in `{}` is not an object; fix it by hand",
        path.display()
    );
    for event in spec.events {
        let groups = hooks
            .entry(event.name, Json::Array(Vec::new()))
            .context("unreachable: `hooks` is an object")?;
        let Json::Array(groups) = groups else {
            bail!(
                "`hooks.{}` in `{}` is not an array; fix it by hand",
                event.name,
                path.display()
            );
        };
        merge_event(spec, groups, our_group(spec, event, command));
    }
    Ok(doc)
}

/// The settings without our handlers: every agent-guard handler of `spec` goes, and so does
/// each group, event list and `hooks` object that held only ours. Everything else stays.
fn without_ours(spec: &ClientSpec, mut doc: Json) -> Json {
    let Json::Object(top) = &mut doc else {
        return doc;
    };
    let Some((_, Json::Object(events))) = top.iter_mut().find(|(k, _)| k == "hooks") else {
        return doc;
    };
    for (_, groups) in events.iter_mut() {
        let Json::Array(list) = groups else { continue };
        let before = list.len();
        list.retain_mut(|group| {
            let Some(Json::Array(handlers)) = group_hooks_mut(group) else {
                return true;
            };
            let had = handlers.len();
            handlers.retain(|h| !spec.is_our_handler(&h.to_value()));
            !(handlers.is_empty() && had > 0)
        });
        // Mark an event list we emptied (a list that was empty already is the user's).
        if list.is_empty() && before > 0 {
            *groups = Json::Null;
        }
    }
    events.retain(|(_, v)| *v != Json::Null);
    if events.is_empty() {
        top.retain(|(k, _)| k != "hooks");
    }
    doc
}

/// `init --uninstall`: removes what init wrote, with the same backup and diff.
fn uninstall(spec: &ClientSpec, path: &Path, dry_run: bool) -> anyhow::Result<ExitCode> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("{}: does not exist, nothing to remove", path.display());
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let doc = serde_json::from_str::<Json>(&text)
        .with_context(|| format!("`{}` is not JSON; it was left untouched", path.display()))?;
    let doc = without_ours(spec, doc);
    let mut new = serde_json::to_string_pretty(&doc)?;
    new.push('\n');
    if new == text {
        println!("{}: no agent-guard hook, nothing to remove", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", diff(&text, &new, &path.display().to_string()));
    if dry_run {
        println!("dry run: {} would be written", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    if doc == Json::Object(Vec::new()) {
        // init created the file for its hooks alone: nothing of the user's is left in it.
        std::fs::remove_file(&target)
            .with_context(|| format!("cannot remove `{}`", path.display()))?;
        println!(
            "removed {} (only agent-guard's hooks were in it)",
            path.display()
        );
    } else {
        let backup = backup_path(path);
        std::fs::copy(path, &backup)
            .with_context(|| format!("cannot back up `{}`", path.display()))?;
        println!("backup: {}", backup.display());
        write_atomically(&target, &new)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// A line diff of `old` and `new`, unified-style with three lines of context.
pub(crate) fn diff(old: &str, new: &str, name: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Longest common subsequence table, from the end; settings files are small.
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let value = if a.get(i) == b.get(j) {
                lcs.get(i + 1)
                    .and_then(|r| r.get(j + 1))
                    .map_or(0, |v| v + 1)
            } else {
                let down = lcs.get(i + 1).and_then(|r| r.get(j)).copied().unwrap_or(0);
                let right = lcs.get(i).and_then(|r| r.get(j + 1)).copied().unwrap_or(0);
                down.max(right)
            };
            if let Some(cell) = lcs.get_mut(i).and_then(|r| r.get_mut(j)) {
                *cell = value;
            }
        }
    }
    let at = |i: usize, j: usize| lcs.get(i).and_then(|r| r.get(j)).copied().unwrap_or(0);
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                ops.push((' ', x));
                i += 1;
                j += 1;
            }
            (Some(x), Some(_)) if at(i + 1, j) >= at(i, j + 1) => {
                ops.push(('-', x));
                i += 1;
            }
            (_, Some(y)) => {
                ops.push(('+', y));
                j += 1;
            }
            (Some(x), None) => {
                ops.push(('-', x));
                i += 1;
            }
            (None, None) => break,
        }
    }
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, (c, _))| *c != ' ')
        .map(|(k, _)| k)
        .collect();
    let mut out = String::new();
    if changed.is_empty() {
        return out;
    }
    let _ = writeln!(out, "--- {name}\n+++ {name} (new)");
    let near = |k: usize| changed.iter().any(|&c| c.abs_diff(k) <= 3);
    let mut gap = false;
    for (k, (c, line)) in ops.iter().enumerate() {
        if near(k) {
            if gap || k == 0 {
                out.push_str("@@\n");
            }
            gap = false;
            let _ = writeln!(out, "{c}{line}");
        } else {
            gap = true;
        }
    }
    out
}

/// Writes `text` to `path` through a temporary file in the same directory, so a crash never
/// leaves a half-written settings file.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .context("the settings file has no parent directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in `{}`", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        // Keep the file's mode (settings may be private).
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("cannot replace `{}`: {}", path.display(), e.error))?;
    Ok(())
}

/// A backup path next to `path` that does not exist yet.
fn backup_path(path: &Path) -> PathBuf {
    let plain = PathBuf::from(format!("{}.bak", path.display()));
    if !plain.exists() {
        return plain;
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("{}.bak.{secs}", path.display()))
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_inner(args).map_err(crate::front::one_line)
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let spec = ClientSpec::of(args.client);
    let scope = Scope::resolve(args.project.as_deref(), args.user)?;
    if args.uninstall {
        return uninstall(spec, &spec.settings_path(&scope.base), args.dry_run);
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let policy = match &args.policy {
        Some(p) => absolutize(&cwd, p),
        None => scope.default_policy()?,
    };
    let program = hook_program(args.binary.as_deref())?;
    let command = hook_command(&program, spec.subcommand, &policy);
    let path = spec.settings_path(&scope.base);
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let doc = merged_settings(spec, existing.as_deref(), &command, &path)?;
    let mut text = serde_json::to_string_pretty(&doc)?;
    text.push('\n');
    let verb = if args.dry_run { "would" } else { "will" };
    println!("{}: {} runs `{command}`", spec.display, path.display());
    let old = existing.as_deref().unwrap_or("");
    if existing.as_deref() == Some(text.as_str()) {
        println!("{}: already up to date, nothing to change", path.display());
    } else {
        print!("{}", diff(old, &text, &path.display().to_string()));
        if args.dry_run {
            println!("dry run: {} {verb} be written", path.display());
        } else {
            if existing.is_some() {
                let backup = backup_path(&path);
                std::fs::copy(&path, &backup).with_context(|| {
                    format!(
                        "cannot back up `{}` to `{}`",
                        path.display(),
                        backup.display()
                    )
                })?;
                println!("backup: {}", backup.display());
            }
            // A settings file that is a symlink (dotfiles) is written through, not replaced.
            let target = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            write_atomically(&target, &text)?;
            println!("wrote {}", path.display());
        }
    }
    if policy.exists() {
        println!("policy: {} (kept as it is)", policy.display());
    } else if args.dry_run {
        println!(
            "dry run: a starter policy would be written to {}",
            policy.display()
        );
    } else {
        write_atomically(&policy, STARTER_POLICY)?;
        println!(
            "policy: wrote a starter policy to {} (edit it; `agent-guard lint` checks it)",
            policy.display()
        );
    }
    if in_cargo_target_dir(Path::new(&program)) {
        println!(
            "note: the hook runs `{program}`, a build that `cargo clean` deletes (the hook then \
             refuses every call); install agent-guard and run init again from the installed copy"
        );
    }
    if spec.name == ClientName::Gemini
        && doc
            .get("hooks")
            .and_then(|h| h.get("enabled"))
            .is_some_and(|e| *e == Json::Bool(false))
    {
        println!("warning: `hooks.enabled` is false in this file, so Gemini CLI runs no hook");
    }
    println!("note: {}", spec.note);
    let scope_flag = if scope.user {
        " --user".to_owned()
    } else {
        format!(
            " --project {}",
            shell_quote(&scope.base.display().to_string())
        )
    };
    println!(
        "check it: agent-guard doctor {}{scope_flag}",
        spec.subcommand.trim_end_matches("-hook")
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge(name: ClientName, existing: &str, command: &str) -> String {
        let doc = merged_settings(
            ClientSpec::of(name),
            Some(existing),
            command,
            Path::new("s.json"),
        )
        .unwrap();
        serde_json::to_string_pretty(&doc).unwrap() + "\n"
    }

    #[test]
    fn every_client_has_a_spec_and_a_judging_event() {
        for name in [ClientName::Claude, ClientName::Codex, ClientName::Gemini] {
            let spec = ClientSpec::of(name);
            assert_eq!(spec.name, name);
            assert!(spec.events.iter().any(|e| e.judges));
            assert!(spec.subcommand.ends_with("-hook"));
        }
    }

    #[test]
    fn merge_keeps_key_order_and_unrelated_hooks() {
        let existing = r#"{"zeta": 1, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-tool check"}]}], "Notification": []}, "alpha": {"b": 2, "a": 1}}"#;
        let out = merge(
            ClientName::Claude,
            existing,
            "agent-guard claude-hook --policy /p",
        );
        let zeta = out.find("\"zeta\"").unwrap();
        let hooks = out.find("\"hooks\"").unwrap();
        let alpha = out.find("\"alpha\"").unwrap();
        assert!(zeta < hooks && hooks < alpha, "{out}");
        assert!(out.find("\"b\"").unwrap() < out.find("\"a\"").unwrap());
        assert!(out.contains("other-tool check"));
        assert!(out.contains("\"Notification\": []"));
        let again = merge(
            ClientName::Claude,
            &out,
            "agent-guard claude-hook --policy /p",
        );
        assert_eq!(out, again);
    }

    #[test]
    fn an_existing_entry_is_replaced_in_place() {
        let existing = r#"{"hooks": {"PreToolUse": [
            {"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]},
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/old/agent-guard claude-hook --policy /old.toml"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "logger"}]}
        ]}}"#;
        let out = merge(
            ClientName::Claude,
            existing,
            "/new/agent-guard claude-hook --policy /p",
        );
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let groups = doc["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(groups.len(), 3);
        assert_eq!(groups[0]["hooks"][0]["command"], "fmt");
        assert_eq!(
            groups[1]["hooks"][0]["command"],
            fail_closed("/new/agent-guard claude-hook --policy /p")
        );
        assert_eq!(groups[1]["matcher"], "*");
        assert_eq!(groups[2]["hooks"][0]["command"], "logger");
        assert!(!out.contains("/old.toml"));
    }

    #[test]
    fn a_shared_group_keeps_its_other_handlers() {
        let existing = r#"{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "agent-guard claude-hook"},
            {"type": "command", "command": "logger"}]}]}}"#;
        let out = merge(
            ClientName::Claude,
            existing,
            "agent-guard claude-hook --policy /p",
        );
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let groups = doc["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0]["hooks"].as_array().unwrap().len(), 1);
        assert_eq!(groups[0]["hooks"][0]["command"], "logger");
        assert_eq!(
            groups[1]["hooks"][0]["command"],
            fail_closed("agent-guard claude-hook --policy /p")
        );
    }

    #[test]
    fn other_clients_hooks_are_not_ours() {
        let spec = ClientSpec::of(ClientName::Claude);
        let h = |c: &str| serde_json::json!({"command": c});
        assert!(spec.is_our_handler(&h("agent-guard claude-hook")));
        assert!(spec.is_our_handler(&h("'/opt/x y/agent-guard' claude-hook --policy '/p q'")));
        assert!(!spec.is_our_handler(&h("agent-guard codex-hook")));
        assert!(!spec.is_our_handler(&h("my-agent-guard claude-hook")));
        assert!(!spec.is_our_handler(&h("echo agent-guard claude-hook")));
        assert!(!spec.is_our_handler(&serde_json::json!({"type": "http"})));
    }

    #[test]
    fn malformed_settings_are_refused() {
        for bad in [
            "[1]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"PreToolUse\": {}}}",
            "{ // c\n}",
        ] {
            assert!(
                merged_settings(
                    ClientSpec::of(ClientName::Claude),
                    Some(bad),
                    "agent-guard claude-hook",
                    Path::new("s.json")
                )
                .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn quoting_round_trips() {
        for word in ["plain/path", "/a b/c", "it's", "", "$HOME"] {
            let quoted = shell_quote(word);
            assert_eq!(shell_words(&quoted), vec![word.to_owned()], "{quoted}");
        }
    }

    #[test]
    fn diff_shows_only_changes_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\n";
        let new = "a\nb\nc\nd\ne\nf\ng\nH\ni\n";
        let d = diff(old, new, "f");
        assert!(d.contains("-h\n+H\n"), "{d}");
        assert!(!d.contains(" a\n"), "{d}");
        assert!(d.contains(" e\n"), "{d}");
        assert_eq!(diff(old, old, "f"), "");
    }

    fn sh(command: &str) -> std::process::Output {
        std::process::Command::new("sh")
            .args(["-c", command])
            .output()
            .unwrap()
    }

    #[test]
    fn the_wrapper_refuses_when_the_program_is_missing_or_dies() {
        for dead in [
            "/nonexistent/agent-guard claude-hook",
            "sh -c 'kill -9 $$'",
            "sh -c 'exit 1'",
        ] {
            let out = sh(&fail_closed(dead));
            assert_eq!(out.status.code(), Some(2), "{dead}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("the call is refused"), "{dead}: {err}");
        }
        // The guard's own answers pass through: exit 0 with its JSON, exit 2 with its reason.
        let out = sh(&fail_closed("echo '{}'"));
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "{}\n");
        let out = sh(&fail_closed("sh -c 'echo no >&2; exit 2'"));
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(String::from_utf8_lossy(&out.stderr), "no\n");
    }

    #[test]
    fn only_judging_events_are_wrapped() {
        let out = merge(
            ClientName::Claude,
            "{}",
            "/a/agent-guard claude-hook --policy /p",
        );
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let pre = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        let stop = doc["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert!(pre.contains("exit 2"), "{pre}");
        // A Stop answered with exit 2 would keep Claude going.
        assert_eq!(stop, "/a/agent-guard claude-hook --policy /p");
    }

    #[test]
    fn uninstall_removes_exactly_what_init_wrote() {
        let spec = ClientSpec::of(ClientName::Claude);
        let existing = r#"{"zeta": 1, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-tool check"}]}], "Notification": []}}"#;
        let installed = merge(
            ClientName::Claude,
            existing,
            "/a/agent-guard claude-hook --policy /p",
        );
        let doc: Json = serde_json::from_str(&installed).unwrap();
        let back = serde_json::to_string(&without_ours(spec, doc).to_value()).unwrap();
        let want: serde_json::Value = serde_json::from_str(existing).unwrap();
        assert_eq!(back, want.to_string());
        // A file init created holds nothing afterwards.
        let installed = merge(
            ClientName::Claude,
            "{}",
            "/a/agent-guard claude-hook --policy /p",
        );
        let doc: Json = serde_json::from_str(&installed).unwrap();
        assert_eq!(without_ours(spec, doc), Json::Object(Vec::new()));
    }

    #[test]
    fn target_dirs_are_recognised() {
        assert!(in_cargo_target_dir(Path::new(
            "/w/target/debug/agent-guard"
        )));
        assert!(!in_cargo_target_dir(Path::new(
            "/nonexistent-root/bin/agent-guard"
        )));
    }
}
