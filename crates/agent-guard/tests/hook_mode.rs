//! The hooks as the full product: they never fail open on a crash, record every refusal and
//! the session's end in the audit log, and honour the fleet kill switch.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};

fn event(project: &Path, name: &str, tool: &str, input: Value) -> String {
    json!({
        "session_id": "sess-1", "transcript_path": "/dev/null", "cwd": project,
        "permission_mode": "default", "hook_event_name": name,
        "tool_name": tool, "tool_input": input, "tool_use_id": "t1",
        "tool_response": "ok", "reason": "prompt_input_exit",
    })
    .to_string()
}

fn hook(sub: &str, db: &Path, stdin: String) -> std::process::Output {
    Command::cargo_bin("agent-guard")
        .unwrap()
        .args([sub, "--audit-db"])
        .arg(db)
        .env_remove("CLAUDE_PROJECT_DIR")
        .write_stdin(stdin)
        .output()
        .unwrap()
}

#[test]
fn a_panic_inside_any_hook_is_a_deny_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    for (sub, name, tool) in [
        ("claude-hook", "PreToolUse", "Bash"),
        ("codex-hook", "PreToolUse", "Bash"),
        ("gemini-hook", "BeforeTool", "run_shell_command"),
    ] {
        let out = Command::cargo_bin("agent-guard")
            .unwrap()
            .arg(sub)
            .env("AGENT_GUARD_TEST_PANIC", "1")
            .write_stdin(event(tmp.path(), name, tool, json!({"command": "ls"})))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sub}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("internal error"), "{sub}: {stderr}");
        assert!(!stderr.trim().is_empty(), "codex needs a reason on stderr");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let decision = v["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .or(v["decision"].as_str())
            .unwrap();
        assert_eq!(decision, "deny", "{sub}: {v}");
    }
}

#[test]
fn refusals_and_the_session_end_are_audited() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("audit.db");
    let project = tmp.path().join("p");
    std::fs::create_dir_all(&project).unwrap();
    let out = hook(
        "claude-hook",
        &db,
        event(
            &project,
            "PreToolUse",
            "Read",
            json!({"file_path": "/etc/shadow"}),
        ),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = hook(
        "claude-hook",
        &db,
        event(&project, "PostToolUse", "Bash", json!({"command": "ls"})),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = hook(
        "claude-hook",
        &db,
        event(&project, "SessionEnd", "", json!({})),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty());

    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["audit", "--json", "--audit-db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sensitive_path"), "{text}");
    assert!(text.contains("SESSION_STOP"), "{text}");
    assert!(text.contains("\"OK\""), "the run row: {text}");
}

#[test]
fn a_cancelled_session_is_denied_in_every_hook() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("audit.db");
    let project = tmp.path().join("p");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let read = || {
        event(
            &project,
            "PreToolUse",
            "Read",
            json!({"file_path": project.join("src").to_str().unwrap()}),
        )
    };
    let before = hook("claude-hook", &db, read());
    let v: Value = serde_json::from_slice(&before.stdout).unwrap();
    assert_ne!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");

    Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["cancel", "--session", "sess-1", "--audit-db"])
        .arg(&db)
        .assert()
        .success();
    let after = hook("claude-hook", &db, read());
    let v: Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{v}"
    );
    let codex = hook(
        "codex-hook",
        &db,
        event(&project, "PreToolUse", "Bash", json!({"command": "ls"})),
    );
    let v: Value = serde_json::from_slice(&codex.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
}
