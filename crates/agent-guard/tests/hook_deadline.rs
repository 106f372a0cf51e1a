//! Issue 29 item 1 through the real binaries: a hook answers before its client's deadline,
//! whatever the filesystem does. Each test fails (times out) without the fix: before it, a FIFO
//! named `x.pem` or `sub/.git` blocked the judgement forever, and a stdin that never closed
//! kept the hook waiting past every client's timeout, after which the clients run the call.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const POLICY: &str = r#"
[permissions]
default = "allow"
allow = ["read_file", "file_write", "run_bash", "Read", "Write"]
[hooks]
audit = false
"#;

const HOOKS: [(&str, &str, &str, &str); 3] = [
    ("claude-hook", "PreToolUse", "Read", "Write"),
    ("codex-hook", "PreToolUse", "Read", "Write"),
    ("gemini-hook", "BeforeTool", "read_file", "write_file"),
];

/// Longer than any judgement here takes, shorter than forever: a test that reaches it failed.
const LIMIT: Duration = Duration::from_secs(25);

struct Fixture {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    policy: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("proj");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let policy = tmp.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    Fixture {
        project: project.canonicalize().unwrap(),
        home: home.canonicalize().unwrap(),
        policy,
        _tmp: tmp,
    }
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

fn spawn(fx: &Fixture, sub: &str, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-guard"));
    cmd.arg(sub)
        .arg("--policy")
        .arg(&fx.policy)
        .env("HOME", &fx.home)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("GEMINI_PROJECT_DIR")
        .env_remove("AGENT_GUARD_HOOK_DEADLINE_MS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Waits for `child` at most [`LIMIT`]; a hook still running then is killed and fails the test.
fn finish(mut child: Child, what: &str) -> (Output, Duration) {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), started.elapsed());
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: the hook did not answer within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The refusal in each client's protocol: exit 2, or a JSON deny.
fn refused(out: &Output) -> bool {
    if out.status.code() == Some(2) {
        return true;
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let text = v.to_string();
    out.status.code() == Some(0) && (text.contains("\"deny\"") || text.contains("\"block\""))
}

fn event(fx: &Fixture, event: &str, tool: &str, input: Value) -> String {
    json!({
        "session_id": "s1", "transcript_path": "/dev/null", "cwd": fx.project,
        "hook_event_name": event, "tool_name": tool, "tool_input": input,
        "tool_use_id": "t1", "turn_id": "u1",
    })
    .to_string()
}

#[test]
fn a_fifo_named_like_a_key_or_a_git_pointer_never_stalls_a_hook() {
    let fx = fixture();
    mkfifo(&fx.project.join("x.pem"));
    mkfifo(&fx.project.join("sub/.git"));
    for (sub, name, read, write) in HOOKS {
        for (tool, input) in [
            (read, json!({"file_path": fx.project.join("x.pem")})),
            (
                write,
                json!({"file_path": fx.project.join("sub/a.txt"), "content": "x"}),
            ),
        ] {
            let mut child = spawn(&fx, sub, &[]);
            let mut stdin = child.stdin.take().unwrap();
            stdin
                .write_all(event(&fx, name, tool, input.clone()).as_bytes())
                .unwrap();
            drop(stdin);
            let (out, _) = finish(child, &format!("{sub} {tool} {input}"));
            assert!(
                matches!(out.status.code(), Some(0 | 2)),
                "{sub} {tool}: {out:?}"
            );
            if tool == read {
                // A FIFO is never handed to a reader.
                assert!(refused(&out), "{sub} {tool}: {out:?}");
            }
        }
    }
}

#[test]
fn a_hook_whose_judgement_never_ends_refuses_at_its_deadline() {
    let fx = fixture();
    for (sub, _, _, _) in HOOKS {
        // The client writes the event but never closes stdin: the judgement waits forever.
        let mut child = spawn(&fx, sub, &[("AGENT_GUARD_HOOK_DEADLINE_MS", "1500")]);
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"{\"hook_event_name\":").unwrap();
        let (out, took) = finish(child, sub);
        drop(stdin);
        assert!(refused(&out), "{sub}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("did not finish judging"), "{sub}: {stderr}");
        assert!(took >= Duration::from_millis(1400), "{sub}: {took:?}");
    }
}

#[test]
fn a_judgement_that_finishes_is_answered_as_judged() {
    let fx = fixture();
    // An hour asked for cannot lengthen the deadline past the client's timeout; a call judged
    // in time gets its own answer, not the deadline's.
    let mut child = spawn(
        &fx,
        "claude-hook",
        &[("AGENT_GUARD_HOOK_DEADLINE_MS", "3600000")],
    );
    let mut stdin = child.stdin.take().unwrap();
    let src = fx.project.join("sub/a.rs");
    std::fs::write(&src, "fn a() {}\n").unwrap();
    stdin
        .write_all(event(&fx, "PreToolUse", "Read", json!({"file_path": src})).as_bytes())
        .unwrap();
    drop(stdin);
    let (out, _) = finish(child, "claude-hook");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn a_fifo_at_the_policy_path_is_refused_at_once() {
    let fx = fixture();
    let fifo = fx.project.join("policy.toml");
    mkfifo(&fifo);
    for (sub, name, read, _) in HOOKS {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-guard"))
            .arg(sub)
            .arg("--policy")
            .arg(&fifo)
            .env("HOME", &fx.home)
            .env_remove("AGENT_GUARD_HOOK_DEADLINE_MS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let src = fx.project.join("sub/a.rs");
        stdin
            .write_all(event(&fx, name, read, json!({"file_path": src})).as_bytes())
            .unwrap();
        drop(stdin);
        let (out, _) = finish(child, sub);
        assert!(refused(&out), "{sub}: {out:?}");
        let text = format!("{out:?}");
        assert!(text.contains("not a regular file"), "{sub}: {text}");
    }
}
