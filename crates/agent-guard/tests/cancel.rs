#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard cancel`: a cancellation issued by the CLI process is seen by a guard in this
//! process within a second, on SQLite and PostgreSQL.

use std::time::{Duration, Instant};

use assert_cmd::Command;
use perm_hooks::KillSwitch;

fn pg_url() -> Option<String> {
    use std::io::Write;
    match std::env::var("AGENT_GUARD_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("AGENT_GUARD_TEST_PG_URL is not set but CI is: the cancel test needs PostgreSQL")
        }
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: the PostgreSQL half of the cancel test (AGENT_GUARD_TEST_PG_URL is not set)"
            );
            None
        }
    }
}

#[test]
fn a_cancel_from_the_cli_reaches_a_running_guard_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let mut dbs = vec![dir.path().join("fleet.db").display().to_string()];
    dbs.extend(pg_url());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for db in dbs {
        // A shared PostgreSQL database outlives the test: a session id of our own.
        let session = format!("victim-{}-{:?}", std::process::id(), Instant::now());
        let guard = rt.block_on(KillSwitch::open(&db)).unwrap();
        let token = guard.watch(&session);
        assert!(!guard.is_cancelled(&session));

        let out = Command::cargo_bin("agent-guard")
            .unwrap()
            .args(["cancel", "--session", &session, "--audit-db", &db])
            .args(["--reason", "runaway loop"])
            .output()
            .unwrap();
        let issued = Instant::now();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("cancelled session"));
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(1), token.cancelled())
                .await
                .unwrap_or_else(|_| panic!("{db}: not seen within 1 s"));
        });
        assert!(issued.elapsed() < Duration::from_secs(1));
        assert!(guard.is_cancelled(&session));
        assert!(!guard.is_cancelled("someone-else"));
        assert!(rt.block_on(guard.check_now(&session)).unwrap());
    }
}

#[test]
fn cancel_all_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fleet.db").display().to_string();
    // A database no guard uses (a mistyped or relative path) is an error, and not created.
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["cancel", "--all", "--audit-db", &db])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert!(!std::path::Path::new(&db).exists());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let guard = rt.block_on(KillSwitch::open(&db)).unwrap();
    Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["cancel", "--all", "--audit-db", &db])
        .assert()
        .success();
    rt.block_on(async {
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while !guard.is_cancelled("any-session") && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert!(guard.is_cancelled("any-session"));
    // Neither --session nor --all: a usage error, nothing recorded.
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["cancel", "--audit-db", &db])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // PostgreSQL down: one clear error, exit 2.
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["cancel", "--session", "s", "--audit-db"])
        .arg(format!(
            "postgres://u:pw@localhost/x?host={}",
            dir.path().display()
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach audit database"), "{err}");
    assert!(!err.contains(":pw@"), "{err}");
}
