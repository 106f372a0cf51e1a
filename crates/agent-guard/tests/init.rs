#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard init` on real settings files, through the binary.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};

const EXAMPLE_POLICY: &str = include_str!("../../../examples/policy.toml");

/// `agent-guard init` with HOME pointed at `home` and run from `cwd`.
fn init(home: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.arg("init").env("HOME", home).current_dir(cwd);
    cmd
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every handler command of `event` in a settings document.
/// The commands of `event`'s handlers, without the fail-closed wrapper that judging events get
/// (`the_judging_events_fail_closed` checks it).
fn commands(doc: &Value, event: &str) -> Vec<String> {
    doc["hooks"][event]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["command"].as_str().map(str::to_owned))
        .map(|c| match c.split_once(" || { s=$?;") {
            Some((plain, _)) => plain.to_owned(),
            None => c,
        })
        .collect()
}

struct Client {
    name: &'static str,
    file: &'static str,
    subcommand: &'static str,
    events: &'static [&'static str],
    /// An existing settings file with unrelated settings and hooks.
    existing: Value,
}

fn clients() -> Vec<Client> {
    vec![
        Client {
            name: "claude",
            file: ".claude/settings.json",
            subcommand: "claude-hook",
            events: &[
                "PreToolUse",
                "PermissionRequest",
                "PostToolUse",
                "Stop",
                "SessionEnd",
            ],
            existing: json!({
                "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
                "env": {"FOO": "bar"},
                "hooks": {
                    "PreToolUse": [{"matcher": "Edit|Write", "hooks": [
                        {"type": "command", "command": "prettier --check", "timeout": 5}]}],
                    "Notification": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
                },
                "model": "opus"
            }),
        },
        Client {
            name: "codex",
            file: ".codex/hooks.json",
            subcommand: "codex-hook",
            events: &["PreToolUse", "PermissionRequest", "PostToolUse"],
            existing: json!({
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": "python3 stop.py", "timeout": 30}]}],
                    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-bash"}]}]
                }
            }),
        },
        Client {
            name: "gemini",
            file: ".gemini/settings.json",
            subcommand: "gemini-hook",
            events: &["BeforeTool", "AfterTool"],
            existing: json!({
                "theme": "GitHub",
                "general": {"vimMode": true},
                "hooks": {
                    "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi", "timeout": 1000}]}]
                },
                "mcpServers": {"github": {"command": "gh-mcp"}}
            }),
        },
    ]
}

/// Everything in `before` that init must not touch, compared with `after`.
fn assert_unrelated_kept(before: &Value, after: &Value, ours: &[&str]) {
    for (key, value) in before.as_object().unwrap() {
        if key != "hooks" {
            assert_eq!(&after[key], value, "top-level `{key}` changed");
        }
    }
    for (event, groups) in before["hooks"].as_object().unwrap() {
        let after_groups = after["hooks"][event].as_array().unwrap();
        for group in groups.as_array().unwrap() {
            assert!(
                after_groups.contains(group),
                "`{event}` lost the group {group}"
            );
        }
        if !ours.contains(&event.as_str()) {
            assert_eq!(&after["hooks"][event], groups, "`{event}` changed");
        }
    }
}

#[test]
fn init_merges_into_existing_settings_keeps_the_rest_and_is_idempotent() {
    for client in clients() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let path = project.path().join(client.file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let original = serde_json::to_string(&client.existing).unwrap();
        std::fs::write(&path, &original).unwrap();

        init(home.path(), project.path())
            .args([client.name, "--binary", "/opt/guard/bin/agent-guard"])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!("--- {}", path.display())))
            .stdout(predicate::str::contains(
                "+            \"command\": \"/opt/guard/bin/agent-guard",
            ))
            .stdout(predicate::str::contains("backup:"));

        let after = read_json(&path);
        assert_unrelated_kept(&client.existing, &after, client.events);
        let policy = project.path().join(".agent-guard/policy.toml");
        let want = format!(
            "/opt/guard/bin/agent-guard {} --policy {}",
            client.subcommand,
            policy.display()
        );
        for event in client.events {
            let ours: Vec<String> = commands(&after, event)
                .into_iter()
                .filter(|c| c.contains("agent-guard"))
                .collect();
            assert_eq!(ours, vec![want.clone()], "{} {event}", client.name);
        }
        // The backup is the file as it was, byte for byte.
        let backup = std::fs::read_to_string(format!("{}.bak", path.display())).unwrap();
        assert_eq!(backup, original, "{}", client.name);
        // The starter policy is the shipped example.
        assert_eq!(std::fs::read_to_string(&policy).unwrap(), EXAMPLE_POLICY);

        // Twice: the same file, no new backup, nothing printed as changed.
        let first = std::fs::read(&path).unwrap();
        init(home.path(), project.path())
            .args([client.name, "--binary", "/opt/guard/bin/agent-guard"])
            .assert()
            .success()
            .stdout(predicate::str::contains("already up to date"))
            .stdout(predicate::str::contains("---").not());
        assert_eq!(std::fs::read(&path).unwrap(), first, "{}", client.name);
        let backups = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".bak")
            })
            .count();
        assert_eq!(backups, 1, "{}", client.name);
    }
}

#[test]
fn init_updates_an_existing_agent_guard_entry_instead_of_adding_one() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let path = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command",
              "command": "/old/agent-guard claude-hook --policy /old/policy.toml"}]},
            {"matcher": "Bash", "hooks": [{"type": "command",
              "command": "agent-guard claude-hook"}]}
        ]}}))
        .unwrap(),
    )
    .unwrap();
    init(home.path(), project.path())
        .args([
            "claude",
            "--binary",
            "/new/agent-guard",
            "--policy",
            "p.toml",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "-            \"command\": \"/old/agent-guard",
        ));
    let after = read_json(&path);
    let policy = project.path().join("p.toml");
    assert_eq!(
        commands(&after, "PreToolUse"),
        vec![format!(
            "/new/agent-guard claude-hook --policy {}",
            policy.display()
        )]
    );
    assert_eq!(after["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert!(policy.is_file());
}

#[test]
fn init_creates_missing_settings_with_no_backup() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    init(home.path(), project.path())
        .args(["gemini", "--binary", "/bin/agent-guard"])
        .assert()
        .success();
    let path = project.path().join(".gemini/settings.json");
    let doc = read_json(&path);
    let handler = &doc["hooks"]["BeforeTool"][0]["hooks"][0];
    assert_eq!(doc["hooks"]["BeforeTool"][0]["matcher"], ".*");
    // Gemini counts milliseconds; the approval wait (55 s) fits inside.
    assert_eq!(handler["timeout"], 90000);
    assert_eq!(handler["name"], "agent-guard");
    assert!(!project.path().join(".gemini/settings.json.bak").exists());
}

#[test]
fn init_user_writes_under_home() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    init(home.path(), cwd.path())
        .args(["codex", "--user", "--binary", "/bin/agent-guard"])
        .assert()
        .success()
        .stdout(predicate::str::contains("/hooks"));
    let doc = read_json(&home.path().join(".codex/hooks.json"));
    let policy = home.path().join(".config/agent-guard/policy.toml");
    assert_eq!(
        commands(&doc, "PreToolUse"),
        vec![format!(
            "/bin/agent-guard codex-hook --policy {}",
            policy.display()
        )]
    );
    assert_eq!(doc["hooks"]["PreToolUse"][0]["matcher"], ".*");
    assert!(policy.is_file());
    assert!(!cwd.path().join(".codex").exists());
}

#[test]
fn init_keeps_an_existing_policy() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let policy = project.path().join("mine.toml");
    std::fs::write(&policy, "[permissions]\ndefault = \"ask\"\n").unwrap();
    init(home.path(), project.path())
        .args(["claude", "--policy", "mine.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("kept as it is"));
    assert_eq!(
        std::fs::read_to_string(&policy).unwrap(),
        "[permissions]\ndefault = \"ask\"\n"
    );
}

#[test]
fn init_from_a_cargo_build_writes_its_absolute_path_and_warns() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let exe = assert_cmd::cargo::cargo_bin("agent-guard");
    init(home.path(), project.path())
        .arg("claude")
        .assert()
        .success()
        .stdout(predicate::str::contains("cargo clean"));
    let doc = read_json(&project.path().join(".claude/settings.json"));
    // A bare `agent-guard` is not on the client's PATH: Claude Code then ran the call. The
    // small entry the build puts beside the CLI is what the hook starts (issue 31).
    let entry = exe.with_file_name("agent-guard-hook");
    assert!(entry.is_file(), "{}", entry.display());
    assert!(
        commands(&doc, "PreToolUse")[0]
            .starts_with(&format!("{} claude-hook --policy /", entry.display())),
        "{doc}"
    );
}

#[test]
fn the_judging_events_fail_closed() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    init(home.path(), project.path())
        .args(["claude", "--binary", "/nonexistent/agent-guard"])
        .assert()
        .success();
    let doc = read_json(&project.path().join(".claude/settings.json"));
    let pre = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    // The missing program is a refusal (exit 2 with a reason), not a call that runs.
    let out = std::process::Command::new("sh")
        .args(["-c", pre])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{pre}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("the call is refused"));
    let stop = doc["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(!stop.contains("exit 2"), "{stop}");
}

#[test]
fn init_quotes_paths_with_spaces() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    init(home.path(), project.path())
        .args([
            "claude",
            "--binary",
            "/opt/my tools/agent-guard",
            "--policy",
            "my policy.toml",
        ])
        .assert()
        .success();
    let doc = read_json(&project.path().join(".claude/settings.json"));
    assert_eq!(
        commands(&doc, "PreToolUse")[0],
        format!(
            "'/opt/my tools/agent-guard' claude-hook --policy '{}'",
            project.path().join("my policy.toml").display()
        )
    );
}

#[test]
fn dry_run_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    init(home.path(), project.path())
        .args(["claude", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("dry run"))
        .stdout(predicate::str::contains("+  \"hooks\": {"));
    assert_eq!(std::fs::read_dir(project.path()).unwrap().count(), 0);
}

#[test]
fn a_settings_file_that_is_not_json_is_left_untouched() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let path = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{ // a comment\n \"model\": \"opus\" }").unwrap();
    let out = init(home.path(), project.path())
        .arg("claude")
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("is not JSON"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{ // a comment\n \"model\": \"opus\" }"
    );
    assert!(!project.path().join(".agent-guard").exists());
}

#[test]
fn project_and_user_conflict() {
    let home = tempfile::tempdir().unwrap();
    init(home.path(), home.path())
        .args(["claude", "--user", "--project", "."])
        .assert()
        .code(2);
}

#[test]
fn a_symlinked_settings_file_is_written_through() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let dotfiles = tempfile::tempdir().unwrap();
    let real = dotfiles.path().join("claude.json");
    std::fs::write(&real, "{\"model\": \"opus\"}\n").unwrap();
    std::fs::create_dir(project.path().join(".claude")).unwrap();
    let link = project.path().join(".claude/settings.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    init(home.path(), project.path())
        .args(["claude", "--binary", "/bin/agent-guard"])
        .assert()
        .success();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let doc = read_json(&real);
    assert_eq!(doc["model"], "opus");
    assert_eq!(commands(&doc, "PreToolUse").len(), 1);
}
