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
        // A client's own name is the guard tool it maps onto: not a problem.
        .stdout(predicate::str::contains("Bash(ls:*)").not())
        .stdout(predicate::str::contains("9 problem(s)"));
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

/// A temp project with `policy.toml` holding one `[[hooks.command]]` per command.
fn hook_project(commands: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("[permissions]\nallow = [\"read_file\"]\n");
    for c in commands {
        text.push_str(&format!(
            "\n[[hooks.command]]\ncommand = '{c}'\nmatcher = \"run_bash\"\n"
        ));
    }
    std::fs::write(dir.path().join("policy.toml"), text).unwrap();
    std::fs::create_dir(dir.path().join("hooks")).unwrap();
    dir
}

fn write_script(dir: &std::path::Path, name: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("hooks").join(name);
    std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// (code, severity, command) of every problem, and the exit status.
fn hook_problems(dir: &tempfile::TempDir) -> (Vec<(String, String, String)>, i32) {
    let out = lint()
        .current_dir(dir.path())
        .args(["policy.toml", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["code"].as_str().unwrap().to_owned(),
                p["severity"].as_str().unwrap().to_owned(),
                p["command"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    (found, out.status.code().unwrap())
}

#[test]
fn the_example_policy_lints_clean() {
    lint()
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .arg("examples/policy.toml")
        .assert()
        .success()
        .stdout(predicate::str::contains("no problems"));
}

#[test]
fn a_missing_hook_script_is_an_error_with_its_line() {
    let dir = hook_project(&["$CLAUDE_PROJECT_DIR/.claude/hooks/pre_bash.sh"]);
    let (found, code) = hook_problems(&dir);
    assert_eq!(code, 1);
    assert_eq!(
        found,
        vec![(
            "hook-command-missing".to_owned(),
            "error".to_owned(),
            "$CLAUDE_PROJECT_DIR/.claude/hooks/pre_bash.sh".to_owned()
        )]
    );
    let project = dir.path().display().to_string();
    lint()
        .current_dir(dir.path())
        .arg("policy.toml")
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "policy.toml:4: hook command `$CLAUDE_PROJECT_DIR/.claude/hooks/pre_bash.sh`: hook-command-missing:",
        ))
        .stdout(predicate::str::contains(format!(
            "`{project}/.claude/hooks/pre_bash.sh` does not exist"
        )))
        .stdout(predicate::str::contains("1 problem(s)"));
}

#[test]
fn a_non_executable_hook_script_is_an_error() {
    let dir = hook_project(&["./hooks/pre.sh"]);
    write_script(dir.path(), "pre.sh", 0o644);
    let (found, code) = hook_problems(&dir);
    assert_eq!(code, 1);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "hook-command-missing");
    lint()
        .current_dir(dir.path())
        .arg("policy.toml")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("is not executable (`chmod +x"));
}

#[test]
fn resolvable_hook_commands_are_clean() {
    let dir = hook_project(&[
        "$CLAUDE_PROJECT_DIR/hooks/pre.sh",
        "\"${CLAUDE_PROJECT_DIR}/hooks/pre.sh\" --flag",
        "hooks/pre.sh",
        "MODE=strict ./hooks/pre.sh",
        "exec ./hooks/pre.sh",
        "cat",
        "exit 2",
        "bash hooks/pre.sh",
        "sh -c \"exit 0\"",
    ]);
    write_script(dir.path(), "pre.sh", 0o755);
    let (found, code) = hook_problems(&dir);
    assert_eq!(found, vec![], "no problems expected");
    assert_eq!(code, 0);
}

#[test]
fn a_program_missing_from_path_or_an_interpreters_missing_script_is_an_error() {
    let dir = hook_project(&[
        "agent-guard-no-such-program --check",
        "bash hooks/missing.sh",
    ]);
    let (found, code) = hook_problems(&dir);
    assert_eq!(code, 1);
    let codes: Vec<&str> = found.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(codes, vec!["hook-command-missing", "hook-command-missing"]);
    lint()
        .current_dir(dir.path())
        .arg("policy.toml")
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "`agent-guard-no-such-program` is not a program on PATH",
        ))
        .stdout(predicate::str::contains("runs the script"));
}

#[test]
fn shell_syntax_in_a_hook_command_is_a_warning_only() {
    let dir = hook_project(&[
        "$(which checker)",
        "if true; then exit 0; fi",
        "$AGENT_GUARD_LINT_SURELY_UNSET/x.sh",
    ]);
    let (found, code) = hook_problems(&dir);
    assert_eq!(code, 0, "warnings do not fail the lint");
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found
            .iter()
            .all(|(c, s, _)| c == "hook-command-unchecked" && s == "warning"),
        "{found:?}"
    );
    lint()
        .current_dir(dir.path())
        .arg("policy.toml")
        .assert()
        .success()
        .stdout(predicate::str::contains("no problems, 3 warning(s)"));
}

#[test]
fn project_option_sets_claude_project_dir() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("hooks")).unwrap();
    write_script(project.path(), "pre.sh", 0o755);
    let elsewhere = hook_project(&["$CLAUDE_PROJECT_DIR/hooks/pre.sh"]);
    lint()
        .current_dir(elsewhere.path())
        .arg("policy.toml")
        .assert()
        .code(1);
    lint()
        .current_dir(elsewhere.path())
        .args(["policy.toml", "--project"])
        .arg(project.path())
        .assert()
        .success();
}
