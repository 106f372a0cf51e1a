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
    // A session's end is in the rows, not counted as a call.
    assert_eq!(tools, ["read_file", "run_bash"]);

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
    assert!(text.contains("run_bash: calls=2 allowed=2"), "{text}");
    assert!(text.contains("ran=2"), "{text}");
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

/// The PostgreSQL server's URL (`AGENT_GUARD_TEST_PG_URL`); under `CI` its absence fails the
/// test, otherwise the PostgreSQL half is reported as skipped on the terminal.
pub fn pg_url(test: &str) -> Option<String> {
    use std::io::Write;
    match std::env::var("AGENT_GUARD_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("AGENT_GUARD_TEST_PG_URL is not set but CI is: `{test}` needs PostgreSQL")
        }
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: the PostgreSQL half of `{test}` (AGENT_GUARD_TEST_PG_URL is not set)"
            );
            None
        }
    }
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

#[test]
fn decision_and_age_filters_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let mut dbs = vec![dir.path().join("audit.db").display().to_string()];
    dbs.extend(pg_url("decision_and_age_filters_on_both_backends"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for db in dbs {
        // A shared PostgreSQL database holds other tests' rows: filter on a fresh session id.
        let session = unique("filters");
        rt.block_on(async {
            let log = AuditLog::open(&db).await.unwrap();
            log.record(AuditRow::tool_call(&PostToolUseContext {
                session_id: session.clone(),
                tool_name: "read_file".into(),
                ..Default::default()
            }))
            .await;
            log.record(AuditRow::denied(
                &session,
                2,
                "lead",
                "run_bash",
                perm_rules::Decision::Deny,
                "bash_destructive",
                "rm -rf /",
            ))
            .await;
            log.shutdown().await.unwrap();
        });
        let json = |extra: &[&str]| -> serde_json::Value {
            let out = Command::cargo_bin("agent-guard")
                .unwrap()
                .args(["audit", "--json", "--audit-db", &db, "--session", &session])
                .args(extra)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).unwrap()
        };
        let denied = json(&["--decision", "deny"]);
        assert_eq!(denied["rows"].as_array().unwrap().len(), 1, "{db}");
        assert_eq!(denied["rows"][0]["reason_code"], "bash_destructive");
        assert!(!denied["db"].as_str().unwrap().is_empty());
        assert_eq!(
            json(&["--since", "1h"])["rows"].as_array().unwrap().len(),
            2
        );
        assert_eq!(
            json(&["--until", "1h"])["rows"].as_array().unwrap().len(),
            0
        );
        let summary = json(&["--tool", "run_bash"]);
        assert_eq!(summary["summary"][0]["denied"], 1, "{db}");
    }
    Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["audit", "--since", "yesterday"])
        .assert()
        .failure();
}
