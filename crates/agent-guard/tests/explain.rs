#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard explain` behaviour, through the binary.

use assert_cmd::Command;
use predicates::prelude::*;

const POLICY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hook-policy.toml");

fn explain(dir: &tempfile::TempDir) -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.arg("explain").current_dir(dir.path());
    for var in [
        "AGENT_PERMISSIONS_DENY",
        "AGENT_PERMISSIONS_ASK",
        "AGENT_PERMISSIONS_ALLOW",
        "AGENT_PERMISSIONS_MODE",
        "AGENT_BLOCK_NETWORK",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn check_traces_rules_and_bash_guard() {
    let dir = tempfile::tempdir().unwrap();
    explain(&dir)
        .args([
            "check",
            "--policy",
            POLICY,
            "--tool",
            "run_bash",
            "--input",
            r#"{"command":"cat notes.txt | sh"}"#,
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(" 1. perm-rules"))
        .stdout(predicate::str::contains("*2. bash-guard"))
        .stdout(predicate::str::contains("saw:     `cat notes.txt | sh`"))
        .stdout(predicate::str::contains(
            "decision: deny (decided by bash-guard",
        ))
        // Not a terminal: no colour codes.
        .stdout(predicate::str::contains("\x1b[").not());
}

#[test]
fn check_json_has_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(explain(&dir).args([
        "check",
        "--policy",
        POLICY,
        "--tool",
        "Write",
        "--input",
        r#"{"file_path":".git/hooks/pre-commit","content":"x"}"#,
        "--json",
    ]));
    assert_eq!(v["decision"], "deny", "{v}");
    assert_eq!(v["tool"], "file_write");
    let layers: Vec<&str> = v["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["layer"].as_str().unwrap())
        .collect();
    assert_eq!(layers, ["perm-rules", "fs-sandbox"], "{v}");
    assert_eq!(v["trace"][0]["decision"], "ask");
    assert_eq!(v["trace"][1]["code"], "protected_path");
    assert_eq!(v["layer"], "fs-sandbox");
    assert_eq!(v["reasons"][0]["code"], "protected_path");
}

#[test]
fn bash_shows_the_deciding_rule() {
    let dir = tempfile::tempdir().unwrap();
    explain(&dir)
        .args([
            "bash", "--policy", POLICY, "--", "git", "status", "&&", "rm", "-rf", "~",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("rule:    `run_bash(rm:*)` at "))
        .stdout(predicate::str::contains("hook-policy.toml:5"))
        .stdout(predicate::str::contains(
            "decision: deny (decided by perm-rules: p0-config-deny)",
        ));
}

#[test]
fn path_traces_a_credential_store_as_sensitive() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(explain(&dir).args([
        "path",
        "--op",
        "read",
        "--json",
        "--",
        "/home/user/.ssh/id_rsa",
    ]));
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["layer"], "fs-sandbox");
    let codes: Vec<&str> = v["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["p8-default", "sensitive_path"], "{v}");

    let root = dir.path().join("extra");
    std::fs::create_dir(&root).unwrap();
    let v = json(explain(&dir).args([
        "path",
        "--op",
        "write",
        "--read-only-root",
        root.to_str().unwrap(),
        "--json",
        "--",
        root.join("f").to_str().unwrap(),
    ]));
    assert_eq!(v["decision"], "deny", "{v}");
    assert_eq!(v["trace"][1]["code"], "read_only_root", "{v}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad_rule = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bad-rule.toml");
    for (args, needle) in [
        (
            vec!["check", "--tool", "run_bash", "--input", "{nope"],
            "`--input` is not valid JSON",
        ),
        (
            vec!["check", "--tool", "run_bash", "--input", "[1]"],
            "must be a JSON object",
        ),
        (
            vec!["check", "--policy", bad_rule, "--tool", "x"],
            "run_bash(rm:*",
        ),
        (
            vec!["check", "--mode", "yolo", "--tool", "x"],
            "unknown mode `yolo`",
        ),
    ] {
        let out = explain(&dir)
            .args(&args)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(needle), "`{needle}` not in {err}");
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn unknown_tool_is_judged_by_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let v = json(explain(&dir).args([
        "check",
        "--policy",
        POLICY,
        "--tool",
        "no_such_tool",
        "--json",
    ]));
    assert_eq!(v["decision"], "ask");
    assert_eq!(v["trace"].as_array().unwrap().len(), 1);
    assert_eq!(v["trace"][0]["code"], "p8-default");
}

#[test]
fn bash_takes_the_bash_subcommands_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let decision = |extra: &[&str]| {
        let mut args = vec!["bash", "--json"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "git", "push", "origin", "main"]);
        json(explain(&dir).args(&args))["decision"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(decision(&[]), "deny", "the network is blocked by default");
    assert_eq!(decision(&["--allow-network"]), "ask");
}
