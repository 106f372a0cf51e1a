#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard claude-hook` behaviour, through the binary, with the hook JSON shapes of
//! Claude Code's documentation (tests/data/claude/*.json; their `cwd` is replaced by a temp
//! project directory so the sandbox has a real root).

use assert_cmd::Command;
use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
const FIXTURE_CWD: &str = "/home/user/project";

struct Session {
    dir: tempfile::TempDir,
}

impl Session {
    fn new() -> Session {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project/src")).unwrap();
        Session { dir }
    }

    fn project(&self) -> String {
        self.dir.path().join("project").display().to_string()
    }

    /// A PreToolUse event for `tool` with `input` in the temp project.
    fn pre_tool_use(&self, tool: &str, input: Value) -> String {
        serde_json::json!({
            "session_id": "s-pre", "transcript_path": "/dev/null", "cwd": self.project(),
            "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input, "tool_use_id": "t1"
        })
        .to_string()
    }

    /// The hook's answer to `tool`/`input` under the test policy plus the `env` variables.
    fn answer_with(&self, env: &[(&str, &str)], tool: &str, input: Value) -> Value {
        let mut cmd = hook();
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(["--policy", &policy()]);
        answer_of(cmd, self.pre_tool_use(tool, input))
    }

    /// The fixture with its cwd (and every path under it) moved into the temp project.
    fn fixture(&self, name: &str) -> String {
        let text = std::fs::read_to_string(format!("{DATA}/claude/{name}.json")).unwrap();
        text.replace(FIXTURE_CWD, &self.project())
    }
}

fn hook() -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.arg("claude-hook");
    for var in [
        "AGENT_PERMISSIONS_DENY",
        "AGENT_PERMISSIONS_ASK",
        "AGENT_PERMISSIONS_ALLOW",
        "AGENT_PERMISSIONS_MODE",
        "AGENT_GUARD_POLICY",
        "AGENT_BLOCK_NETWORK",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn policy() -> String {
    format!("{DATA}/hook-policy.toml")
}

/// Runs the hook on `stdin`; it must exit 0 and print one JSON object.
fn answer(args: &[&str], stdin: String) -> Value {
    let mut cmd = hook();
    cmd.args(args);
    answer_of(cmd, stdin)
}

/// Runs `cmd` (a hook) on `stdin`; it must exit 0 and print one JSON object.
fn answer_of(mut cmd: Command, stdin: String) -> Value {
    let out = cmd
        .write_stdin(stdin)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 1, "one line of JSON: {text}");
    serde_json::from_str(&text).unwrap()
}

fn pre_decision(v: &Value) -> (&str, &str) {
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse", "{v}");
    (
        out["permissionDecision"].as_str().unwrap(),
        out["permissionDecisionReason"].as_str().unwrap(),
    )
}

#[test]
fn pre_tool_use_decisions_for_documented_shapes() {
    let s = Session::new();
    let cases = [
        ("pre_bash_rm", "deny", "run_bash(rm:*)"),
        ("pre_bash_git_diff", "allow", "run_bash(git diff:*)"),
        ("pre_bash_pipe_sh", "deny", "[bash-guard]"),
        ("pre_read_src", "allow", "rule `read_file`"),
        ("pre_read_env", "deny", "read_file(**/.env)"),
        ("pre_read_ssh_key", "deny", "sensitive_path"),
        ("pre_read_outside", "ask", "[fs-sandbox] outside_roots"),
        ("pre_write_src", "allow", "file_write(./src/**)"),
        ("pre_write_etc", "deny", "file_write(/etc/**)"),
        ("pre_write_git_hook", "deny", "[fs-sandbox] protected_path"),
        ("pre_edit_src", "allow", "file_edit(./src/**)"),
        ("pre_multiedit_docs", "allow", "file_edit(./docs/**)"),
        ("pre_glob", "allow", "rule `glob_files`"),
        ("pre_glob_escape", "ask", "[fs-sandbox] outside_roots"),
        ("pre_grep", "allow", "rule `grep_files`"),
        ("pre_webfetch_docs", "allow", "web_fetch(domain:docs.rs)"),
        (
            "pre_webfetch_evil",
            "deny",
            "web_fetch(domain:evil.example.com)",
        ),
        ("pre_task", "allow", "rule `subagent`"),
        ("pre_mcp", "ask", "mcp__*"),
        ("pre_websearch", "ask", "default"),
        ("pre_bash_no_command", "deny", "bad-tool-input"),
    ];
    for (name, want, why) in cases {
        let v = answer(&["--policy", &policy()], s.fixture(name));
        let (decision, reason) = pre_decision(&v);
        assert_eq!(decision, want, "{name}: {v}");
        assert!(reason.starts_with("agent-guard: "), "{name}: {reason}");
        assert!(reason.contains(why), "{name}: `{why}` not in {reason}");
    }
}

#[test]
fn default_allow_defers_to_claude_codes_own_prompt() {
    let s = Session::new();
    // No rule matches, so `default = "allow"` must not auto-approve the call.
    let allow = format!("{DATA}/default-allow.toml");
    let v = answer(&["--policy", &allow], s.fixture("pre_read_src"));
    assert_eq!(v, serde_json::json!({}));
    // The built-in layers still refuse what is never fine.
    let v = answer(&["--policy", &allow], s.fixture("pre_read_ssh_key"));
    assert_eq!(pre_decision(&v).0, "deny");
}

/// A variable that is not UTF-8 is no reason to refuse a call (a panic reading the environment
/// ended every hook in a deny); one of the guard's own that is not UTF-8 is, with a reason.
#[test]
fn a_variable_that_is_not_utf8_is_ignored_unless_it_is_the_guards() {
    use std::os::unix::ffi::OsStrExt as _;
    let s = Session::new();
    let bad = std::ffi::OsStr::from_bytes(b"\xff\xfe");
    let mut cmd = hook();
    cmd.env("LC_BADBYTES", bad).args(["--policy", &policy()]);
    let v = answer_of(cmd, s.fixture("pre_read_src"));
    assert_eq!(pre_decision(&v).0, "allow", "{v}");
    let out = hook()
        .env("AGENT_PERMISSIONS_DENY", bad)
        .args(["--policy", &policy()])
        .write_stdin(s.fixture("pre_read_src"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("AGENT_PERMISSIONS_DENY") && text.contains("not UTF-8"),
        "{text}"
    );
    assert!(!text.contains("\"allow\""), "{text}");
}

#[test]
fn policy_from_environment_variable() {
    let s = Session::new();
    let v = answer_with_env(s.fixture("pre_bash_rm"));
    assert_eq!(pre_decision(&v).0, "deny");
}

fn answer_with_env(stdin: String) -> Value {
    let mut cmd = hook();
    cmd.env("AGENT_GUARD_POLICY", policy());
    answer_of(cmd, stdin)
}

#[test]
fn post_tool_use_redacts_secrets() {
    let s = Session::new();
    let v = answer(&["--policy", &policy()], s.fixture("post_bash_secret"));
    // A block would still hand the raw output to the model: the output is replaced instead.
    assert!(v.get("decision").is_none(), "{v}");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("secrets"), "{context}");
    let updated = v["hookSpecificOutput"]["updatedToolOutput"].to_string();
    assert!(updated.contains("REGION=eu-west-1"), "{v}");
    assert!(updated.contains("[REDACTED:"), "{v}");
    assert!(
        !v.to_string().contains("ghp_0123456789"),
        "the token leaked: {v}"
    );
    assert!(
        v["hookSpecificOutput"]
            .get("updatedMCPToolOutput")
            .is_none()
    );

    let v = answer(&["--policy", &policy()], s.fixture("post_write_clean"));
    assert_eq!(v, serde_json::json!({}));

    // `[hooks] redact_secrets = false` turns it off.
    let v = answer(
        &["--policy", &format!("{DATA}/no-redaction.toml")],
        s.fixture("post_bash_secret"),
    );
    assert_eq!(v, serde_json::json!({}));
}

#[test]
fn post_tool_use_replaces_mcp_output() {
    let s = Session::new();
    let v = answer(&[], s.fixture("post_mcp_secret"));
    let updated = &v["hookSpecificOutput"]["updatedMCPToolOutput"];
    assert!(updated.is_array(), "{v}");
    assert!(
        updated[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("AWS_SECRET_ACCESS_KEY="),
        "{v}"
    );
    assert!(
        !v.to_string().contains("wJalrXUtnFEMI"),
        "the key leaked: {v}"
    );
}

/// Bad input blocks the call: exit 2 (a block in Claude Code) with one line on stderr.
fn blocked(args: &[&str], stdin: &str, needle: &str) {
    let out = hook()
        .args(args)
        .write_stdin(stdin.to_owned())
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("agent-guard: "), "{err}");
    assert!(err.contains(needle), "`{needle}` not in {err}");
    assert!(!err.contains("panicked"), "{err}");
    // The JSON answer denies too, so the block holds even where the exit status is not read.
    let v: Value = serde_json::from_slice(&out.stdout).expect("a JSON deny on stdout");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
}

#[test]
fn malformed_hook_json_blocks() {
    blocked(&[], "not json", "malformed hook JSON");
    blocked(&[], "", "malformed hook JSON");
    blocked(&[], "[1,2]", "expected an object");
    blocked(
        &[],
        r#"{"hook_event_name":"PreToolUse","cwd":"/tmp","tool_input":{}}"#,
        "`tool_name` is missing",
    );
    blocked(
        &[],
        r#"{"hook_event_name":"PreToolUse","cwd":"/tmp","tool_name":"Bash","tool_input":"ls"}"#,
        "`tool_input` must be an object",
    );
    blocked(
        &[],
        r#"{"hook_event_name":"PreToolUse","cwd":"rel","tool_name":"Bash","tool_input":{}}"#,
        "absolute",
    );
    blocked(
        &[],
        r#"{"hook_event_name":"PostToolUse","cwd":"/tmp","tool_name":"Bash","tool_input":{"command":"ls"}}"#,
        "`tool_response` is missing",
    );
}

#[test]
fn other_events_pass_and_a_bad_policy_blocks() {
    let s = Session::new();
    // Every event that does not judge a call, known or future, is exit 0 with no decision,
    // even under a broken policy: the hook installed for every event must not block prompts.
    for event in [
        "UserPromptSubmit",
        "SessionStart",
        "Notification",
        "SomeFutureEvent",
    ] {
        let stdin = format!(
            r#"{{"session_id":"abc123","cwd":"{}","hook_event_name":"{event}","prompt":"hi"}}"#,
            s.project()
        );
        let out = hook()
            .args(["--policy", &format!("{DATA}/bad-key.toml")])
            .write_stdin(stdin)
            .assert()
            .code(0)
            .get_output()
            .clone();
        assert!(out.stdout.is_empty(), "{event}: {:?}", out.stdout);
    }
    blocked(
        &["--policy", &format!("{DATA}/bad-rule.toml")],
        &s.fixture("pre_read_src"),
        "run_bash(rm:*",
    );
    blocked(
        &["--policy", &format!("{DATA}/bad-key.toml")],
        &s.fixture("pre_read_src"),
        "denny",
    );
    blocked(
        &["--policy", "/nonexistent/policy.toml"],
        &s.fixture("pre_read_src"),
        "cannot read policy file",
    );
}

#[test]
fn help_documents_exit_codes() {
    let out = hook()
        .arg("--help")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("Exit status:") && text.contains("BLOCKED"),
        "{text}"
    );
    assert!(text.contains("settings.json"), "{text}");
}

/// An MCP tool has no contract in the guard, so what its input names is judged: a string that
/// is a URL by where it goes, a string that is a path by whether it is a secret. URLs inside
/// prose and ordinary paths are not refusals (the server has its own scope).
#[test]
fn mcp_tool_inputs_are_judged_by_what_they_name() {
    let s = Session::new();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
    for (tool, input, code) in [
        (
            "mcp__fetch__fetch",
            serde_json::json!({"url": "http://169.254.169.254/latest/"}),
            "internal_address",
        ),
        (
            "mcp__fetch__fetch",
            serde_json::json!({"req": {"urls": ["https://example.com/", "http://0x7f.1/"]}}),
            "internal_address",
        ),
        (
            "mcp__browser__open",
            serde_json::json!({"url": "file:///etc/passwd"}),
            "url_scheme",
        ),
        (
            "mcp__fs__read_file",
            serde_json::json!({"path": "/etc/shadow"}),
            "sensitive_path",
        ),
        (
            "mcp__fs__read_file",
            serde_json::json!({"path": format!("{home}/.ssh/id_ed25519")}),
            "sensitive_path",
        ),
    ] {
        let v = s.answer_with(&[], tool, input.clone());
        let (decision, reason) = pre_decision(&v);
        assert_eq!(decision, "deny", "{tool} {input}: {reason}");
        assert!(reason.contains(code), "{tool} {input}: {reason}");
    }
    for (tool, input) in [
        (
            "mcp__slack__post",
            serde_json::json!({"text": "deployed to http://localhost:3000"}),
        ),
        (
            "mcp__fetch__fetch",
            serde_json::json!({"url": "https://example.com/docs"}),
        ),
        (
            "mcp__fs__read_file",
            serde_json::json!({"path": "/etc/hosts"}),
        ),
    ] {
        let v = s.answer_with(&[], tool, input.clone());
        let decision = v["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .unwrap_or("none");
        assert_ne!(decision, "deny", "{tool} {input}: {v}");
    }
}

/// PowerShell, REPL and Workflow code is not parsed, so an explicit allow rule lets it run;
/// a catastrophe in it is still denied, whatever the rules say.
#[test]
fn unparsed_code_holding_a_catastrophe_is_denied_even_when_allowed() {
    let s = Session::new();
    let allow = [("AGENT_PERMISSIONS_ALLOW", "powershell,repl,workflow")];
    let run = |tool: &str, input: Value| s.answer_with(&allow, tool, input);
    for (tool, input) in [
        (
            "PowerShell",
            serde_json::json!({"command": "Remove-Item -Recurse -Force C:\\"}),
        ),
        (
            "PowerShell",
            serde_json::json!({"command": "ri -r $env:USERPROFILE"}),
        ),
        (
            "PowerShell",
            serde_json::json!({"command": "Get-Disk | Clear-Disk -RemoveData"}),
        ),
        (
            "REPL",
            serde_json::json!({"code": "require('child_process').execSync('rm -rf ~')"}),
        ),
        (
            "REPL",
            serde_json::json!({"code": "while(1) require('child_process').fork(__filename)"}),
        ),
    ] {
        let v = run(tool, input.clone());
        let (decision, reason) = pre_decision(&v);
        assert_eq!(decision, "deny", "{tool} {input}: {reason}");
        assert!(reason.contains("catastrophic_text"), "{reason}");
    }
    let v = run(
        "PowerShell",
        serde_json::json!({"command": "Get-ChildItem ."}),
    );
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "allow",
        "{v}"
    );
}

/// Path rules see through symlinks: a deny rule naming the target denies a write through a
/// link to it, and an allow rule naming only the link's location does not allow the target.
#[test]
fn path_rules_are_matched_against_every_name_of_the_path() {
    let s = Session::new();
    let project = std::path::PathBuf::from(s.project());
    std::fs::create_dir_all(project.join("other")).unwrap();
    std::fs::create_dir_all(project.join("vault")).unwrap();
    std::os::unix::fs::symlink("../other", project.join("src/link")).unwrap();
    std::os::unix::fs::symlink("vault", project.join("innocent")).unwrap();
    let deny = [("AGENT_PERMISSIONS_DENY", "file_write(./vault/**)")];
    let run = |path: &str| {
        let input =
            serde_json::json!({"file_path": format!("{}/{path}", s.project()), "content": "x"});
        s.answer_with(&deny, "Write", input)
    };
    // The allow rule `file_write(./src/**)` covers src/a.rs itself.
    assert_eq!(pre_decision(&run("src/a.rs")).0, "allow");
    let through_link = run("innocent/keys.txt");
    let (decision, reason) = pre_decision(&through_link);
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("file_write(./vault/**)"), "{reason}");
    // src/link/x.rs is other/x.rs: no allow rule names it, so the default (ask) decides.
    let out_of_src = run("src/link/x.rs");
    let (decision, reason) = pre_decision(&out_of_src);
    assert_eq!(decision, "ask", "{reason}");
}

/// A search reads every file below its directory: one over `/`, `/etc` or `/proc` reaches
/// credential stores and is denied, a project search is not. A `~` in a glob pattern is judged
/// as the home directory.
#[test]
fn searches_over_credential_stores_and_tilde_patterns_are_denied() {
    let s = Session::new();
    for (tool, input, code) in [
        (
            "Grep",
            serde_json::json!({"pattern": "AKIA", "path": "/"}),
            "sensitive_below",
        ),
        (
            "Grep",
            serde_json::json!({"pattern": "root:", "path": "/etc"}),
            "sensitive_below",
        ),
        (
            "Grep",
            serde_json::json!({"pattern": "KEY", "path": "/proc"}),
            "sensitive_below",
        ),
        (
            "Glob",
            serde_json::json!({"pattern": "~/.ssh/*"}),
            "sensitive_path",
        ),
        (
            "Glob",
            serde_json::json!({"pattern": "~/.aws/**"}),
            "sensitive_path",
        ),
    ] {
        let v = s.answer_with(&[], tool, input.clone());
        let (decision, reason) = pre_decision(&v);
        assert_eq!(decision, "deny", "{tool} {input}: {reason}");
        assert!(reason.contains(code), "{tool} {input}: {reason}");
    }
    let v = s.answer_with(
        &[],
        "Grep",
        serde_json::json!({"pattern": "fn main", "path": s.project()}),
    );
    assert_eq!(pre_decision(&v).0, "allow", "{v}");
}

/// Tools the guard has no contract for are judged by what their input carries: a catastrophic
/// command anywhere in it, and, when the name says the tool writes, a path outside the project
/// (a shell profile, an autostart entry: code that runs later).
#[test]
fn unknown_and_mcp_tools_are_judged_by_their_input() {
    let work = tempfile::tempdir().unwrap();
    let allow = format!("{DATA}/default-allow.toml");
    let home = std::env::var("HOME").unwrap();
    let event = |tool: &str, input: serde_json::Value| {
        serde_json::json!({"session_id": "s", "cwd": work.path(), "hook_event_name": "PreToolUse",
                           "tool_name": tool, "tool_input": input})
        .to_string()
    };
    let cases = [
        ("FooTool", serde_json::json!({"cmd": "rm -rf ~"}), "deny"),
        (
            "mcp__fs__write",
            serde_json::json!({"target": "~/.bashrc", "text": "x"}),
            "ask",
        ),
        (
            "mcp__fs__move_file",
            serde_json::json!({"from": "a", "to": format!("{home}/.config/autostart/a.desktop")}),
            "ask",
        ),
    ];
    for (tool, input, want) in cases {
        let v = answer(&["--policy", &allow], event(tool, input));
        assert_eq!(pre_decision(&v).0, want, "{tool}: {v}");
    }
    // Reading outside the project, or writing inside it, is not asked for that.
    let v = answer(
        &["--policy", &allow],
        event(
            "mcp__fs__read_file",
            serde_json::json!({"path": "/usr/share/doc"}),
        ),
    );
    assert_eq!(v, serde_json::json!({}));
}
