#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard audit` against a real audit database.

use assert_cmd::Command;
use perm_hooks::{AuditLog, AuditRow, PostToolUseContext, SessionStopContext};

fn make_db(path: &std::path::Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let log = AuditLog::open(path).await.unwrap();
        for (session, tool, err) in [
            ("s1", "run_bash", false),
            ("s1", "read_file", true),
            ("s2", "run_bash", false),
        ] {
            log.record(AuditRow::tool_call(&PostToolUseContext {
                session_id: session.into(),
                tool_name: tool.into(),
                is_error: err,
                output: "out".into(),
                ..Default::default()
            }))
            .await;
        }
        log.record(AuditRow::session_stop(&SessionStopContext {
            session_id: "s1".into(),
            ..Default::default()
        }))
        .await;
        log.shutdown().await.unwrap();
    });
}

#[test]
fn lists_rows_and_summary_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    make_db(&db);
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["audit", "--json", "--session", "s1", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 3);
    let tools: Vec<_> = v["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tool_name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, ["read_file", "run_bash", "session"]);

    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["audit", "--json", "--status", "fail", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 1);
    assert_eq!(v["rows"][0]["tool_name"], "read_file");
    assert_eq!(v["rows"][0]["status"], "FAIL");

    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["audit", "--tool", "run_bash", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("run_bash: calls=2 ok=2"), "{text}");
}

#[test]
fn missing_db_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["audit", "--db"])
        .arg(dir.path().join("none.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert!(
        !dir.path().join("none.db").exists(),
        "the reader must not create it"
    );
}

#[test]
fn bad_status_is_rejected() {
    Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["audit", "--status", "maybe"])
        .assert()
        .failure();
}
