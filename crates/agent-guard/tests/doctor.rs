#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard doctor` on configured temp projects (HOME pointed at a temp dir).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("agent-guard")
}

fn agent_guard(home: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.env("HOME", home).current_dir(cwd);
    for var in [
        "AGENT_PERMISSIONS_DENY",
        "AGENT_PERMISSIONS_ASK",
        "AGENT_PERMISSIONS_ALLOW",
        "AGENT_PERMISSIONS_MODE",
        "AGENT_GUARD_POLICY",
        "GEMINI_CLI_TRUST_WORKSPACE",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// A project with the guard installed for `client`, running `binary`.
fn installed(client: &str, binary: &Path) -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    agent_guard(home.path(), project.path())
        .args(["init", client, "--binary"])
        .arg(binary)
        .assert()
        .success();
    (home, project)
}

/// A stand-in `codex` whose `app-server` lists the project's hooks with the trust status in
/// `FAKE_CODEX_TRUST` (default trusted). The real Codex is driven by tests/clients.
const FAKE_CODEX: &str = r#"#!/usr/bin/env python3
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("id") == 1:
        print(json.dumps({"id": 1, "result": {}}), flush=True)
    if m.get("id") == 2:
        try:
            d = json.load(open(".codex/hooks.json"))
        except OSError:
            d = {}
        trust = os.environ.get("FAKE_CODEX_TRUST", "trusted")
        hooks = [{"eventName": ev, "command": h["command"], "trustStatus": trust}
                 for ev, gs in d.get("hooks", {}).items() for g in gs for h in g.get("hooks", [])]
        print(json.dumps({"id": 2, "result": {"data": [{"cwd": os.getcwd(), "hooks": hooks}]}}), flush=True)
"#;

fn fake_codex_path() -> String {
    use std::os::unix::fs::PermissionsExt as _;
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("codex");
        std::fs::write(&path, FAKE_CODEX).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    });
    format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn doctor(home: &Path, project: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    agent_guard(home, project)
        .env("PATH", fake_codex_path())
        // Gemini CLI's own way to trust the folder (an_untrusted_gemini_folder_fails: without).
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .arg("doctor")
        .args(args)
        .args(["--timeout", "30"])
        .assert()
}

/// A stand-in `agent-guard` (a shell script under that name) answering with `body`, which
/// sees the hook input in `$input`.
fn fake_agent_guard(body: &str) -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent-guard");
    std::fs::write(&path, format!("#!/bin/sh\ninput=$(cat)\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

const CLAUDE_DENY: &str = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"catastrophic"}}"#;

fn deny_rm_with(answer: &str) -> String {
    format!("case \"$input\" in *'rm -rf'*) printf '%s' '{answer}' ;; esac\nexit 0")
}

#[test]
fn a_claude_install_passes_every_check_with_the_real_hook() {
    let (home, project) = installed("claude", &bin());
    doctor(home.path(), project.path(), &["claude"])
        .success()
        .stdout(predicate::str::contains(
            "OK    PreToolUse: agent-guard handler, matcher `*`",
        ))
        .stdout(predicate::str::contains("OK    SessionEnd"))
        .stdout(predicate::str::contains("lints clean"))
        .stdout(predicate::str::contains(
            "self-test: Bash `rm -rf ~` -> deny",
        ))
        // Allowed, or left to Claude Code: anything but a deny.
        .stdout(predicate::str::contains("README.md` -> "))
        .stdout(predicate::str::contains("all checks passed"))
        .stdout(predicate::str::contains("FAIL").not());
}

#[test]
fn without_a_client_it_checks_every_configured_one() {
    let (fake_dir, fake) = fake_agent_guard(&deny_rm_with(CLAUDE_DENY));
    let (home, project) = installed("claude", &fake);
    agent_guard(home.path(), project.path())
        .args(["init", "codex", "--binary"])
        .arg(&fake)
        .assert()
        .success();
    doctor(home.path(), project.path(), &[])
        .success()
        .stdout(predicate::str::contains("Claude Code ("))
        .stdout(predicate::str::contains("Codex ("))
        .stdout(predicate::str::contains("Gemini CLI").not());
    drop(fake_dir);
}

#[test]
fn nothing_configured_fails_with_the_init_command() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    doctor(home.path(), project.path(), &[])
        .code(1)
        .stdout(predicate::str::contains("no client settings found"))
        .stdout(predicate::str::contains("fix: agent-guard init"));
    doctor(home.path(), project.path(), &["claude"])
        .code(1)
        .stdout(predicate::str::contains("FAIL  settings"))
        .stdout(predicate::str::contains(format!(
            "fix: agent-guard init claude --project {}",
            project.path().display()
        )));
}

#[test]
fn a_missing_event_or_a_narrow_matcher_fails() {
    let (home, project) = installed("claude", &bin());
    let path = project.path().join(".claude/settings.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["hooks"]["PreToolUse"][0]["matcher"] = "Bash".into();
    doc["hooks"]
        .as_object_mut()
        .unwrap()
        .remove("PermissionRequest");
    std::fs::write(&path, doc.to_string()).unwrap();
    doctor(home.path(), project.path(), &["claude"])
        .code(1)
        .stdout(predicate::str::contains(
            "FAIL  PreToolUse: the matcher `Bash` sends only some tools to the guard",
        ))
        .stdout(predicate::str::contains(
            "FAIL  PermissionRequest: no agent-guard `claude-hook` handler",
        ))
        .stdout(predicate::str::contains("2 check(s) failed"));
}

#[test]
fn a_missing_program_fails_and_skips_the_self_test() {
    let (home, project) = installed("claude", Path::new("/nonexistent/bin/agent-guard"));
    doctor(home.path(), project.path(), &["claude"])
        .code(1)
        .stdout(predicate::str::contains(
            "FAIL  program: `/nonexistent/bin/agent-guard` does not exist",
        ))
        .stdout(predicate::str::contains("--binary /path/to/agent-guard"))
        .stdout(predicate::str::contains("self-test").not());
}

#[test]
fn a_policy_that_does_not_lint_clean_fails() {
    let (home, project) = installed("claude", &bin());
    let policy = project.path().join(".agent-guard/policy.toml");
    let mut text = std::fs::read_to_string(&policy).unwrap();
    text.push_str("\n[[hooks.command]]\ncommand = \"$CLAUDE_PROJECT_DIR/hooks/missing.sh\"\n");
    std::fs::write(&policy, text).unwrap();
    doctor(home.path(), project.path(), &["claude"])
        .code(1)
        .stdout(predicate::str::contains("FAIL  policy:"))
        .stdout(predicate::str::contains("hook-command-missing"));
}

#[test]
fn a_policy_that_denies_project_reads_fails_the_self_test() {
    let (home, project) = installed("claude", &bin());
    let policy = project.path().join(".agent-guard/policy.toml");
    std::fs::write(
        &policy,
        "[permissions]\ndeny = [\"read_file\", \"run_bash(rm:*)\"]\n",
    )
    .unwrap();
    doctor(home.path(), project.path(), &["claude"])
        .code(1)
        .stdout(predicate::str::contains(
            "self-test: Bash `rm -rf ~` -> deny",
        ))
        .stdout(predicate::str::contains(
            "the guard would block everyday work",
        ));
}

#[test]
fn a_timeout_shorter_than_the_approval_wait_fails() {
    let (_fake_dir, fake) = fake_agent_guard(&deny_rm_with(CLAUDE_DENY));
    let (home, project) = installed("claude", &fake);
    let path = project.path().join(".claude/settings.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen("\"timeout\": 90", "\"timeout\": 30", 1);
    std::fs::write(&path, text).unwrap();
    doctor(home.path(), project.path(), &["claude"])
        .code(1)
        .stdout(predicate::str::contains(
            "does not cover the approval wait (55 s)",
        ));
}

#[test]
fn an_untrusted_gemini_folder_fails() {
    let (_fake_dir, fake) = fake_agent_guard(&deny_rm_with(CLAUDE_DENY));
    let (home, project) = installed("gemini", &fake);
    agent_guard(home.path(), project.path())
        .args(["doctor", "gemini", "--timeout", "30"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("--skip-trust"));
    let gemini = home.path().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let trusted = serde_json::json!({ project.path().to_str().unwrap(): "TRUST_FOLDER" });
    std::fs::write(gemini.join("trustedFolders.json"), trusted.to_string()).unwrap();
    agent_guard(home.path(), project.path())
        .args(["doctor", "gemini", "--timeout", "30"])
        .assert()
        .stdout(predicate::str::contains("Gemini CLI trusts this folder"));
}

#[test]
fn an_untrusted_codex_hook_fails() {
    let (_fake_dir, fake) = fake_agent_guard(&deny_rm_with(CLAUDE_DENY));
    let (home, project) = installed("codex", &fake);
    agent_guard(home.path(), project.path())
        .env("PATH", fake_codex_path())
        .env("FAKE_CODEX_TRUST", "untrusted")
        .args(["doctor", "codex", "--timeout", "30"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "Codex skips the agent-guard hooks",
        ))
        .stdout(predicate::str::contains("/hooks"));
}

#[test]
fn codex_answers_are_read_by_codex_rules() {
    // A deny with a reason: Codex blocks.
    let (_fake_dir, fake) = fake_agent_guard(&deny_rm_with(CLAUDE_DENY));
    let (home, project) = installed("codex", &fake);
    doctor(home.path(), project.path(), &["codex"])
        .success()
        .stdout(predicate::str::contains(
            "Bash `rm -rf ~` -> deny (catastrophic)",
        ))
        .stdout(predicate::str::contains("Bash `ls` -> no decision"));

    // `ask` fails open in Codex.
    let ask = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"sure?"}}"#;
    let (_ask_dir, fake) = fake_agent_guard(&deny_rm_with(ask));
    let (home, project) = installed("codex", &fake);
    doctor(home.path(), project.path(), &["codex"])
        .code(1)
        .stdout(predicate::str::contains(
            "Codex rejects `ask` and runs the call",
        ))
        .stdout(predicate::str::contains("Codex would run it"));

    // A deny that also carries `continue` is voided.
    let voided = r#"{"continue":true,"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
    let (_void_dir, fake) = fake_agent_guard(&deny_rm_with(voided));
    let (home, project) = installed("codex", &fake);
    doctor(home.path(), project.path(), &["codex"])
        .code(1)
        .stdout(predicate::str::contains("carries `continue`"));
}

#[test]
fn a_binary_without_the_hook_subcommand_fails_with_its_message() {
    let (_dir, fake) =
        fake_agent_guard("echo \"error: unrecognized subcommand 'codex-hook'\" >&2\nexit 2");
    let (home, project) = installed("codex", &fake);
    doctor(home.path(), project.path(), &["codex"])
        .code(1)
        .stdout(predicate::str::contains(
            "this agent-guard has no `codex-hook` subcommand (error: unrecognized subcommand 'codex-hook')",
        ));
}

#[test]
fn gemini_answers_are_read_by_gemini_rules() {
    let good = deny_rm_with(r#"{"decision":"deny","reason":"catastrophic"}"#);
    let (_good_dir, fake) = fake_agent_guard(&good);
    let (home, project) = installed("gemini", &fake);
    doctor(home.path(), project.path(), &["gemini"])
        .success()
        .stdout(predicate::str::contains(
            "OK    BeforeTool: agent-guard handler, matcher `.*`",
        ))
        .stdout(predicate::str::contains(
            "run_shell_command `rm -rf ~` -> deny (catastrophic)",
        ));

    // A crash (exit 1, plain stderr) lets Gemini CLI run the call.
    let (_crash_dir, fake) = fake_agent_guard("echo 'thread main panicked' >&2\nexit 1");
    let (home, project) = installed("gemini", &fake);
    doctor(home.path(), project.path(), &["gemini"])
        .code(1)
        .stdout(predicate::str::contains(
            "exit 1 without JSON: Gemini CLI warns and runs the call",
        ));
}

#[test]
fn a_gemini_timeout_in_seconds_fails() {
    let (_dir, fake) = fake_agent_guard(&deny_rm_with(r#"{"decision":"deny","reason":"x"}"#));
    let (home, project) = installed("gemini", &fake);
    let path = project.path().join(".gemini/settings.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("30000", "30");
    std::fs::write(&path, text).unwrap();
    doctor(home.path(), project.path(), &["gemini"])
        .code(1)
        .stdout(predicate::str::contains(
            "the timeout 30 is in milliseconds",
        ));
}

#[test]
fn a_user_install_is_checked_under_home() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    agent_guard(home.path(), cwd.path())
        .args(["init", "claude", "--user", "--binary"])
        .arg(bin())
        .assert()
        .success();
    doctor(home.path(), cwd.path(), &["claude", "--user"])
        .success()
        .stdout(predicate::str::contains(format!(
            "{}/.claude/settings.json",
            home.path().display()
        )))
        .stdout(predicate::str::contains(
            ".config/agent-guard/policy.toml lints clean",
        ));
}
