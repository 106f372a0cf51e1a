#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard exec` end to end: validation, refusal, confined run.

use assert_cmd::Command;
use serde_json::Value;

/// `agent-guard exec --json` of `command` in `dir`, its only root.
fn exec_command(dir: &std::path::Path, extra: &[&str], command: &str) -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.arg("exec")
        .arg("--json")
        .arg("--root")
        .arg(dir)
        .arg("--cwd")
        .arg(dir)
        .args(extra)
        .arg("--")
        .arg(command);
    cmd
}

fn exec(dir: &std::path::Path, extra: &[&str], command: &str) -> (Value, i32) {
    run_json(exec_command(dir, extra, command))
}

/// Runs `cmd`: its one JSON object and its exit status.
fn run_json(mut cmd: Command) -> (Value, i32) {
    let out = cmd.output().unwrap();
    (json_of(&out), out.status.code().unwrap_or(-1))
}

/// `agent-guard exec --json ARGS` of `command` (quoted for bash) in `dir`, its only root, started
/// by bash after `setup` (what a caller does to its descriptors first).
fn exec_after(setup: &str, dir: &std::path::Path, args: &str, command: &str) -> Value {
    let script = format!(
        "{setup}; exec '{bin}' exec --json {args} --root '{dir}' --cwd '{dir}' -- {command}",
        bin = assert_cmd::cargo::cargo_bin("agent-guard").display(),
        dir = dir.display(),
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    json_of(&out)
}

/// The JSON object a `--json` run printed.
fn json_of(out: &std::process::Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_read_only_command_runs_confined() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "content\n").unwrap();
    let (v, code) = exec(dir.path(), &[], "cat f.txt");
    assert_eq!(v["ran"], true, "{v}");
    assert_eq!(code, 0);
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["stdout"], "content\n");
    assert_eq!(v["truncated"], false);
    assert_eq!(v["timed_out"], false);
    assert_eq!(
        v["confinement"]["landlock"]["status"], "fully_enforced",
        "{v}"
    );
    assert_eq!(v["confinement"]["landlock"]["network_blocked"], true);
    assert_eq!(v["confinement"]["cgroup"], true, "{v}");
}

/// The command's environment is filtered from the caller's; a variable that is not UTF-8 is
/// left out, and neither stops the run nor crashes the CLI.
#[test]
fn a_variable_that_is_not_utf8_is_left_out_of_the_command_s_environment() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = exec_command(dir.path(), &[], "echo \"${LC_GOOD}:${LC_BADBYTES-unset}\"");
    cmd.env("LC_BADBYTES", std::ffi::OsStr::from_bytes(b"\xff\xfe"))
        .env("LC_GOOD", "kept");
    let (v, _) = run_json(cmd);
    assert_eq!(v["ran"], true, "{v}");
    assert_eq!(v["stdout"], "kept:unset\n", "{v}");
}

#[test]
fn a_denied_command_is_refused_and_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let (v, code) = exec(dir.path(), &["--yes"], "rm -rf /");
    assert_eq!(code, 1);
    assert_eq!(v["ran"], false);
    assert_eq!(v["decision"], "deny");
    assert!(!v["reasons"].as_array().unwrap().is_empty());
}

#[test]
fn an_ask_needs_yes() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = "/usr/bin/python3 -c \"open('made','w').write('x')\"";
    let (v, code) = exec(dir.path(), &[], cmd);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["decision"], "ask");
    assert!(!dir.path().join("made").exists());
    let (v, code) = exec(dir.path(), &["--yes"], cmd);
    assert_eq!(code, 0, "{v}");
    assert!(dir.path().join("made").exists());
}

#[test]
fn a_hidden_write_outside_the_roots_is_stopped_by_the_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let target = outside.path().join("escape");
    let cmd = format!("/usr/bin/python3 -c \"open('{}','w')\"", target.display());
    let (v, code) = exec(dir.path(), &["--yes"], &cmd);
    assert_eq!(v["ran"], true, "{v}");
    assert_ne!(code, 0);
    assert!(
        v["stderr"].as_str().unwrap().contains("PermissionError"),
        "{v}"
    );
    assert!(!target.exists());
}

#[test]
fn timeout_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (v, code) = exec(dir.path(), &["--yes", "--timeout", "1"], "sleep 30");
    assert_eq!(v["timed_out"], true, "{v}");
    assert_eq!(code, 124);
}

/// Issue 29: a descriptor the caller left open (`7>file`, file outside every root) reached the
/// confined command, which wrote through it. The command starts with 0-2 only now.
#[test]
fn an_inherited_descriptor_does_not_reach_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let target = outside.path().join("through-fd-7");
    // The parent shell opens fd 7 without close-on-exec, as any caller's redirect would.
    let v = exec_after(
        &format!("exec 7>'{}'", target.display()),
        dir.path(),
        "--yes",
        "\"python3 -c 'import os; os.write(7, b\\\"pwned\\\")'; ls /proc/self/fd\"",
    );
    assert_eq!(v["ran"], true, "{v}");
    assert_eq!(std::fs::read(&target).unwrap(), b"", "{v}");
    assert!(
        v["stderr"]
            .as_str()
            .unwrap()
            .contains("Bad file descriptor"),
        "{v}"
    );
    assert_eq!(v["confinement"]["inherited_fds_closed"], true, "{v}");
    // `ls` itself holds one descriptor on the directory it lists: 0-2 and that one.
    let fds: Vec<&str> = v["stdout"].as_str().unwrap().split_whitespace().collect();
    assert_eq!(fds, ["0", "1", "2", "3"], "{v}");
}

/// `exec` forks its sandbox trampoline and runs it apart from its own CPU while it judges the
/// command; the command still gets every CPU its caller had.
#[test]
fn the_command_runs_on_its_caller_s_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let ours = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = |status: &str| {
        status
            .lines()
            .find(|l| l.starts_with("Cpus_allowed_list:"))
            .map(str::to_owned)
    };
    let (v, code) = exec(
        dir.path(),
        &["--yes"],
        "grep Cpus_allowed_list /proc/self/status",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(line(v["stdout"].as_str().unwrap()), line(&ours), "{v}");
}

/// A caller that closed its standard input and error still gets a confined run with both of the
/// command's outputs (the forked trampoline's socket and pipes are set up in their place).
#[test]
fn a_caller_without_standard_input_and_error_runs_confined() {
    let dir = tempfile::tempdir().unwrap();
    let v = exec_after("exec 0<&- 2>&-", dir.path(), "", "'echo hi; echo err >&2'");
    assert_eq!(v["ran"], true, "{v}");
    assert_eq!(v["stdout"], "hi\n", "{v}");
    assert_eq!(v["stderr"], "err\n", "{v}");
    assert_eq!(
        v["confinement"]["landlock"]["status"], "fully_enforced",
        "{v}"
    );
}

/// Issue 29: nothing capped the bytes a run wrote in all (5 GiB in one run, each file under
/// `RLIMIT_FSIZE`). A run past `max_written_bytes` is stopped; one under it is not.
#[test]
fn a_run_that_writes_past_its_cap_is_stopped() {
    // On the target dir's file system: tmpfs is memory (the memory cap's), not disk.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "[bash.exec]\nmax_written_bytes = 8388608\n").unwrap();
    let policy = policy.display().to_string();
    // Files of 4 MiB each, under the per-file cap, 64 MiB in all: the run must not reach the end.
    let many = "for i in $(seq 16); do head -c 4194304 /dev/zero > f$i; done; sleep 20; echo done";
    let (v, _) = exec(dir.path(), &["--yes", "--policy", &policy], many);
    assert_eq!(v["ran"], true, "{v}");
    assert_eq!(v["write_cap_exceeded"], true, "{v}");
    assert_ne!(v["stdout"], "done\n", "{v}");
    assert!(v["bytes_written"].as_u64().unwrap() > 8388608, "{v}");
    let (v, code) = exec(
        dir.path(),
        &["--yes", "--policy", &policy],
        "head -c 1048576 /dev/zero > small; echo done",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["write_cap_exceeded"], false, "{v}");
    assert_eq!(v["stdout"], "done\n", "{v}");
}
