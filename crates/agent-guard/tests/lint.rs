#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard lint` behaviour, through the binary.

use assert_cmd::Command;
use predicates::prelude::*;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

fn lint() -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.arg("lint").current_dir(DATA);
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

fn problems(policy: &str) -> Vec<(String, String)> {
    let out = lint()
        .args([policy, "--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["code"].as_str().unwrap().to_owned(),
                p["rule"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn finds_every_kind_of_problem() {
    let found = problems("lint-problems.toml");
    let want = [
        ("shadowed", "run_bash(git:*)"),
        ("shadowed", "run_bash(python:*)"),
        ("allows-everything", "run_bash(python:*)"),
        ("shadowed", "web_fetch(domain:docs.rs)"),
        ("unknown-tool", "Bash(ls:*)"),
        ("unknown-tool", "reed_file"),
        ("shadowed", "file_write(/etc/hosts)"),
        ("outside-roots", "file_write(/etc/hosts)"),
        ("outside-roots", "read_file(/opt/data/**)"),
        ("duplicate", "glob_files"),
    ];
    for (code, rule) in want {
        assert!(
            found.contains(&(code.to_owned(), rule.to_owned())),
            "missing {code} {rule} in {found:?}"
        );
    }
    assert_eq!(found.len(), want.len(), "{found:?}");
    // The deny rules themselves and the one good allow rule are not reported.
    assert!(
        !found
            .iter()
            .any(|(_, r)| r == "run_bash" || r == "file_write(/etc/**)")
    );
}

#[test]
fn text_output_names_file_line_and_the_winning_rule() {
    lint()
        .arg("lint-problems.toml")
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "lint-problems.toml:6: allow rule `run_bash(git:*)`: shadowed: can never decide: deny rule `run_bash`",
        ))
        .stdout(predicate::str::contains("did you mean `run_bash`?"))
        .stdout(predicate::str::contains("10 problem(s)"));
}

#[test]
fn a_clean_policy_exits_0() {
    lint()
        .env("AGENT_PERMISSIONS_DENY", "run_bash")
        .arg("lint-clean.toml")
        .assert()
        .success()
        .stdout(predicate::str::contains("8 rules, no problems"));
    let out = lint()
        .args(["lint-clean.toml", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["problems"], serde_json::json!([]));
    assert_eq!(v["rules"], 8);
}

#[test]
fn interpreters_and_shells_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    for rule in [
        "run_bash(bash:*)",
        "run_bash(sh -c:*)",
        "run_bash(env:*)",
        "run_bash(xargs:*)",
        "run_bash(node:*)",
        "run_bash",
        "*",
    ] {
        std::fs::write(&path, format!("[permissions]\nallow = [\"{rule}\"]\n")).unwrap();
        let found = problems(path.to_str().unwrap());
        assert!(
            found.contains(&("allows-everything".to_owned(), rule.to_owned())),
            "{rule}: {found:?}"
        );
    }
}

#[test]
fn bad_policy_exits_2_with_one_line() {
    for (file, needle) in [
        ("bad-rule.toml", "run_bash(rm:*"),
        ("bad-key.toml", "denny"),
        ("missing.toml", "cannot read policy file"),
    ] {
        let out = lint().arg(file).assert().code(2).get_output().clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(needle), "`{needle}` not in {err}");
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn help_documents_exit_codes() {
    lint()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit status:"))
        .stdout(predicate::str::contains("1  problems found"));
}
