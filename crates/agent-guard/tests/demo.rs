//! `agent-guard demo` and `agent-guard run` through the built binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use assert_cmd::Command;
use serde_json::Value;

fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn calls_of(v: &Value) -> &Vec<Value> {
    v["calls"].as_array().unwrap()
}

fn find<'a>(v: &'a Value, tool: &str, arg_has: &str) -> &'a Value {
    calls_of(v)
        .iter()
        .find(|c| c["tool"] == tool && c["args"].to_string().contains(arg_has))
        .unwrap_or_else(|| panic!("no `{tool}` call with `{arg_has}` in {v}"))
}

#[test]
fn demo_hits_every_kind_of_decision_and_audits_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("audit.db");
    let v = json_of(
        Command::cargo_bin("agent-guard")
            .unwrap()
            .args(["demo", "--json", "--audit-db"])
            .arg(&db),
    );
    // Allowed reads ran.
    let read = find(&v, "read_file", "papers/attention.md");
    assert_eq!(read["decision"], "allow");
    assert_eq!(read["executed"], true);
    // The redaction hook masked the key before the model saw it.
    assert!(
        !read["content"]
            .as_str()
            .unwrap()
            .contains("AKIAIOSFODNN7EXAMPLE")
    );
    // A pipeline whose every command is allowed by its own rule ran, confined.
    let ls = find(&v, "run_bash", "ls papers");
    assert_eq!(ls["decision"], "allow");
    assert_eq!(ls["is_error"], false, "{ls}");
    assert_eq!(ls["content"].as_str().unwrap().trim(), "2");
    // A config deny (layer 2) never ran.
    let env = find(&v, "read_file", ".env");
    assert_eq!(env["decision"], "deny");
    assert_eq!(env["executed"], false);
    assert_eq!(env["layer"], "perm-rules");
    // bash-guard asked about a write inside the project; the default approver (`no`) refused it.
    let py = find(&v, "run_bash", "tee notes/square.txt");
    assert_eq!(py["decision"], "ask");
    assert_eq!(py["executed"], false);
    assert_eq!(py["layer"], "bash-guard");
    // The third identical call in a row was refused by layer 7.
    let dups: Vec<&Value> = calls_of(&v)
        .iter()
        .filter(|c| c["args"].to_string().contains("notes/summary.md") && c["tool"] == "read_file")
        .collect();
    assert_eq!(dups.len(), 3);
    assert_eq!(dups[2]["code"], "duplicate_call");
    assert_eq!(dups[2]["executed"], false);
    // The subagent ran and the step limit ended the turn.
    assert_eq!(find(&v, "subagent", "RLHF")["executed"], true);
    assert_eq!(v["stop"], "max_steps");
    // One audit row per lead call (refusals included), in the file we asked for.
    let rows = v["audit_rows"].as_array().unwrap();
    let lead_rows = rows
        .iter()
        .filter(|r| r["agent_name"] == "lead" && r["status"] != "SESSION_STOP")
        .count();
    assert_eq!(lead_rows, calls_of(&v).len());
    // And the seed's SESSION_STOP row when the session ends.
    assert_eq!(
        rows.iter()
            .filter(|r| r["agent_name"] == "lead" && r["status"] == "SESSION_STOP")
            .count(),
        1,
        "{rows:?}"
    );
    assert!(db.is_file());
    // The subagent's calls are audited under its own agent name: its search ran, its read
    // outside the sandbox and its `ask_user` (not in the explore tool set) did not.
    let child: Vec<&Value> = rows
        .iter()
        .filter(|r| r["agent_name"] == "explore")
        .collect();
    assert!(
        child
            .iter()
            .any(|r| r["tool_name"] == "grep_files" && r["status"] == "OK"),
        "{child:?}"
    );
    assert!(
        child
            .iter()
            .any(|r| r["tool_name"] == "read_file" && r["status"] != "OK"),
        "{child:?}"
    );
}

#[test]
fn demo_with_approval_runs_the_asked_command() {
    let v = json_of(Command::cargo_bin("agent-guard").unwrap().args([
        "demo",
        "--json",
        "--approve",
        "yes",
    ]));
    let py = find(&v, "run_bash", "tee notes/square.txt");
    assert_eq!(py["decision"], "ask");
    assert_eq!(py["executed"], true);
    // It really ran, confined by this binary as the trampoline.
    assert_eq!(py["is_error"], false, "{py}");
    assert!(py["content"].as_str().unwrap().contains("262144"), "{py}");
}

#[test]
fn run_replays_a_user_script() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "hello\n").unwrap();
    let script = tmp.path().join("s.json");
    std::fs::write(
        &script,
        r#"{"prompt":"read a.txt","turns":[
            {"tool_calls":[{"id":"1","name":"read_file","arguments":{"file_path":"a.txt"}},
                           {"id":"2","name":"file_write","arguments":{"file_path":"../escape.txt","content":"x"}}]},
            {"content":"done"}]}"#,
    )
    .unwrap();
    let v = json_of(
        Command::cargo_bin("agent-guard")
            .unwrap()
            .args(["run", "--json", "--approve", "yes", "--script"])
            .arg(&script)
            .arg("--cwd")
            .arg(tmp.path())
            .arg("--audit-db")
            .arg(tmp.path().join("audit.db")),
    );
    assert_eq!(find(&v, "read_file", "a.txt")["executed"], true);
    // Approved by the person, then refused by the sandbox: the write never left the root.
    let esc = find(&v, "file_write", "escape");
    assert_eq!(esc["is_error"], true);
    assert_eq!(esc["layer"], "fs-sandbox");
    assert!(!tmp.path().parent().unwrap().join("escape.txt").exists());
    assert_eq!(v["answer"], "done");
}

#[test]
fn run_rejects_a_malformed_script_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("bad.json");
    std::fs::write(&script, "{not json").unwrap();
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["run", "--script"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad script"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Issue 29: the runtime's `run_bash` passed descriptors >= 3 on too (a write outside every
/// root through fd 7), and nothing capped what one run wrote in all.
#[test]
fn the_runtimes_bash_inherits_no_descriptor_and_is_stopped_past_its_write_cap() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let target = outside.path().join("through-fd-7");
    std::fs::write(
        tmp.path().join("policy.toml"),
        "[bash.exec]\nmax_written_bytes = 8388608\n",
    )
    .unwrap();
    let script = tmp.path().join("s.json");
    let calls = serde_json::json!({"prompt": "go", "turns": [
        {"tool_calls": [
            {"id": "1", "name": "run_bash",
             "arguments": {"command": "python3 -c 'import os; os.write(7, b\"pwned\")'"}},
            {"id": "2", "name": "run_bash",
             "arguments": {"command": "for i in $(seq 16); do head -c 4194304 /dev/zero > f$i; done; sleep 20; echo finished"}}]},
        {"content": "done"}]});
    std::fs::write(&script, calls.to_string()).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("agent-guard");
    // fd 7 open without close-on-exec in the process that starts `run`.
    let shell = format!(
        "exec 7>'{target}'; exec '{bin}' run --json --approve yes --policy '{dir}/policy.toml' \
         --script '{script}' --cwd '{dir}' --audit-db '{dir}/audit.db'",
        target = target.display(),
        bin = bin.display(),
        dir = tmp.path().display(),
        script = script.display(),
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&shell)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(std::fs::read(&target).unwrap(), b"", "{v}");
    let fd = find(&v, "run_bash", "os.write");
    assert!(fd.to_string().contains("Bad file descriptor"), "{fd}");
    let big = find(&v, "run_bash", "head -c");
    let text = big["content"].as_str().unwrap();
    assert!(
        text.contains("max_written_bytes") && !text.contains("finished"),
        "{big}"
    );
}
