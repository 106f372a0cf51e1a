#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard test` behaviour, through the binary.

use assert_cmd::Command;
use predicates::prelude::*;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

fn test_cmd() -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.arg("test").current_dir(ROOT);
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

#[test]
fn example_cases_pass() {
    test_cmd()
        .args(["examples/policy.toml", "examples/cases.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "PASS  a destructive command hidden after a harmless one is denied",
        ))
        .stdout(predicate::str::contains("run_bash(rm:*)"))
        .stdout(predicate::str::contains(" 0 failed"))
        .stdout(predicate::str::contains("FAIL").not());
}

#[test]
fn failures_exit_1_and_name_the_deciding_rule() {
    let cases = format!("{DATA}/cases-failing.toml");
    test_cmd()
        .args(["examples/policy.toml", &cases])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("PASS  rm is denied: deny by rule `run_bash(rm:*)`"))
        .stdout(predicate::str::contains("FAIL  wrongly expects rm to be allowed: expected allow, got deny by rule `run_bash(rm:*)`"))
        .stdout(predicate::str::contains("FAIL  right decision, wrong rule: expected deny by rule `read_file`, got deny by rule `read_file(**/.env)`"))
        .stdout(predicate::str::contains("1 passed, 2 failed"));
}

#[test]
fn json_output() {
    let cases = format!("{DATA}/cases-failing.toml");
    let out = test_cmd()
        .args(["examples/policy.toml", &cases, "--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["passed"], 1);
    assert_eq!(v["failed"], 2);
    assert_eq!(v["cases"][0]["pass"], true);
    assert_eq!(v["cases"][0]["decision"], "deny");
    assert_eq!(v["cases"][0]["layer"], "perm-rules");
    assert_eq!(v["cases"][0]["rule"], "run_bash(rm:*)");
    assert!(
        v["cases"][0]["source"]
            .as_str()
            .unwrap()
            .contains("policy.toml:")
    );
    assert_eq!(v["cases"][1]["pass"], false);
    assert_eq!(v["cases"][1]["expect"], "allow");
}

#[test]
fn jsonl_cases() {
    let cases = format!("{DATA}/cases.jsonl");
    let out = test_cmd()
        .args(["examples/policy.toml", &cases, "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["passed"], 3, "{v}");
    assert_eq!(v["cases"][2]["name"], "case 3");
}

fn bad(args: &[&str], needle: &str) {
    let out = test_cmd().args(args).assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "`{needle}` not in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let d = |f: &str| format!("{DATA}/{f}");
    bad(&["examples/policy.toml", &d("cases-bad.jsonl")], "line 2");
    bad(
        &["examples/policy.toml", &d("cases-bad-key.toml")],
        "expected",
    );
    bad(
        &["examples/policy.toml", &d("cases-bad-input.toml")],
        "input",
    );
    bad(
        &["examples/policy.toml", &d("missing.toml")],
        "cannot read cases file",
    );
    bad(
        &[&d("bad-rule.toml"), "examples/cases.toml"],
        "run_bash(rm:*",
    );
    bad(&[&d("bad-key.toml"), "examples/cases.toml"], "denny");
    // A usage error is clap's (several lines, with the usage), still exit 2.
    test_cmd()
        .arg(d("bad-key.toml"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("<CASES>"));
}

#[test]
fn help_documents_exit_codes() {
    test_cmd()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit status:"))
        .stdout(predicate::str::contains("1  at least one case failed"));
}
