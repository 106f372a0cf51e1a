//! The guard's vocabulary for one call and its verdict ([`Call`], [`Step`], [`Verdict`]) and
//! the knowledge tables the layers read ([`PATH_ARGS`], [`PATTERN_ARGS`], [`URL_ARGS`], ...).
//! The composition that takes a call through the layers is the `compose` module, which sits
//! above this module, the ledger and the executor; this module imports none of them, so the
//! three import one way (compose -> executor -> ledger -> verdict).

use std::path::{Path, PathBuf};

use fs_sandbox::{Op, SandboxError};
use perm_rules::{
    Decision, HookBlock, HookPermissionRequest, PermissionMode, Priority, Resolution,
};
use serde::Serialize;
use serde_json::Value;

use crate::network;

/// One tool call, in the guard's vocabulary, as any front end hands it to
/// `Executor::evaluate`.
#[derive(Debug, Clone, Default)]
pub struct Call {
    /// The guard's tool name (`read_file`, `run_bash`, ... or any other name, judged by the
    /// rules under that name).
    pub tool: String,
    /// The arguments.
    pub args: Value,
    /// The session the call belongs to.
    pub session_id: String,
    /// `lead`, or a subagent's name.
    pub agent_name: String,
    /// The call's id.
    pub call_id: String,
    /// The step of the agent loop (0 outside a loop).
    pub step: u32,
    /// Where relative paths resolve; `None` = the sandbox's working directory.
    pub cwd: Option<PathBuf>,
    /// Whether the caller declares the tool read-only when the guard does not know it
    /// (for `plan` mode). Tools the guard knows declare it themselves.
    pub read_only: bool,
    /// Findings of the client adapter about its own input (a Bash call run in the background,
    /// a client-side sandbox switched off, a tool that runs code the guard cannot see ...).
    pub client: Vec<ClientFinding>,
    /// How hook mode's session ledger sees the call (`None`: no ledger step).
    pub ledger: Option<LedgerUse>,
    /// Where the user's own requests of the session are (a client's transcript), for auto
    /// mode; read only when the model is consulted. `None`: what the runtime recorded.
    pub requests: Option<crate::auto::UserRequests>,
}

/// How the ledger sees one guard call: the client call it came from (the client's tool name
/// and input, so Claude's `Edit` of one file with different text is not a duplicate, though
/// the guard's `file_edit` call only carries the path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerUse {
    /// The client's tool name.
    pub tool: String,
    /// The client's input.
    pub input: Value,
    /// Count it: true for the first guard call of a client call answered at the client's
    /// pre-tool event; false for the other guard calls it translated into and for a second
    /// event about the same call (Claude Code's `PermissionRequest` after its `PreToolUse`).
    pub count: bool,
    /// A grant may lift it: the client call translated into this one guard call. A patch
    /// touching several files is several guard calls and no single grant can name them.
    pub grantable: bool,
}

impl LedgerUse {
    /// The canonical text of the input: serde_json's maps are ordered by key, so equal
    /// inputs serialise equally whatever the client's key order. Grants compare this text,
    /// not a hash: a hash collision must never let another call through.
    pub fn canonical_input(&self) -> String {
        self.input.to_string()
    }

    /// The input's canonical hash (runtime-limits' [`runtime_limits::canonical_hash`]), as the
    /// ledger stores it. A collision only makes two calls count as identical (a refusal).
    pub fn input_hash(&self) -> String {
        format!("{:016x}", runtime_limits::canonical_hash(&self.input))
    }
}

impl Call {
    /// A call of `tool` with `args` and every other field empty.
    pub fn new(tool: impl Into<String>, args: Value) -> Self {
        Call {
            tool: tool.into(),
            args,
            agent_name: "lead".to_owned(),
            ..Call::default()
        }
    }

    /// With the working directory relative paths resolve against.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// With the session id.
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session_id = session.into();
        self
    }
}

/// A finding a client adapter adds about its own input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinding {
    /// What it alone decides.
    pub decision: Decision,
    /// Stable code (`background`, `sandbox-disabled`, ...).
    pub code: String,
    /// Why, for a person.
    pub message: String,
    /// Only raise an Allow to this decision (a client flag that widens an allowed call),
    /// rather than count as a finding of its own.
    pub only_upgrades_allow: bool,
    /// An explicit allow rule for the tool (policy or session) lifts it: the tool is asked
    /// about by its nature, not because of anything dangerous the guard saw.
    pub yields_to_allow_rule: bool,
}

/// One layer's view of a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// `hooks`, `perm-rules`, `fs-sandbox`, `bash-guard`, `network`, `client`, `mode`.
    pub layer: &'static str,
    /// What the layer was asked, in words.
    pub saw: String,
    /// What this layer alone decided.
    pub decision: Decision,
    /// A stable machine-readable reason code.
    pub code: String,
    /// Why, in words a person can act on.
    pub message: String,
    /// The deciding rule's text, when a rule decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where that rule came from (`file:line`, an environment variable, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Step {
    pub(crate) fn new(
        layer: &'static str,
        saw: String,
        decision: Decision,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Step {
        Step {
            layer,
            saw,
            decision,
            code: code.into(),
            message: message.into(),
            rule: None,
            source: None,
        }
    }
}

/// The guard's answer for one call: the decision and every layer's step.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The tool judged.
    pub tool: String,
    /// The mode applied.
    pub mode: PermissionMode,
    /// The combined decision, after the mode.
    pub decision: Decision,
    /// Every layer consulted, in order; a `mode` step last when the mode changed the decision.
    pub steps: Vec<Step>,
    /// The arguments after the PreToolUse hooks (what runs if the call is allowed).
    pub final_args: Value,
    /// Context the hooks added for the model.
    pub additional_context: String,
    /// The rules layer's resolution (P0-P8, before the mode).
    #[serde(skip)]
    pub resolution: Option<Resolution>,
    /// Every ask of the call, each with its kind (a known side effect or cannot be reviewed)
    /// and the allow rule that lifted it: bash-guard's per simple command, the other layers'
    /// per step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub asks: Vec<crate::AskItem>,
    /// Who turned an ask into this decision: allow rules, an allow-once grant, auto mode
    /// (set by `evaluate`), or a person (set by the front end that asked one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<crate::AskResolution>,
    /// For an ask: how a person can let such calls through with allow rules (only when rules
    /// would: every ask standing is a known side effect), or why no rule can.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}

impl Verdict {
    /// The step that decided: the mode step when the mode changed the decision, else the first
    /// step whose decision is the verdict's, preferring a finding over the rules' default (the
    /// weakest reason there is).
    pub fn deciding(&self) -> Option<&Step> {
        if let Some(grant) = self
            .steps
            .iter()
            .rev()
            .find(|s| s.layer == "allow-once" && s.decision == self.decision)
        {
            return Some(grant);
        }
        if let Some(auto) = self
            .steps
            .iter()
            .rev()
            // An auto mode that had no answer leaves the ask's own reason deciding.
            .find(|s| {
                s.layer == "auto-mode" && s.decision == self.decision && s.decision != Decision::Ask
            })
        {
            return Some(auto);
        }
        if let Some(mode) = self.steps.iter().rev().find(|s| s.layer == "mode") {
            return Some(mode);
        }
        let mut agreeing = self.steps.iter().filter(|s| s.decision == self.decision);
        let first = agreeing.clone().next();
        agreeing
            .find(|s| s.code != Priority::Default.code())
            .or(first)
    }

    /// The deciding step's code (`denied` for an empty verdict, which cannot happen).
    pub fn code(&self) -> &str {
        self.deciding().map_or("no-layer", |s| s.code.as_str())
    }

    /// The deciding step's layer.
    pub fn layer(&self) -> &'static str {
        self.deciding().map_or("guard", |s| s.layer)
    }

    /// One line for people: `[layer] code: message`.
    pub fn summary(&self) -> String {
        match self.deciding() {
            Some(s) => format!("[{}] {}: {}", s.layer, s.code, s.message),
            None => "no layer was consulted".to_owned(),
        }
    }

    /// The steps that agree with the decision, deciding one first.
    pub fn reasons(&self) -> Vec<&Step> {
        let mut out: Vec<&Step> = self.deciding().into_iter().collect();
        for s in &self.steps {
            if s.decision == self.decision && !out.iter().any(|o| std::ptr::eq(*o, s)) {
                out.push(s);
            }
        }
        out
    }

    /// Whether nothing but the configured default decided an Allow (no rule, no finding).
    /// Hooks leave such a call to the client's own permission flow.
    pub fn decided_by_default(&self) -> bool {
        self.decision == Decision::Allow
            // A person's answer (an allow-once grant, an allow on the approval page) or auto
            // mode's is explicit, not the default: the client must not ask again.
            && !self
                .steps
                .iter()
                .any(|s| PERSON_LAYERS.contains(&s.layer) || s.layer == "auto-mode")
            && self
                .resolution
                .as_ref()
                .is_some_and(|r| r.decided_by.priority == Priority::Default)
    }
}

/// The layers whose step records a person's answer (`allow-once`, and `approver`: the
/// approval page through a hook's `--approve-via`).
pub(crate) const PERSON_LAYERS: &[&str] = &["allow-once", "approver"];

/// How a tool uses one of its arguments that names a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathArg {
    /// The guard's tool name.
    pub tool: &'static str,
    /// The argument's key.
    pub key: &'static str,
    /// What the tool does with it; `List` on a regular file is judged as `Read`.
    pub op: Op,
    /// An absent argument means the working directory (a search scope).
    pub defaults_to_cwd: bool,
    /// The tool reads the content of every file below the directory (a search), so a
    /// directory holding a credential store (`/`, the home directory) is refused.
    pub reads_tree: bool,
}

/// Every path-bearing argument of the guard's tools. Knowledge as data: each entry has a test.
pub const PATH_ARGS: &[PathArg] = &[
    PathArg {
        tool: "read_file",
        key: "file_path",
        op: Op::Read,
        defaults_to_cwd: false,
        reads_tree: false,
    },
    PathArg {
        tool: "file_write",
        key: "file_path",
        op: Op::Write,
        defaults_to_cwd: false,
        reads_tree: false,
    },
    PathArg {
        tool: "file_edit",
        key: "file_path",
        op: Op::Write,
        defaults_to_cwd: false,
        reads_tree: false,
    },
    PathArg {
        tool: "glob_files",
        key: "path",
        op: Op::List,
        defaults_to_cwd: true,
        reads_tree: false,
    },
    PathArg {
        tool: "grep_files",
        key: "path",
        op: Op::List,
        defaults_to_cwd: true,
        reads_tree: true,
    },
    PathArg {
        tool: "run_bash",
        key: "working_dir",
        op: Op::ExecuteDir,
        defaults_to_cwd: false,
        reads_tree: false,
    },
];

/// A glob pattern argument: the directory its literal prefix reaches is listed, and a pattern
/// that names a sensitive file is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatternArg {
    /// The guard's tool name.
    pub tool: &'static str,
    /// The pattern's key.
    pub key: &'static str,
    /// The key of the directory the pattern is relative to.
    pub base_key: &'static str,
    /// Whether the pattern's literal prefix can leave the base (`../../etc/*`).
    pub walks: bool,
}

/// Every glob-pattern argument of the guard's tools.
pub const PATTERN_ARGS: &[PatternArg] = &[
    PatternArg {
        tool: "glob_files",
        key: "pattern",
        base_key: "path",
        walks: true,
    },
    PatternArg {
        tool: "grep_files",
        key: "glob",
        base_key: "path",
        walks: false,
    },
];

/// Tools that run code the guard does not parse, and the argument holding it: the text goes
/// through bash-guard's catastrophic-text backstop, which no allow rule lifts.
pub(crate) const UNSEEN_CODE_ARGS: &[(&str, &str)] = &[
    ("powershell", "command"),
    ("repl", "code"),
    ("workflow", "script"),
];

/// Tools whose `url` argument is judged by where it really goes.
pub const URL_ARGS: &[(&str, &str)] = &[("web_fetch", "url")];

/// What the PreToolUse hooks said, for the rules layer (P3, P4).
pub(crate) struct HookVerdicts {
    pub(crate) block: Option<HookBlock>,
    pub(crate) requests: Vec<HookPermissionRequest>,
}

/// What a sandbox refusal of `op` decides: reading or listing outside the project is sometimes
/// legitimate, so a person decides (Ask); every other refusal is a Deny. One function, so the
/// single-layer `agent-guard path` answers as every other door does.
pub fn sandbox_refusal_decision(err: &SandboxError, op: Op) -> Decision {
    match err {
        SandboxError::OutsideRoots { .. } if op != Op::Write && special_outside(err).is_none() => {
            Decision::Ask
        }
        _ => Decision::Deny,
    }
}

/// For a path outside the roots that is a device, FIFO or socket: why it is refused. The
/// sandbox judges the file type only inside a root, but a person asked "read outside the
/// project?" should never be offered `/dev/mem`, a disk or a pipe that blocks the tool.
pub(crate) fn special_outside(err: &SandboxError) -> Option<String> {
    use std::os::unix::fs::FileTypeExt as _;
    let SandboxError::OutsideRoots { resolved, .. } = err else {
        return None;
    };
    // `/dev/null` reads as empty; the sandbox lets it through inside a root too.
    if resolved == Path::new("/dev/null") {
        return None;
    }
    // The resolved path has no symlink left; `symlink_metadata` never opens (a FIFO cannot
    // block it).
    let kind = std::fs::symlink_metadata(resolved).ok()?.file_type();
    let what = if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else {
        return None;
    };
    Some(format!(
        "`{}` is {what} outside the project; only regular files and directories are opened",
        resolved.display()
    ))
}

/// How many paths and URLs of an opaque input are judged; more are refused.
pub(crate) const MAX_OPAQUE_TARGETS: usize = 4096;

/// The longest path string judged (`PATH_MAX`).
pub(crate) const PATH_MAX_BYTES: usize = 4096;

/// `path` with `.` and `..` folded lexically (`/a/missing/../b` is `/a/b`), as a server that
/// normalises a path string before opening it reads it.
pub(crate) fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// How deep an opaque input is read. Past it the input is refused, not skipped.
pub(crate) const MAX_INPUT_DEPTH: usize = 64;

/// Whether a guard tool's arguments are judged by the tables above (paths, patterns, URLs,
/// bash); every other tool's input is read as opaque input.
pub(crate) fn has_argument_table(tool: &str) -> bool {
    tool == "run_bash"
        || PATH_ARGS.iter().any(|a| a.tool == tool)
        || PATTERN_ARGS.iter().any(|a| a.tool == tool)
        || URL_ARGS.iter().any(|(t, _)| *t == tool)
}

/// Key names (lower case, `-` as `_`) that say their value is a path: exact names, and
/// suffixes (`file_path`, `targetDir`, `source_files`). Knowledge as data, tested below.
pub(crate) const PATH_KEY_NAMES: &[&str] = &[
    "source",
    "destination",
    "dest",
    "target",
    "src",
    "dst",
    "cwd",
    "workdir",
    "root",
];
/// See [`PATH_KEY_NAMES`].
pub(crate) const PATH_KEY_SUFFIXES: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filenames",
    "dir",
    "dirs",
    "directory",
    "directories",
    "folder",
];

/// Whether an input key names a path (see [`PATH_KEY_NAMES`]).
fn is_path_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    PATH_KEY_NAMES.contains(&key.as_str()) || PATH_KEY_SUFFIXES.iter().any(|s| key.ends_with(s))
}

/// The strings of a JSON value, depth first, each with whether its key (the nearest object
/// key; list items inherit it) names a path. `false` when some of it lies deeper than
/// [`MAX_INPUT_DEPTH`] (the caller refuses the whole input, so the rest need not be read).
/// Whether a tool's name says it changes files (`mcp__fs__write_file`, `move_file`,
/// `createDirectory`): the words are matched case-blind inside the name.
pub(crate) fn tool_may_write(tool: &str) -> bool {
    let name = tool.to_ascii_lowercase();
    WRITE_WORDS.iter().any(|w| name.contains(w))
}

/// Words in a tool name that mean it changes files (not `put`, `set` or `patch`: `output`,
/// `get_settings` and `dispatch` would match them).
pub(crate) const WRITE_WORDS: &[&str] = &[
    "write", "edit", "create", "move", "rename", "copy", "save", "append", "upload", "mkdir",
    "delete", "remove", "replace", "insert", "update",
];

pub(crate) fn collect_strings<'a>(
    value: &'a Value,
    out: &mut Vec<(&'a str, bool)>,
    depth: usize,
    path_key: bool,
) -> bool {
    match value {
        Value::String(s) => {
            out.push((s, path_key));
            true
        }
        Value::Array(_) | Value::Object(_) if depth >= MAX_INPUT_DEPTH => false,
        Value::Array(items) => items
            .iter()
            .all(|v| collect_strings(v, out, depth + 1, path_key)),
        Value::Object(map) => map
            .iter()
            .all(|(k, v)| collect_strings(v, out, depth + 1, is_path_key(k))),
        _ => true,
    }
}

pub(crate) fn network_step(args: &Value, key: &str) -> Step {
    let Some(url) = args.get(key).and_then(Value::as_str) else {
        return Step::new(
            "network",
            format!("{args}"),
            Decision::Deny,
            "no_url",
            format!("the input has no string `{key}`"),
        );
    };
    let saw = format!("`{}`", crate::truncate_chars(url, 200).0);
    match network::judge_url(url) {
        Ok(()) => Step::new(
            "network",
            saw,
            Decision::Allow,
            "public_host",
            "the URL goes to a public host",
        ),
        Err(refusal) => Step::new(
            "network",
            saw,
            Decision::Deny,
            refusal.code(),
            refusal.to_string(),
        ),
    }
}

pub(crate) fn mode_message(
    mode: PermissionMode,
    from: Decision,
    to: Decision,
    read_only: bool,
) -> String {
    match mode {
        PermissionMode::Plan if !read_only => {
            "plan mode: only read-only tools run until the plan is accepted".to_owned()
        }
        PermissionMode::DontAsk => {
            "dontAsk mode: nobody is there to answer, so what would be asked is denied".to_owned()
        }
        _ => format!("mode `{mode}` turned {from} into {to}"),
    }
}

/// The components of `pattern` before the first one holding a glob character; for a pattern
/// without glob characters, its directory.
pub(crate) fn literal_prefix(pattern: &str) -> PathBuf {
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts
        .iter()
        .take_while(|c| !c.contains(['*', '?', '[', '{']))
        .count();
    let dirs = if literal == parts.len() {
        literal.saturating_sub(1)
    } else {
        literal
    };
    let mut out = PathBuf::new();
    if pattern.starts_with('/') {
        out.push("/");
    }
    for part in parts.iter().take(dirs) {
        if !part.is_empty() {
            out.push(part);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_prefix_follows_the_pattern() {
        assert_eq!(literal_prefix("**/*.rs"), PathBuf::new());
        assert_eq!(literal_prefix("src/**/*.rs"), PathBuf::from("src"));
        assert_eq!(literal_prefix("../../etc/*"), PathBuf::from("../../etc"));
        assert_eq!(literal_prefix("/etc/ssh/*"), PathBuf::from("/etc/ssh"));
        assert_eq!(literal_prefix("src/main.rs"), PathBuf::from("src"));
        assert_eq!(literal_prefix("/*"), PathBuf::from("/"));
    }

    #[test]
    fn every_unseen_code_arg_is_a_mapped_tool_whose_catastrophe_is_found() {
        for (tool, key) in UNSEEN_CODE_ARGS {
            assert!(
                crate::clients::TOOL_MAP.iter().any(|m| m.guard == *tool),
                "{tool} is no client tool's guard name"
            );
            let call = serde_json::json!({ *key: "rm -rf ~" });
            let text = call.get(key).and_then(Value::as_str).unwrap_or_default();
            assert!(
                bash_guard::catastrophic_text(text).is_some(),
                "{tool}.{key}"
            );
        }
    }

    #[test]
    fn tool_names_that_write_are_recognised() {
        for name in [
            "mcp__fs__write_file",
            "mcp__fs__move_file",
            "createDirectory",
            "FooEdit",
        ] {
            assert!(tool_may_write(name), "{name}");
        }
        for name in ["mcp__fs__read_file", "mcp__github__list_issues", "search"] {
            assert!(!tool_may_write(name), "{name}");
        }
        for word in WRITE_WORDS {
            assert!(tool_may_write(&format!("mcp__x__{word}_thing")), "{word}");
        }
    }

    #[test]
    fn path_keys_are_recognised() {
        for key in [
            "path",
            "file_path",
            "filePath",
            "paths",
            "targetDir",
            "source",
            "out-file",
            "directory",
            "Filename",
            "workdir",
        ] {
            assert!(is_path_key(key), "{key}");
        }
        for key in [
            "title", "body", "content", "query", "message", "name", "url",
        ] {
            assert!(!is_path_key(key), "{key}");
        }
        for name in PATH_KEY_NAMES {
            assert!(is_path_key(name), "{name}");
        }
        for suffix in PATH_KEY_SUFFIXES {
            assert!(is_path_key(&format!("x_{suffix}")), "{suffix}");
        }
    }

    #[test]
    fn every_path_arg_names_a_known_tool_once() {
        let known = [
            "read_file",
            "file_write",
            "file_edit",
            "glob_files",
            "grep_files",
            "run_bash",
        ];
        for a in PATH_ARGS {
            assert!(known.contains(&a.tool), "{a:?}");
            assert_eq!(
                PATH_ARGS
                    .iter()
                    .filter(|b| b.tool == a.tool && b.key == a.key)
                    .count(),
                1
            );
        }
        for p in PATTERN_ARGS {
            assert!(known.contains(&p.tool), "{p:?}");
        }
    }
}
