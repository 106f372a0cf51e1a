#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard check` behaviour, through the binary.

use assert_cmd::Command;
use predicates::prelude::*;

const POLICY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/policy.toml");

fn check() -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.arg("check");
    for var in [
        "AGENT_PERMISSIONS_DENY",
        "AGENT_PERMISSIONS_ASK",
        "AGENT_PERMISSIONS_ALLOW",
        "AGENT_PERMISSIONS_MODE",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn readme_command_denies_rm_after_git_status() {
    check()
        .args([
            "--policy",
            POLICY,
            "--tool",
            "run_bash",
            "--input",
            r#"{"command":"git status && rm -rf ~"}"#,
        ])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("deny"))
        .stdout(predicate::str::contains("run_bash(rm:*)"))
        .stdout(predicate::str::contains("policy.toml:"));
}

#[test]
fn env_deny_applies_without_policy() {
    let v = json(
        check()
            .env("AGENT_PERMISSIONS_DENY", "run_bash(rm:*)")
            .args([
                "--tool",
                "run_bash",
                "--input",
                r#"{"command":"ls && rm -rf x"}"#,
            ]),
    );
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["reasons"][0]["layer"], "perm-rules");
    assert_eq!(v["reasons"][0]["code"], "rule-deny");
    assert!(
        v["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("AGENT_PERMISSIONS_DENY")
    );
}

#[test]
fn json_decisions_from_example_policy() {
    let cases = [
        ("run_bash", r#"{"command":"git diff --stat"}"#, "allow"),
        ("run_bash", r#"{"command":"git push origin main"}"#, "ask"),
        (
            "run_bash",
            r#"{"command":"git status | sudo tee x"}"#,
            "deny",
        ),
        ("read_file", r#"{"file_path":"/repo/.env"}"#, "deny"),
        ("read_file", r#"{"file_path":"/repo/src/main.rs"}"#, "allow"),
        ("file_write", r#"{"file_path":"/etc/passwd"}"#, "deny"),
        ("unknown_tool", "{}", "ask"),
    ];
    for (tool, input, want) in cases {
        let v = json(check().args(["--policy", POLICY, "--tool", tool, "--input", input]));
        assert_eq!(v["decision"], want, "{tool} {input}: {v}");
        assert!(v["reasons"].as_array().unwrap().len() == 1);
    }
}

#[test]
fn modes_change_asks_but_never_denies() {
    let push = r#"{"command":"git push"}"#;
    let v = json(check().args([
        "--policy",
        POLICY,
        "--mode",
        "bypassPermissions",
        "--tool",
        "run_bash",
        "--input",
        push,
    ]));
    assert_eq!(v["decision"], "allow");
    let v = json(check().args([
        "--policy", POLICY, "--mode", "dontAsk", "--tool", "run_bash", "--input", push,
    ]));
    assert_eq!(v["decision"], "deny");
    let rm = r#"{"command":"rm -rf /"}"#;
    let v = json(check().args([
        "--policy",
        POLICY,
        "--mode",
        "bypassPermissions",
        "--tool",
        "run_bash",
        "--input",
        rm,
    ]));
    assert_eq!(v["decision"], "deny");
    let v = json(check().args([
        "--policy",
        POLICY,
        "--mode",
        "plan",
        "--tool",
        "run_bash",
        "--input",
        r#"{"command":"ls"}"#,
    ]));
    assert_eq!(v["decision"], "deny");
}

#[test]
fn bad_input_exits_2() {
    check()
        .args(["--tool", "x", "--input", "{nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not valid JSON"));
    check()
        .args(["--tool", "x", "--mode", "yolo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`yolo`"));
    check()
        .env("AGENT_PERMISSIONS_DENY", "run_bash(rm")
        .args(["--tool", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`run_bash(rm`"));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("p.toml");
    std::fs::write(&bad, "[permissions]\ndeny = [\"read_file\",\n  \"x(\"]\n").unwrap();
    check()
        .args(["--policy", bad.to_str().unwrap(), "--tool", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("p.toml:3").and(predicate::str::contains("`x(`")));
}
