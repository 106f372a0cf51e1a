//! One verdict whichever door a call comes through: the runtime (`run`), the Claude Code hook,
//! `test` and `explain check` give the same decision and, for a refusal, the same reason code,
//! for calls over symlinks, `..`, `~`, sensitive names and missing components, in the default
//! mode and in `dontAsk`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};

/// (Claude Code tool, its input, the guard tool, its arguments). `{P}` is the project dir.
fn calls() -> Vec<(&'static str, Value, &'static str, Value)> {
    let read = |p: &str| {
        (
            "Read",
            json!({ "file_path": p }),
            "read_file",
            json!({ "file_path": p }),
        )
    };
    let write = |p: &str| {
        (
            "Write",
            json!({ "file_path": p, "content": "x" }),
            "file_write",
            json!({ "file_path": p, "content": "x" }),
        )
    };
    let bash = |c: &str| {
        (
            "Bash",
            json!({ "command": c }),
            "run_bash",
            json!({ "command": c }),
        )
    };
    vec![
        read("{P}/src/main.rs"),
        read("src/main.rs"),
        read("{P}/.env"),
        read("{P}/.env.example"),
        read("{P}/secret_link"),
        read("{P}/etc_link/shadow"),
        read("{P}/etc_link/../etc/hostname"),
        read("/etc/shadow"),
        read("~/.ssh/id_rsa"),
        read("{P}/missing/../src/main.rs"),
        // Judged by content: a key under an ordinary name, its public half, a registry login.
        read("{P}/deploy/prod-access"),
        read("{P}/deploy/prod-access.pub"),
        read("{P}/deploy/registry.json"),
        read("{P}/../outside.txt"),
        write("{P}/notes/new.md"),
        write("{P}/.git/config"),
        write("{P}/git_link/config"),
        write("/tmp/agent-guard-one-verdict-outside.txt"),
        write("{P}/missing/../x.txt"),
        (
            "Edit",
            json!({ "file_path": "{P}/.mcp.json", "old_string": "a", "new_string": "b" }),
            "file_edit",
            json!({ "file_path": "{P}/.mcp.json", "old_string": "a", "new_string": "b" }),
        ),
        (
            "Glob",
            json!({ "pattern": "**/.env" }),
            "glob_files",
            json!({ "pattern": "**/.env" }),
        ),
        (
            "Grep",
            json!({ "pattern": "key", "path": "~/.ssh" }),
            "grep_files",
            json!({ "pattern": "key", "path": "~/.ssh" }),
        ),
        (
            "WebFetch",
            json!({ "url": "http://169.254.169.254/latest/meta-data/", "prompt": "x" }),
            "web_fetch",
            json!({ "url": "http://169.254.169.254/latest/meta-data/" }),
        ),
        bash("ls src"),
        bash("cat .env"),
        bash("cargo build"),
        bash("git status && rm -rf ~"),
    ]
}

fn fill(v: &Value, project: &Path) -> Value {
    serde_json::from_str(&v.to_string().replace("{P}", project.to_str().unwrap())).unwrap()
}

fn project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("project");
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::create_dir_all(p.join("notes")).unwrap();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(p.join(".env"), "TOKEN=1\n").unwrap();
    std::fs::write(p.join(".env.example"), "TOKEN=\n").unwrap();
    std::fs::write(p.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(p.join(".mcp.json"), "{}\n").unwrap();
    std::fs::create_dir_all(p.join("deploy")).unwrap();
    std::fs::write(
        p.join("deploy/prod-access"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n",
    )
    .unwrap();
    std::fs::write(
        p.join("deploy/prod-access.pub"),
        "ssh-ed25519 AAAAC3Nza u@h\n",
    )
    .unwrap();
    std::fs::write(
        p.join("deploy/registry.json"),
        "{\"auths\":{\"ghcr.io\":{\"auth\":\"Ym90OnM0TXBsZVBhc3N3b3JkMTIz\"}}}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(p.join(".env"), p.join("secret_link")).unwrap();
    std::os::unix::fs::symlink("/etc", p.join("etc_link")).unwrap();
    std::os::unix::fs::symlink(p.join(".git"), p.join("git_link")).unwrap();
    tmp
}

const POLICY: &str = r#"
[permissions]
mode = "MODE"
default = "ask"
allow = ["read_file", "grep_files", "glob_files", "web_fetch", "run_bash(ls:*)", "run_bash(cat:*)", "file_write(./notes/**)"]
deny = ["run_bash(rm:*)"]
[hooks]
audit = false
"#;

/// (decision, code when refused) as one door reports it.
type Seen = (String, Option<String>);

fn code_in_reason(reason: &str) -> Option<String> {
    // `agent-guard: [layer] code: message`
    let rest = reason.split("] ").nth(1)?;
    Some(rest.split(':').next()?.to_owned())
}

fn hook_door(policy: &Path, project: &Path, tool: &str, input: &Value) -> Seen {
    let event = json!({
        "session_id": "s", "transcript_path": "/dev/null", "cwd": project,
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": "t1",
    });
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["claude-hook", "--policy"])
        .arg(policy)
        .env_remove("CLAUDE_PROJECT_DIR")
        .write_stdin(event.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{tool} {input}: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let specific = &v["hookSpecificOutput"];
    if specific.is_null() {
        return ("allow".into(), None);
    }
    let decision = specific["permissionDecision"].as_str().unwrap().to_owned();
    let code = (decision == "deny")
        .then(|| code_in_reason(specific["permissionDecisionReason"].as_str().unwrap()))
        .flatten();
    (decision, code)
}

fn explain_door(policy: &Path, project: &Path, tool: &str, input: &Value) -> Seen {
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .current_dir(project)
        .args(["explain", "check", "--json", "--policy"])
        .arg(policy)
        .args(["--tool", tool, "--input", &input.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{tool}: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let decision = v["decision"].as_str().unwrap().to_owned();
    let code = (decision == "deny").then(|| v["reasons"][0]["code"].as_str().unwrap().to_owned());
    (decision, code)
}

fn test_door(policy: &Path, project: &Path, cases: &[(String, Value)]) -> Vec<Seen> {
    let file = project.parent().unwrap().join("cases.jsonl");
    let lines: Vec<String> = cases
        .iter()
        .map(|(tool, input)| json!({"tool": tool, "input": input, "expect": "allow"}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .current_dir(project)
        .args(["test", "--json"])
        .arg(policy)
        .arg(&file)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let decision = c["decision"].as_str().unwrap().to_owned();
            let code = (decision == "deny").then(|| c["code"].as_str().unwrap().to_owned());
            (decision, code)
        })
        .collect()
}

fn run_door(policy: &Path, project: &Path, calls: &[(String, Value)]) -> Vec<Seen> {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| json!({"id": format!("c{i}"), "name": tool, "arguments": args}))
        .collect();
    let script = json!({
        "prompt": "check",
        "turns": [
            {"content": "", "tool_calls": tool_calls},
            {"content": "done", "tool_calls": []},
        ],
    });
    let file = project.parent().unwrap().join("script.json");
    std::fs::write(&file, script.to_string()).unwrap();
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["run", "--json", "--approve", "no", "--script"])
        .arg(&file)
        .arg("--policy")
        .arg(policy)
        .arg("--cwd")
        .arg(project)
        .arg("--audit-db")
        .arg(project.parent().unwrap().join("audit.db"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["calls"].as_array().unwrap();
    assert_eq!(results.len(), calls.len(), "{v}");
    results
        .iter()
        .map(|c| {
            let decision = c["decision"].as_str().unwrap_or("none").to_owned();
            let code = (decision == "deny").then(|| c["code"].as_str().unwrap().to_owned());
            (decision, code)
        })
        .collect()
}

fn every_door_agrees(mode: &str) {
    let tmp = project();
    let project = tmp.path().join("project");
    let policy = tmp.path().join("policy.toml");
    std::fs::write(&policy, POLICY.replace("MODE", mode)).unwrap();
    let calls = calls();
    let claude: Vec<(String, Value)> = calls
        .iter()
        .map(|(t, i, _, _)| ((*t).to_owned(), fill(i, &project)))
        .collect();
    let guard: Vec<(String, Value)> = calls
        .iter()
        .map(|(_, _, t, a)| ((*t).to_owned(), fill(a, &project)))
        .collect();
    let runtime = run_door(&policy, &project, &guard);
    let tested = test_door(&policy, &project, &claude);
    let mut sensitive_allowed = Vec::new();
    for (i, (tool, input)) in claude.iter().enumerate() {
        let hook = hook_door(&policy, &project, tool, input);
        let explained = explain_door(&policy, &project, tool, input);
        assert_eq!(
            hook, runtime[i],
            "{mode}: hook vs runtime for {tool} {input}"
        );
        assert_eq!(hook, tested[i], "{mode}: hook vs test for {tool} {input}");
        assert_eq!(
            hook, explained,
            "{mode}: hook vs explain for {tool} {input}"
        );
        let text = input.to_string();
        if (text.contains(".env\"")
            || text.contains("shadow")
            || text.contains(".ssh")
            || text.contains("secret_link"))
            && hook.0 == "allow"
        {
            sensitive_allowed.push(text);
        }
    }
    assert!(
        sensitive_allowed.is_empty(),
        "{mode}: sensitive reads allowed: {sensitive_allowed:?}"
    );
    // Content decides: the key and the registry login are refused as secrets, the public
    // half is read.
    for (i, (_, input)) in claude.iter().enumerate() {
        let text = input.to_string();
        if text.contains("deploy/prod-access\"") || text.contains("registry.json") {
            assert_eq!(
                runtime[i],
                ("deny".to_owned(), Some("sensitive_path".to_owned())),
                "{mode}: {text}"
            );
        } else if text.contains("prod-access.pub") {
            assert_eq!(runtime[i].0, "allow", "{mode}: {text}");
        }
    }
}

#[test]
fn every_door_agrees_in_the_default_mode() {
    every_door_agrees("default");
}

#[test]
fn every_door_agrees_in_dont_ask() {
    every_door_agrees("dontAsk");
}
