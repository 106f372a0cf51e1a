//! The one mapping from external agents' tool calls (Claude Code, Codex, Gemini CLI) into the
//! guard's [`Call`]s. Knowledge as data: [`TOOL_MAP`] says, per client and tool name, which
//! guard tool it is, which input fields carry what, and which input flags change the verdict;
//! [`translate`] is its one interpreter. A tool the table does not know is judged by the rules
//! under its own name (MCP tools, new tools), never silently allowed by a layer.

use std::path::Path;

use perm_rules::Decision;
use serde_json::{Map, Value};

use crate::verdict::{Call, ClientFinding};

/// The agents whose hooks the guard speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Client {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    Gemini,
}

impl Client {
    /// The client's name for people.
    pub fn as_str(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
        }
    }
}

/// One input field copied into the guard's arguments. Several fields may name the same guard
/// key (a client's current and legacy spellings, e.g. Gemini's `dir_path` and `path`): every
/// one present is read, two that disagree are refused (the guard cannot tell which one the
/// tool uses), and the key is required when any of them is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The client's key.
    pub from: &'static str,
    /// The guard's key.
    pub to: &'static str,
    /// Whether the call is refused without it (a non-empty string).
    pub required: bool,
}

/// How an input is reshaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Copy these fields.
    Fields(&'static [Field]),
    /// Codex `apply_patch`: every path in the patch text (field `command`) is a `file_write`.
    ApplyPatch,
    /// Every URL in a free-text field is a `web_fetch` (Gemini's `web_fetch` prompt).
    UrlsInText(&'static str),
    /// Every pattern of these lists is a `glob_files` (Gemini's `read_many_files`: `include`,
    /// and the legacy `paths`); at least one pattern is required.
    Includes(&'static [&'static str]),
    /// The whole input, unchanged.
    Whole,
}

/// When an input flag is raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// The field is `true`.
    True,
    /// The field is present and not null, false, empty or zero.
    Present,
    /// Always (a tool that is asked about by its nature).
    Always,
    /// The field is present, not null, and not this string (Codex's `sandbox_permissions`
    /// other than `use_default`).
    OtherThan(&'static str),
    /// The field is present and not `true` (a protection switched off: `false`, or a value
    /// of the wrong type the guard cannot read as on).
    False,
}

/// An input flag that changes the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    /// The client's key (ignored for [`When::Always`]).
    pub field: &'static str,
    /// When it applies.
    pub when: When,
    /// What it decides.
    pub decision: Decision,
    /// A stable code.
    pub code: &'static str,
    /// Why, for a person.
    pub message: &'static str,
    /// It only raises an Allow (a widening flag on an allowed call).
    pub only_upgrades_allow: bool,
    /// An explicit allow rule for the tool lifts it.
    pub yields_to_allow_rule: bool,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolMap {
    /// The client.
    pub client: Client,
    /// The client's tool name.
    pub name: &'static str,
    /// The guard's tool name.
    pub guard: &'static str,
    /// How the input is reshaped.
    pub shape: Shape,
    /// Flags that change the verdict.
    pub flags: &'static [Flag],
    /// Whether the tool only reads (for `plan` mode).
    pub read_only: bool,
}

const fn f(from: &'static str, to: &'static str, required: bool) -> Field {
    Field { from, to, required }
}

const BACKGROUND: Flag = Flag {
    field: "run_in_background",
    when: When::True,
    decision: Decision::Ask,
    code: "background",
    message: "the command runs in the background, beyond the call's timeout and review",
    only_upgrades_allow: false,
    yields_to_allow_rule: false,
};
const SANDBOX_OFF: Flag = Flag {
    field: "dangerouslyDisableSandbox",
    when: When::True,
    decision: Decision::Ask,
    code: "sandbox-disabled",
    message: "the client's own sandbox is switched off for this command",
    only_upgrades_allow: true,
    yields_to_allow_rule: false,
};
const fn runs_unseen(code: &'static str, message: &'static str) -> Flag {
    Flag {
        field: "",
        when: When::Always,
        decision: Decision::Ask,
        code,
        message,
        only_upgrades_allow: false,
        yields_to_allow_rule: true,
    }
}

const BASH: &[Field] = &[f("command", "command", true)];
/// Codex's shell tools (`shell`, `exec_command`, `shell_command`, `local_shell`,
/// `unified_exec`, `container.exec`): the command under any of its spellings (an argv array is
/// joined as the shell would run it) and the working directory it runs in.
const CODEX_SHELL_REQUIRED: &[Field] = &[
    f("command", "command", true),
    f("cmd", "command", false),
    f("input", "command", false),
    f("workdir", "working_dir", false),
    f("working_directory", "working_dir", false),
    f("cwd", "working_dir", false),
];
/// Gemini's grep with `no_ignore`: ignored files (where `.env` and build secrets usually are)
/// are searched too, beyond what the guard judged.
const NO_IGNORE: Flag = Flag {
    field: "no_ignore",
    when: When::True,
    decision: Decision::Ask,
    code: "searches-ignored-files",
    message: "the search includes ignored files, where secrets such as `.env` usually are",
    only_upgrades_allow: false,
    yields_to_allow_rule: false,
};
/// Codex's approval escalation: the command asks to leave Codex's sandbox.
const CODEX_ESCALATION: &[Flag] = &[
    Flag {
        field: "with_escalated_permissions",
        when: When::True,
        code: "sandbox-escalated",
        message: "the command asks to run outside the client's sandbox (escalated permissions)",
        ..SANDBOX_OFF
    },
    Flag {
        field: "sandbox_permissions",
        when: When::OtherThan("use_default"),
        code: "sandbox-escalated",
        message: "the command asks to run outside the client's sandbox (escalated permissions)",
        ..SANDBOX_OFF
    },
];
const READ: &[Field] = &[f("file_path", "file_path", true)];
/// Gemini's `read_file`: `file_path`, and `absolute_path` in releases before the rename.
const GEMINI_READ: &[Field] = &[
    f("file_path", "file_path", true),
    f("absolute_path", "file_path", false),
];
const WRITE: &[Field] = &[
    f("file_path", "file_path", true),
    f("content", "content", false),
];
const EDIT: &[Field] = &[
    f("file_path", "file_path", true),
    f("old_string", "old_string", false),
    f("new_string", "new_string", false),
];
const GLOB: &[Field] = &[f("pattern", "pattern", true), f("path", "path", false)];
const GREP: &[Field] = &[
    f("pattern", "pattern", true),
    f("path", "path", false),
    f("glob", "glob", false),
];
/// Gemini's grep: `dir_path`/`include_pattern`, and the legacy `path`/`include`.
const GEMINI_GREP: &[Field] = &[
    f("pattern", "pattern", true),
    f("dir_path", "path", false),
    f("path", "path", false),
    f("include_pattern", "glob", false),
    f("include", "glob", false),
];
/// Gemini's glob: `dir_path`, and the legacy `path`.
const GEMINI_GLOB: &[Field] = &[
    f("pattern", "pattern", true),
    f("dir_path", "path", false),
    f("path", "path", false),
];
const AGENT: &[Field] = &[
    f("prompt", "prompt", false),
    f("description", "description", false),
    f("subagent_type", "subagent_type", false),
];

use Client::{ClaudeCode as CC, Codex as CX, Gemini as GM};

const fn row(
    client: Client,
    name: &'static str,
    guard: &'static str,
    shape: Shape,
    flags: &'static [Flag],
    read_only: bool,
) -> ToolMap {
    ToolMap {
        client,
        name,
        guard,
        shape,
        flags,
        read_only,
    }
}

/// The table. Each row has a test in `tests/clients.rs`.
pub const TOOL_MAP: &[ToolMap] = &[
    // Claude Code (tool table of docs v2.1.240).
    row(
        CC,
        "Bash",
        "run_bash",
        Shape::Fields(BASH),
        &[BACKGROUND, SANDBOX_OFF],
        false,
    ),
    row(
        CC,
        "Monitor",
        "run_bash",
        Shape::Fields(BASH),
        &[Flag {
            field: "persistent",
            ..BACKGROUND
        }],
        false,
    ),
    row(
        CC,
        "PowerShell",
        "powershell",
        Shape::Whole,
        &[
            BACKGROUND,
            runs_unseen(
                "powershell-unparsed",
                "PowerShell commands are not parsed by the guard; add an explicit allow rule for `powershell` to allow them",
            ),
        ],
        false,
    ),
    row(CC, "Read", "read_file", Shape::Fields(READ), &[], true),
    row(CC, "Write", "file_write", Shape::Fields(WRITE), &[], false),
    row(CC, "Edit", "file_edit", Shape::Fields(EDIT), &[], false),
    row(
        CC,
        "MultiEdit",
        "file_edit",
        Shape::Fields(READ),
        &[],
        false,
    ),
    row(
        CC,
        "NotebookEdit",
        "file_edit",
        Shape::Fields(&[f("notebook_path", "file_path", true)]),
        &[],
        false,
    ),
    row(CC, "Glob", "glob_files", Shape::Fields(GLOB), &[], true),
    row(CC, "Grep", "grep_files", Shape::Fields(GREP), &[], true),
    row(
        CC,
        "WebFetch",
        "web_fetch",
        Shape::Fields(&[f("url", "url", true)]),
        &[],
        true,
    ),
    row(CC, "WebSearch", "web_search", Shape::Whole, &[], true),
    row(CC, "Agent", "subagent", Shape::Fields(AGENT), &[], false),
    row(CC, "Task", "subagent", Shape::Fields(AGENT), &[], false),
    row(CC, "TodoWrite", "todo_write", Shape::Whole, &[], true),
    row(
        CC,
        "Workflow",
        "workflow",
        Shape::Whole,
        &[runs_unseen(
            "runs-script",
            "a workflow runs a script the guard cannot see; add an explicit allow rule for `workflow` to allow it",
        )],
        false,
    ),
    row(
        CC,
        "REPL",
        "repl",
        Shape::Whole,
        &[runs_unseen(
            "runs-code",
            "the REPL runs code the guard does not parse; add an explicit allow rule for `repl` to allow it",
        )],
        false,
    ),
    row(
        CC,
        "CronCreate",
        "schedule",
        Shape::Whole,
        &[runs_unseen(
            "schedules-work",
            "it schedules a prompt to run later, outside this review",
        )],
        false,
    ),
    row(
        CC,
        "RemoteTrigger",
        "schedule",
        Shape::Whole,
        &[runs_unseen(
            "schedules-work",
            "it triggers a run elsewhere, outside this review",
        )],
        false,
    ),
    row(
        CC,
        "ScheduleWakeup",
        "schedule",
        Shape::Whole,
        &[runs_unseen(
            "schedules-work",
            "it schedules a prompt to run later, outside this review",
        )],
        false,
    ),
    row(CC, "TaskOutput", "task_output", Shape::Whole, &[], true),
    row(CC, "TaskStop", "task_stop", Shape::Whole, &[], true),
    row(CC, "AskUserQuestion", "ask_user", Shape::Whole, &[], true),
    row(
        CC,
        "ExitPlanMode",
        "exit_plan_mode",
        Shape::Whole,
        &[],
        true,
    ),
    row(CC, "Skill", "skill", Shape::Whole, &[], false),
    // Claude Code's legacy names (older releases, still sent by some): `LS` lists a
    // directory, `BashOutput`/`KillShell` became `TaskOutput`/`TaskStop`.
    row(
        CC,
        "LS",
        "glob_files",
        Shape::Fields(&[f("path", "path", true)]),
        &[],
        true,
    ),
    row(CC, "BashOutput", "task_output", Shape::Whole, &[], true),
    row(CC, "KillShell", "task_stop", Shape::Whole, &[], true),
    // Codex (HookToolName).
    row(
        CX,
        "Bash",
        "run_bash",
        Shape::Fields(CODEX_SHELL_REQUIRED),
        CODEX_ESCALATION,
        false,
    ),
    // The model-side names of Codex's shell tools, for releases (and wrappers) that send them
    // instead of the canonical `Bash`.
    row(
        CX,
        "shell",
        "run_bash",
        Shape::Fields(CODEX_SHELL_REQUIRED),
        CODEX_ESCALATION,
        false,
    ),
    row(
        CX,
        "shell_command",
        "run_bash",
        Shape::Fields(CODEX_SHELL_REQUIRED),
        CODEX_ESCALATION,
        false,
    ),
    row(
        CX,
        "exec_command",
        "run_bash",
        Shape::Fields(CODEX_SHELL_REQUIRED),
        CODEX_ESCALATION,
        false,
    ),
    row(
        CX,
        "local_shell",
        "run_bash",
        Shape::Fields(CODEX_SHELL_REQUIRED),
        CODEX_ESCALATION,
        false,
    ),
    row(
        CX,
        "unified_exec",
        "run_bash",
        Shape::Fields(CODEX_SHELL_REQUIRED),
        CODEX_ESCALATION,
        false,
    ),
    row(
        CX,
        "container.exec",
        "run_bash",
        Shape::Fields(CODEX_SHELL_REQUIRED),
        CODEX_ESCALATION,
        false,
    ),
    row(
        CX,
        "apply_patch",
        "file_write",
        Shape::ApplyPatch,
        &[],
        false,
    ),
    row(CX, "spawn_agent", "subagent", Shape::Whole, &[], false),
    // Gemini CLI (tool-names.ts).
    row(
        GM,
        "run_shell_command",
        "run_bash",
        Shape::Fields(&[
            f("command", "command", true),
            f("dir_path", "working_dir", false),
            // The legacy name of `dir_path`.
            f("directory", "working_dir", false),
        ]),
        &[
            Flag {
                field: "is_background",
                ..BACKGROUND
            },
            Flag {
                field: "additional_permissions",
                when: When::Present,
                code: "sandbox-widened",
                message: "the call asks the client to widen its sandbox (network or file access)",
                ..BACKGROUND
            },
        ],
        false,
    ),
    row(
        GM,
        "read_file",
        "read_file",
        Shape::Fields(GEMINI_READ),
        &[],
        true,
    ),
    row(
        GM,
        "write_file",
        "file_write",
        Shape::Fields(WRITE),
        &[],
        false,
    ),
    row(GM, "replace", "file_edit", Shape::Fields(EDIT), &[], false),
    row(
        GM,
        "glob",
        "glob_files",
        Shape::Fields(GEMINI_GLOB),
        &[],
        true,
    ),
    row(
        GM,
        "grep_search",
        "grep_files",
        Shape::Fields(GEMINI_GREP),
        &[NO_IGNORE],
        true,
    ),
    row(
        GM,
        "search_file_content",
        "grep_files",
        Shape::Fields(GEMINI_GREP),
        &[NO_IGNORE],
        true,
    ),
    row(
        GM,
        "list_directory",
        "glob_files",
        Shape::Fields(&[f("dir_path", "path", false), f("path", "path", true)]),
        &[],
        true,
    ),
    row(
        GM,
        "read_many_files",
        "glob_files",
        Shape::Includes(&["include", "paths"]),
        &[
            Flag {
                field: "useDefaultExcludes",
                when: When::False,
                code: "reads-ignored-files",
                message: "the read includes ignored and excluded files, where secrets such as `.env` usually are",
                ..NO_IGNORE
            },
            Flag {
                field: "respect_git_ignore",
                when: When::False,
                code: "reads-ignored-files",
                message: "the read includes ignored and excluded files, where secrets such as `.env` usually are",
                ..NO_IGNORE
            },
        ],
        true,
    ),
    row(
        GM,
        "web_fetch",
        "web_fetch",
        Shape::UrlsInText("prompt"),
        &[],
        true,
    ),
    row(
        GM,
        "google_web_search",
        "web_search",
        Shape::Whole,
        &[],
        true,
    ),
    row(GM, "invoke_agent", "subagent", Shape::Whole, &[], false),
    row(GM, "write_todos", "todo_write", Shape::Whole, &[], true),
    row(GM, "ask_user", "ask_user", Shape::Whole, &[], true),
    row(GM, "save_memory", "save_memory", Shape::Whole, &[], false),
];

/// Every tool name the guard knows: its built-in tools and every guard tool [`TOOL_MAP`] maps
/// onto (rules naming anything else are probably typos; `lint` and `test` say so).
pub const GUARD_TOOLS: &[&str] = &[
    "read_file",
    "file_write",
    "file_edit",
    "glob_files",
    "grep_files",
    "run_bash",
    "ask_user",
    "todo_write",
    "save_memory",
    "compress_context",
    "subagent",
    "bg_task_run",
    "web_fetch",
    "web_search",
    "powershell",
    "workflow",
    "repl",
    "schedule",
    "task_output",
    "task_stop",
    "exit_plan_mode",
    "skill",
];

/// The guard tool a permission rule naming `name` means: a rule may be written in a client's
/// own vocabulary (`Bash(rm:*)`, `Read(**/.env)`), which names the guard tool that client's
/// tool maps onto. `Ok(None)`: the name is a guard tool, or no client's tool (an MCP tool, a
/// typo: `lint` warns), and is kept. `Err`: the clients map it onto different guard tools, so
/// a rule naming it cannot be applied as written.
pub fn rule_tool(name: &str) -> Result<Option<&'static str>, Vec<&'static str>> {
    if GUARD_TOOLS.contains(&name) {
        return Ok(None);
    }
    let mut guards: Vec<&'static str> = TOOL_MAP
        .iter()
        .filter(|m| m.name == name && m.guard != name)
        .map(|m| m.guard)
        .collect();
    guards.sort_unstable();
    guards.dedup();
    match guards.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        _ => Err(guards),
    }
}

/// The row for `client`'s tool `name`, if the table knows it.
pub fn lookup(client: Client, name: &str) -> Option<&'static ToolMap> {
    TOOL_MAP
        .iter()
        .find(|m| m.client == client && m.name == name)
}

/// Translates one client tool call into the guard calls that decide it (several for a patch
/// touching several files). `Err` is a reason to deny: input the guard cannot judge.
pub fn translate(
    client: Client,
    name: &str,
    input: &Value,
    cwd: &Path,
) -> Result<Vec<Call>, String> {
    let Some(map) = lookup(client, name) else {
        // Unknown to the table: judged by the rules under the client's own name.
        return Ok(vec![base(name, input.clone(), cwd, false)]);
    };
    let obj = match input {
        Value::Object(o) => o,
        _ => return Err(format!("`{name}` input must be a JSON object")),
    };
    // Codex asks for network access as a `Bash` PermissionRequest whose description is
    // `network-access <domain>`, with no command: that is web access to the domain.
    if client == Client::Codex
        && map.guard == "run_bash"
        && obj.get("command").is_none()
        && let Some(domain) = obj
            .get("description")
            .and_then(Value::as_str)
            .and_then(|d| d.strip_prefix("network-access "))
    {
        let domain = domain.trim();
        // Codex names a host (`example.com`, `host:443`); anything else (`a.com/x@10.0.0.1`,
        // whose URL would go to `a.com` while the approval grants something else) is not a
        // domain the guard can judge.
        if domain.is_empty()
            || !domain
                .chars()
                .all(|c| c.is_alphanumeric() || "-.:[]_*".contains(c))
        {
            return Err(format!(
                "the network approval names `{domain}`, which is not a host name"
            ));
        }
        let url = format!("https://{domain}/");
        return Ok(vec![base(
            "web_fetch",
            serde_json::json!({ "url": url }),
            cwd,
            true,
        )]);
    }
    // Claude Code's Monitor watches a command's output or a WebSocket (`ws: {url}`): the
    // socket is web access to its URL, judged by where it goes.
    if client == Client::ClaudeCode
        && name == "Monitor"
        && obj.get("command").is_none()
        && let Some(ws) = obj.get("ws")
    {
        let Some(url) = ws
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
        else {
            return Err("`Monitor` `ws` has no string `url`".to_owned());
        };
        let mut call = base(
            "web_fetch",
            serde_json::json!({ "url": url }),
            cwd,
            map.read_only,
        );
        call.client.extend(flags(map, obj));
        return Ok(vec![call]);
    }
    // Codex's model may run apply_patch through its shell tool (`apply_patch <<'EOF' ...`, or
    // the argv `["apply_patch", patch]`): the same edit gets the same verdict as the
    // `apply_patch` tool, every path it names judged as a write.
    if client == Client::Codex
        && map.guard == "run_bash"
        && let Some(patch) = shell_apply_patch(obj)
    {
        let dir = obj
            .get("workdir")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d));
        let mut calls = patch_calls(&patch, &dir)?;
        if calls.len() > MAX_CALLS {
            return Err(format!(
                "the patch names {} files; the guard judges at most {MAX_CALLS} in one call",
                calls.len()
            ));
        }
        let findings = flags(map, obj);
        for call in &mut calls {
            call.client.extend(findings.iter().cloned());
        }
        return Ok(calls);
    }
    let findings = flags(map, obj);
    let mut calls = match map.shape {
        Shape::Whole => vec![base(map.guard, input.clone(), cwd, map.read_only)],
        Shape::Fields(fields) => vec![base(
            map.guard,
            Value::Object(copy_fields(client, map, name, obj, fields)?),
            cwd,
            map.read_only,
        )],
        Shape::ApplyPatch => apply_patch_calls(obj, cwd)?,
        Shape::UrlsInText(key) => {
            let text = obj.get(key).and_then(Value::as_str).unwrap_or_default();
            let mut urls = crate::network::urls_in(text);
            // A `url` argument beside the prompt (other releases, wrappers) is fetched too.
            if let Some(Value::String(url)) = obj.get("url") {
                urls.push(url.clone());
            }
            if urls.is_empty() {
                let mut call = base(map.guard, input.clone(), cwd, map.read_only);
                call.client.push(ClientFinding {
                    decision: Decision::Ask,
                    code: "no-url".to_owned(),
                    message: format!("no URL was found in `{key}`, so the destination is unknown"),
                    only_upgrades_allow: false,
                    yields_to_allow_rule: false,
                });
                vec![call]
            } else {
                urls.into_iter()
                    .map(|u| {
                        base(
                            map.guard,
                            serde_json::json!({ "url": u }),
                            cwd,
                            map.read_only,
                        )
                    })
                    .collect()
            }
        }
        Shape::Includes(keys) => {
            let mut patterns: Vec<String> = Vec::new();
            for key in keys {
                match obj.get(*key) {
                    Some(Value::Array(items)) => patterns.extend(
                        items
                            .iter()
                            .map(|v| v.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                            .ok_or_else(|| format!("`{name}` `{key}` must be a list of strings"))?,
                    ),
                    Some(Value::String(s)) => patterns.push(s.clone()),
                    None | Some(Value::Null) => {}
                    Some(_) => return Err(format!("`{name}` `{key}` must be a list of strings")),
                }
            }
            // An empty pattern would be judged as nothing at all.
            if patterns.iter().any(String::is_empty) {
                return Err(format!("`{name}` has an empty pattern"));
            }
            if patterns.is_empty() {
                return Err(format!("`{name}` input has no `{}` list", keys.join("`/`")));
            }
            patterns
                .into_iter()
                .map(|p| {
                    // The tool reads every file its patterns select, not just their names: a
                    // pattern that can select a secret's name (`.en?`, `**/*`) may hand the
                    // secret over, depending on the client's dot-file and ignore settings.
                    let selects = fs_sandbox::search_glob_selects_sensitive(&p);
                    let mut call = base(
                        map.guard,
                        serde_json::json!({ "pattern": p }),
                        cwd,
                        map.read_only,
                    );
                    if let Some((what, example)) = selects {
                        call.client.push(ClientFinding {
                            decision: Decision::Ask,
                            code: "reads-selected-secrets".to_owned(),
                            message: format!(
                                "`{name}` reads every file `{p}` selects, and it selects files such as `{example}` ({what}); name the files more narrowly"
                            ),
                            only_upgrades_allow: false,
                            yields_to_allow_rule: false,
                        });
                    }
                    call
                })
                .collect()
        }
    };
    if calls.len() > MAX_CALLS {
        return Err(format!(
            "`{name}` names {} files, patterns or URLs; the guard judges at most {MAX_CALLS} in one call",
            calls.len()
        ));
    }
    for call in &mut calls {
        call.client.extend(findings.iter().cloned());
    }
    Ok(calls)
}

/// The most guard calls one client call becomes (patch files, include patterns, URLs). Each
/// is a full evaluation; a flood of them would outlast the client's hook timeout (Gemini CLI:
/// 60 s), and a timed-out hook lets the call run.
pub const MAX_CALLS: usize = 512;

fn base(tool: &str, args: Value, cwd: &Path, read_only: bool) -> Call {
    let mut call = Call::new(tool, args).with_cwd(cwd);
    call.read_only = read_only;
    call
}

fn flags(map: &ToolMap, obj: &Map<String, Value>) -> Vec<ClientFinding> {
    map.flags
        .iter()
        .filter(|flag| match flag.when {
            When::Always => true,
            // `true`, and any value of the wrong type a tool might still read as true
            // (`"true"`, `1`): a widening flag the guard cannot read as false is raised.
            When::True => match obj.get(flag.field) {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::String(s)) => {
                    !(s.is_empty() || s.eq_ignore_ascii_case("false") || s == "0")
                }
                Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                Some(_) => true,
            },
            When::Present => match obj.get(flag.field) {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(Value::Array(a)) => !a.is_empty(),
                Some(Value::Object(o)) => !o.is_empty(),
                Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                Some(Value::Bool(true)) => true,
            },
            When::False => match obj.get(flag.field) {
                None | Some(Value::Null) | Some(Value::Bool(true)) => false,
                Some(Value::String(s)) => !s.eq_ignore_ascii_case("true"),
                Some(_) => true,
            },
            When::OtherThan(quiet) => match obj.get(flag.field) {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => s != quiet,
                Some(_) => true,
            },
        })
        .map(|flag| ClientFinding {
            decision: flag.decision,
            code: flag.code.to_owned(),
            message: flag.message.to_owned(),
            only_upgrades_allow: flag.only_upgrades_allow,
            yields_to_allow_rule: flag.yields_to_allow_rule,
        })
        .collect()
}

/// Copies a row's fields into the guard's arguments (see [`Field`]: aliases that disagree
/// are refused, a key is required when any of its fields is).
fn copy_fields(
    client: Client,
    map: &ToolMap,
    name: &str,
    obj: &Map<String, Value>,
    fields: &[Field],
) -> Result<Map<String, Value>, String> {
    let mut args = Map::new();
    for field in fields {
        let text = match obj.get(field.from) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s.clone(),
            // Codex sends shell commands as argv arrays: judged as the shell would run them.
            Some(Value::Array(items))
                if client == Client::Codex && map.guard == "run_bash" && field.to == "command" =>
            {
                shell_join(items)
                    .ok_or_else(|| format!("`{name}` `{}` array must hold strings", field.from))?
            }
            Some(_) => {
                return Err(format!(
                    "`{name}` input field `{}` must be a string",
                    field.from
                ));
            }
        };
        if text.is_empty() {
            // Absent for an optional key; a required one is refused below.
            continue;
        }
        let value = Value::String(text);
        match args.get(field.to) {
            Some(seen) if *seen != value => {
                return Err(format!(
                    "`{name}` input names `{}` twice, differently ({} and `{}`); the guard cannot tell which one the tool uses",
                    field.to, seen, field.from
                ));
            }
            _ => {
                args.insert(field.to.to_owned(), value);
            }
        }
    }
    for field in fields.iter().filter(|f| f.required) {
        if !args.contains_key(field.to) {
            return Err(format!(
                "`{name}` input has no non-empty string `{}`",
                field.from
            ));
        }
    }
    Ok(args)
}

/// An argv array as one shell command line; `None` when an item is not a string.
fn shell_join(items: &[Value]) -> Option<String> {
    let words: Vec<String> = items
        .iter()
        .map(|v| v.as_str().map(shell_quote))
        .collect::<Option<_>>()?;
    Some(words.join(" "))
}

fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn apply_patch_calls(obj: &Map<String, Value>, cwd: &Path) -> Result<Vec<Call>, String> {
    let text = match obj
        .get("command")
        .or_else(|| obj.get("patch"))
        .or_else(|| obj.get("input"))
    {
        Some(Value::String(s)) => s.clone(),
        // The argv form `["apply_patch", "<patch>"]` (Codex's shell form of the tool): the
        // patch is the one argument after the program name.
        Some(Value::Array(items)) => match items.as_slice() {
            [Value::String(program), Value::String(patch)]
                if program == "apply_patch" || program == "applypatch" =>
            {
                patch.clone()
            }
            _ => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or("`apply_patch` command array must hold strings")
                })
                .collect::<Result<Vec<_>, _>>()?
                .join("\n"),
        },
        _ => return Err("`apply_patch` input has no patch text in `command`".to_owned()),
    };
    patch_calls(&text, cwd)
}

/// The patch a Codex shell call runs, when the call is apply_patch itself: the argv form, or
/// a command line that starts with the program (the parser reads its heredoc, and refuses
/// anything before or after it).
fn shell_apply_patch(obj: &Map<String, Value>) -> Option<String> {
    let is_program = |p: &str| p == "apply_patch" || p == "applypatch";
    match obj.get("command").or_else(|| obj.get("cmd")) {
        Some(Value::Array(items)) => match items.as_slice() {
            [Value::String(program), Value::String(patch)] if is_program(program) => {
                Some(patch.clone())
            }
            _ => None,
        },
        Some(Value::String(line)) => {
            let first = line.split_whitespace().next().unwrap_or("");
            let first = first.split("<<").next().unwrap_or("");
            is_program(first).then(|| line.clone())
        }
        _ => None,
    }
}

/// One `file_write` per path the patch text names; an unreadable patch is refused.
fn patch_calls(text: &str, cwd: &Path) -> Result<Vec<Call>, String> {
    let patch =
        crate::apply_patch::parse(text).map_err(|e| format!("the patch cannot be read: {e}"))?;
    let paths = patch.written_paths();
    if paths.is_empty() {
        return Err("the patch names no file".to_owned());
    }
    Ok(paths
        .into_iter()
        .map(|p| {
            base(
                "file_write",
                serde_json::json!({ "file_path": p }),
                cwd,
                false,
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn rules_in_a_clients_vocabulary_name_the_guard_tool() {
        assert_eq!(rule_tool("Bash"), Ok(Some("run_bash")));
        assert_eq!(rule_tool("Read"), Ok(Some("read_file")));
        assert_eq!(rule_tool("run_shell_command"), Ok(Some("run_bash")));
        assert_eq!(rule_tool("read_file"), Ok(None));
        assert_eq!(rule_tool("mcp__github__create_issue"), Ok(None));
        // Every name in the table is either applied or refused, never silently ignored.
        let ambiguous: Vec<&str> = TOOL_MAP
            .iter()
            .filter(|m| rule_tool(m.name).is_err())
            .map(|m| m.name)
            .collect();
        assert!(
            ambiguous.is_empty(),
            "rules naming {ambiguous:?} would be refused: give them one guard tool"
        );
    }

    use super::*;

    #[test]
    fn codex_network_approvals_are_web_access_to_the_domain() {
        let cwd = Path::new("/p");
        let calls = translate(
            Client::Codex,
            "Bash",
            &serde_json::json!({"description": "network-access 169.254.169.254"}),
            cwd,
        )
        .unwrap_or_default();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].tool, "web_fetch");
        assert_eq!(calls[0].args["url"], "https://169.254.169.254/");
        // A shell call keeps being a shell call, whatever its description says.
        let calls = translate(
            Client::Codex,
            "Bash",
            &serde_json::json!({"command": "ls", "description": "network-access x.com"}),
            cwd,
        )
        .unwrap_or_default();
        assert_eq!(calls[0].tool, "run_bash");
        // A domain that is not a bare host cannot be judged as one.
        for odd in [
            "a.com/x@127.0.0.1",
            "a.com 127.0.0.1",
            "",
            "a.com#@10.0.0.1",
        ] {
            assert!(
                translate(
                    Client::Codex,
                    "Bash",
                    &serde_json::json!({"description": format!("network-access {odd}")}),
                    cwd
                )
                .is_err(),
                "{odd}"
            );
        }
        // Other descriptions without a command stay untranslatable.
        assert!(
            translate(
                Client::Codex,
                "Bash",
                &serde_json::json!({"description": "why"}),
                cwd
            )
            .is_err()
        );
    }

    #[test]
    fn each_client_tool_name_is_in_the_table_once() {
        for m in TOOL_MAP {
            assert_eq!(
                TOOL_MAP
                    .iter()
                    .filter(|n| n.client == m.client && n.name == m.name)
                    .count(),
                1,
                "{m:?}"
            );
        }
    }

    #[test]
    fn every_mapped_guard_tool_is_known() {
        for m in TOOL_MAP {
            assert!(GUARD_TOOLS.contains(&m.guard), "{m:?}");
        }
    }

    fn one(client: Client, name: &str, input: Value) -> Result<Call, String> {
        let mut calls = translate(client, name, &input, Path::new("/p"))?;
        assert_eq!(calls.len(), 1, "{name}: {calls:?}");
        Ok(calls.remove(0))
    }

    #[test]
    fn legacy_gemini_argument_names_are_read() {
        use serde_json::json;
        let cases = [
            ("read_file", json!({"absolute_path": "/x"}), "file_path"),
            ("glob", json!({"pattern": "*", "path": "/x"}), "path"),
            (
                "search_file_content",
                json!({"pattern": "a", "path": "/x"}),
                "path",
            ),
            ("grep_search", json!({"pattern": "a", "path": "/x"}), "path"),
            ("list_directory", json!({"path": "/x"}), "path"),
            (
                "run_shell_command",
                json!({"command": "ls", "directory": "/x"}),
                "working_dir",
            ),
        ];
        for (name, input, key) in cases {
            let call = one(Client::Gemini, name, input).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(call.args[key], "/x", "{name}");
        }
        let call = one(
            Client::Gemini,
            "search_file_content",
            json!({"pattern": "a", "include": "*.rs"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.args["glob"], "*.rs");
        // Two spellings that disagree: the guard cannot tell which one the tool reads.
        assert!(
            translate(
                Client::Gemini,
                "glob",
                &json!({"pattern": "*", "path": "/a", "dir_path": "/b"}),
                Path::new("/p")
            )
            .is_err()
        );
        // read_many_files: the legacy `paths` and `include` are both patterns.
        let calls = translate(
            Client::Gemini,
            "read_many_files",
            &json!({"paths": ["a"], "include": ["b"]}),
            Path::new("/p"),
        )
        .unwrap_or_default();
        let patterns: Vec<&Value> = calls.iter().map(|c| &c.args["pattern"]).collect();
        assert_eq!(patterns, [&json!("b"), &json!("a")]);
        let call = one(Client::Gemini, "save_memory", json!({"fact": "f"}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.tool, "save_memory");
    }

    #[test]
    fn codex_shell_tools_under_every_name_are_bash() {
        use serde_json::json;
        let cases = [
            ("Bash", json!({"command": ["bash", "-lc", "ls -a"]})),
            (
                "shell",
                json!({"command": ["bash", "-lc", "ls -a"], "workdir": "/w"}),
            ),
            (
                "shell_command",
                json!({"command": "bash -lc 'ls -a'", "workdir": "/w"}),
            ),
            (
                "exec_command",
                json!({"cmd": "bash -lc 'ls -a'", "workdir": "/w"}),
            ),
            ("local_shell", json!({"command": ["bash", "-lc", "ls -a"]})),
            ("unified_exec", json!({"input": ["bash", "-lc", "ls -a"]})),
            ("container.exec", json!({"cmd": ["bash", "-lc", "ls -a"]})),
        ];
        for (name, input) in cases {
            let has_workdir = input.get("workdir").is_some();
            let call = one(Client::Codex, name, input).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(call.tool, "run_bash", "{name}");
            assert_eq!(call.args["command"], "bash -lc 'ls -a'", "{name}");
            if has_workdir {
                assert_eq!(call.args["working_dir"], "/w", "{name}");
            }
        }
        let escalated = [
            json!({"cmd": "ls", "with_escalated_permissions": true}),
            json!({"cmd": "ls", "sandbox_permissions": "require_escalated"}),
        ];
        for input in escalated {
            let call = one(Client::Codex, "exec_command", input).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(call.client.len(), 1, "{call:?}");
            assert_eq!(call.client[0].code, "sandbox-escalated");
        }
        let call = one(
            Client::Codex,
            "exec_command",
            json!({"cmd": "ls", "sandbox_permissions": "use_default"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(call.client.is_empty());
        for bad in [
            json!({"command": "ls", "cmd": "rm -rf ~"}),
            json!({"command": ["ls", 1]}),
            json!({"workdir": "/w"}),
        ] {
            assert!(
                translate(Client::Codex, "shell", &bad, Path::new("/p")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn apply_patch_in_its_argv_form_is_read() {
        use serde_json::json;
        let call = one(
            Client::Codex,
            "apply_patch",
            json!({"command": ["apply_patch", "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"]}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.args["file_path"], "a");
        assert!(
            translate(
                Client::Codex,
                "apply_patch",
                &json!({"command": ["apply_patch", 5]}),
                Path::new("/p")
            )
            .is_err()
        );
    }

    #[test]
    fn apply_patch_through_codex_shell_is_the_same_patch() {
        use serde_json::json;
        let patch = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch";
        for (name, input) in [
            (
                "Bash",
                json!({"command": format!("apply_patch <<'EOF'\n{patch}\nEOF\n")}),
            ),
            ("shell", json!({"command": ["apply_patch", patch]})),
            (
                "exec_command",
                json!({"cmd": format!("applypatch <<'EOF'\n{patch}\nEOF")}),
            ),
        ] {
            let call = one(Client::Codex, name, input).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                (call.tool.as_str(), &call.args["file_path"]),
                ("file_write", &json!("a")),
                "{name}"
            );
        }
        // Anything around the heredoc makes it a shell command line, refused as a patch.
        assert!(
            translate(
                Client::Codex,
                "Bash",
                &json!({"command": format!("apply_patch <<'EOF'\n{patch}\nEOF\nrm -rf ~")}),
                Path::new("/p")
            )
            .is_err()
        );
        // Other commands stay commands.
        let call = one(Client::Codex, "Bash", json!({"command": "apply_patches"}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.tool, "run_bash");
    }

    #[test]
    fn a_flag_of_the_wrong_type_is_raised_unless_it_reads_as_false() {
        use serde_json::json;
        for raised in [
            json!(true),
            json!("true"),
            json!("yes"),
            json!(1),
            json!({}),
        ] {
            let call = one(
                Client::ClaudeCode,
                "Bash",
                json!({"command": "ls", "run_in_background": raised}),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(call.client.len(), 1, "{raised}");
        }
        for quiet in [
            json!(false),
            json!(null),
            json!("false"),
            json!(0),
            json!(""),
        ] {
            let call = one(
                Client::ClaudeCode,
                "Bash",
                json!({"command": "ls", "run_in_background": quiet}),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            assert!(call.client.is_empty(), "{quiet}");
        }
    }

    #[test]
    fn a_url_argument_beside_the_web_fetch_prompt_is_judged_too() {
        use serde_json::json;
        let calls = translate(
            Client::Gemini,
            "web_fetch",
            &json!({"prompt": "read https://docs.rs/", "url": "http://127.0.0.1/"}),
            Path::new("/p"),
        )
        .unwrap_or_default();
        let urls: Vec<&Value> = calls.iter().map(|c| &c.args["url"]).collect();
        assert_eq!(
            urls,
            [&json!("https://docs.rs/"), &json!("http://127.0.0.1/")]
        );
    }

    #[test]
    fn read_many_files_patterns_that_select_secrets_are_asked_about() {
        use serde_json::json;
        for (pattern, asked) in [(".en?", true), ("**/*", true), ("src/**/*.rs", false)] {
            let call = one(
                Client::Gemini,
                "read_many_files",
                json!({"include": [pattern]}),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                call.client
                    .iter()
                    .any(|f| f.code == "reads-selected-secrets"),
                asked,
                "{pattern}"
            );
        }
    }

    #[test]
    fn a_call_that_fans_out_into_too_many_judgements_is_refused() {
        use serde_json::json;
        let many: Vec<String> = (0..=MAX_CALLS).map(|i| format!("f{i}")).collect();
        assert!(
            translate(
                Client::Gemini,
                "read_many_files",
                &json!({ "include": many }),
                Path::new("/p")
            )
            .is_err()
        );
        let patch = format!(
            "*** Begin Patch\n{}*** End Patch",
            many.iter()
                .map(|f| format!("*** Add File: {f}\n+x\n"))
                .collect::<String>()
        );
        for (name, input) in [
            ("apply_patch", json!({ "command": patch })),
            ("Bash", json!({ "command": ["apply_patch", patch] })),
        ] {
            assert!(
                translate(Client::Codex, name, &input, Path::new("/p")).is_err(),
                "{name}"
            );
        }
        let few: Vec<String> = (0..MAX_CALLS).map(|i| format!("f{i}")).collect();
        assert!(
            translate(
                Client::Gemini,
                "read_many_files",
                &json!({ "include": few }),
                Path::new("/p")
            )
            .is_ok()
        );
    }

    #[test]
    fn a_gemini_search_of_ignored_files_is_asked_about() {
        use serde_json::json;
        for name in ["grep_search", "search_file_content"] {
            let call = one(
                Client::Gemini,
                name,
                json!({"pattern": "K", "no_ignore": true}),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(call.client.len(), 1, "{name}");
            assert_eq!(call.client[0].code, "searches-ignored-files");
            let call = one(Client::Gemini, name, json!({"pattern": "K"}))
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(call.client.is_empty(), "{name}");
        }
    }

    #[test]
    fn a_monitor_websocket_is_web_access_to_its_url() {
        use serde_json::json;
        let call = one(
            Client::ClaudeCode,
            "Monitor",
            json!({"ws": {"url": "ws://127.0.0.1:9222/devtools"}, "description": "d"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.tool, "web_fetch");
        assert_eq!(call.args["url"], "ws://127.0.0.1:9222/devtools");
        assert!(
            translate(
                Client::ClaudeCode,
                "Monitor",
                &json!({"ws": {"protocols": []}}),
                Path::new("/p")
            )
            .is_err()
        );
        let call = one(
            Client::ClaudeCode,
            "Monitor",
            json!({"command": "tail -f log"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.tool, "run_bash");
    }

    #[test]
    fn read_many_files_with_ignores_switched_off_is_asked_about() {
        use serde_json::json;
        for input in [
            json!({"include": ["src/*.rs"], "useDefaultExcludes": false}),
            json!({"include": ["src/*.rs"], "respect_git_ignore": "no"}),
        ] {
            let call = one(Client::Gemini, "read_many_files", input.clone())
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                call.client.iter().any(|f| f.code == "reads-ignored-files"),
                "{input}"
            );
        }
        let call = one(
            Client::Gemini,
            "read_many_files",
            json!({"include": ["src/*.rs"], "useDefaultExcludes": true}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(call.client.is_empty());
    }

    #[test]
    fn claude_legacy_tools_are_mapped() {
        use serde_json::json;
        let call =
            one(Client::ClaudeCode, "LS", json!({"path": "/x"})).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (call.tool.as_str(), &call.args["path"]),
            ("glob_files", &json!("/x"))
        );
        assert!(translate(Client::ClaudeCode, "LS", &json!({}), Path::new("/p")).is_err());
        for (name, guard) in [("BashOutput", "task_output"), ("KillShell", "task_stop")] {
            let call = one(Client::ClaudeCode, name, json!({"shell_id": "1"}))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(call.tool, guard);
        }
    }

    #[test]
    fn shell_words_are_quoted() {
        assert_eq!(shell_quote("ls"), "ls");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
