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

/// One input field copied into the guard's arguments.
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
    /// Every pattern of an `include` list is a `glob_files` (Gemini's `read_many_files`).
    Includes(&'static str),
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
const READ: &[Field] = &[f("file_path", "file_path", true)];
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
const GEMINI_GREP: &[Field] = &[
    f("pattern", "pattern", true),
    f("dir_path", "path", false),
    f("include_pattern", "glob", false),
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
    // Codex (HookToolName).
    row(CX, "Bash", "run_bash", Shape::Fields(BASH), &[], false),
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
    row(GM, "read_file", "read_file", Shape::Fields(READ), &[], true),
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
        Shape::Fields(&[f("pattern", "pattern", true), f("dir_path", "path", false)]),
        &[],
        true,
    ),
    row(
        GM,
        "grep_search",
        "grep_files",
        Shape::Fields(GEMINI_GREP),
        &[],
        true,
    ),
    row(
        GM,
        "search_file_content",
        "grep_files",
        Shape::Fields(GEMINI_GREP),
        &[],
        true,
    ),
    row(
        GM,
        "list_directory",
        "glob_files",
        Shape::Fields(&[f("dir_path", "path", true)]),
        &[],
        true,
    ),
    row(
        GM,
        "read_many_files",
        "glob_files",
        Shape::Includes("include"),
        &[],
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
        let url = format!("https://{}/", domain.trim());
        return Ok(vec![base(
            "web_fetch",
            serde_json::json!({ "url": url }),
            cwd,
            true,
        )]);
    }
    let findings = flags(map, obj);
    let mut calls = match map.shape {
        Shape::Whole => vec![base(map.guard, input.clone(), cwd, map.read_only)],
        Shape::Fields(fields) => {
            let mut args = Map::new();
            for field in fields {
                match obj.get(field.from) {
                    Some(Value::String(s)) if !s.is_empty() => {
                        args.insert(field.to.to_owned(), Value::String(s.clone()));
                    }
                    Some(Value::Null) | None if !field.required => {}
                    Some(Value::String(_)) if !field.required => {}
                    Some(other) if !field.required && !other.is_string() => {
                        return Err(format!(
                            "`{name}` input field `{}` must be a string",
                            field.from
                        ));
                    }
                    _ => {
                        return Err(format!(
                            "`{name}` input has no non-empty string `{}`",
                            field.from
                        ));
                    }
                }
            }
            if map.guard == "run_bash" && client == Client::Codex {
                shell_join_array(obj, &mut args)?;
            }
            vec![base(map.guard, Value::Object(args), cwd, map.read_only)]
        }
        Shape::ApplyPatch => apply_patch_calls(obj, cwd)?,
        Shape::UrlsInText(key) => {
            let text = obj.get(key).and_then(Value::as_str).unwrap_or_default();
            let urls = crate::network::urls_in(text);
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
        Shape::Includes(key) => {
            let patterns: Vec<String> = match obj.get(key) {
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| format!("`{name}` `{key}` must be a list of strings"))?,
                Some(Value::String(s)) => vec![s.clone()],
                _ => return Err(format!("`{name}` input has no `{key}` list")),
            };
            if patterns.is_empty() {
                return Err(format!("`{name}` `{key}` is empty"));
            }
            patterns
                .into_iter()
                .map(|p| {
                    base(
                        map.guard,
                        serde_json::json!({ "pattern": p }),
                        cwd,
                        map.read_only,
                    )
                })
                .collect()
        }
    };
    for call in &mut calls {
        call.client.extend(findings.iter().cloned());
    }
    Ok(calls)
}

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
            When::True => obj.get(flag.field) == Some(&Value::Bool(true)),
            When::Present => match obj.get(flag.field) {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(Value::Array(a)) => !a.is_empty(),
                Some(Value::Object(o)) => !o.is_empty(),
                Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                Some(Value::Bool(true)) => true,
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

/// Codex may send a shell command as an argv array; it is judged as the shell would run it.
fn shell_join_array(obj: &Map<String, Value>, args: &mut Map<String, Value>) -> Result<(), String> {
    if let Some(Value::Array(items)) = obj.get("command") {
        let words: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
        let words = words.ok_or("`Bash` command array must hold strings")?;
        let joined: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        args.insert("command".to_owned(), Value::String(joined.join(" ")));
    }
    Ok(())
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
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return Err("`apply_patch` input has no patch text in `command`".to_owned()),
    };
    let patch =
        crate::apply_patch::parse(&text).map_err(|e| format!("the patch cannot be read: {e}"))?;
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

    #[test]
    fn shell_words_are_quoted() {
        assert_eq!(shell_quote("ls"), "ls");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
