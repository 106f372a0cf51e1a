//! Hook mode's runtime limits and allow-once codes, through the real hook binaries with
//! recorded-shape event JSON, on SQLite and (with `AGENT_GUARD_TEST_PG_URL`) PostgreSQL:
//! every hook call is its own process, so the session's state lives in the audit database.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command as Std, Stdio};

use assert_cmd::Command;
use serde_json::{Value, json};

/// A project, its policy and the audit database the hooks share.
struct Project {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    policy: PathBuf,
    db: String,
    /// The allow-once grant key (in the temp dir, never the tester's home).
    key: PathBuf,
    kind: &'static str,
}

fn pg_url(test: &str) -> Option<String> {
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

/// One project per backend, with `[limits]` set to `limits`.
fn projects(test: &str, limits: &str) -> Vec<Project> {
    let mut dbs = vec![None];
    dbs.extend(pg_url(test).map(Some));
    dbs.into_iter()
        .map(|pg| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("project");
            std::fs::create_dir_all(&dir).unwrap();
            let policy = tmp.path().join("policy.toml");
            std::fs::write(
                &policy,
                format!(
                    "[permissions]\ndeny = [\"run_bash(make deploy:*)\"]\n\
                     allow = [\"read_file\", \"run_bash(ls:*)\"]\n\
                     [sandbox]\nroots = [\".\"]\n[limits]\n{limits}\n"
                ),
            )
            .unwrap();
            let (db, kind) = match pg {
                Some(url) => (url, "postgres"),
                None => (tmp.path().join("audit.db").display().to_string(), "sqlite"),
            };
            let key = tmp.path().join("grant.key");
            Project {
                _tmp: tmp,
                dir,
                policy,
                db,
                key,
                kind,
            }
        })
        .collect()
}

/// A session id no other test (or earlier run on a shared PostgreSQL database) used.
fn session(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

fn event(p: &Project, session: &str, name: &str, tool: &str, input: Value) -> String {
    json!({
        "session_id": session, "transcript_path": "/dev/null", "cwd": p.dir,
        "permission_mode": "default", "hook_event_name": name,
        "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_01",
    })
    .to_string()
}

const CLEAN_ENV: &[&str] = &[
    "AGENT_PERMISSIONS_DENY",
    "AGENT_PERMISSIONS_ASK",
    "AGENT_PERMISSIONS_ALLOW",
    "AGENT_PERMISSIONS_MODE",
    "AGENT_GUARD_POLICY",
    "AGENT_BLOCK_NETWORK",
    "CLAUDE_PROJECT_DIR",
    "GEMINI_PROJECT_DIR",
    "AGENT_GUARD_APPROVE_VIA",
    "CLAUDECODE",
    "GEMINI_CLI",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
];

fn bin() -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    for var in CLEAN_ENV {
        cmd.env_remove(var);
    }
    // Never the tester's own key; tests that grant name their own.
    cmd.env(
        "AGENT_GUARD_GRANT_KEY_FILE",
        "/nonexistent/agent-guard-test/grant.key",
    );
    cmd
}

/// Runs hook `sub` on `stdin`; it must exit 0. Returns its stdout (empty = no answer).
fn run_hook(p: &Project, sub: &str, stdin: String) -> String {
    let out = bin()
        .env("AGENT_GUARD_GRANT_KEY_FILE", &p.key)
        .arg(sub)
        .arg("--policy")
        .arg(&p.policy)
        .arg("--audit-db")
        .arg(&p.db)
        .write_stdin(stdin)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}: {out:?}", p.kind);
    String::from_utf8(out.stdout).unwrap()
}

/// Claude Code's PreToolUse answer: (decision, reason).
fn claude(p: &Project, session: &str, tool: &str, input: Value) -> (String, String) {
    let text = run_hook(
        p,
        "claude-hook",
        event(p, session, "PreToolUse", tool, input),
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let out = &v["hookSpecificOutput"];
    (
        out["permissionDecision"]
            .as_str()
            .unwrap_or("none")
            .to_owned(),
        out["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// Codex's PreToolUse answer: `None` = allowed (no output), else the deny reason.
fn codex(p: &Project, session: &str, command: &str) -> Option<String> {
    let text = run_hook(
        p,
        "codex-hook",
        event(
            p,
            session,
            "PreToolUse",
            "Bash",
            json!({"command": command}),
        ),
    );
    if text.trim().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{v}");
    Some(out["permissionDecisionReason"].as_str().unwrap().to_owned())
}

fn read(p: &Project, n: usize) -> Value {
    json!({"file_path": p.dir.join(format!("f{n}.txt"))})
}

/// The allow-once code a reason offers (`Allow-once code ABCD-EFGH:` or `Ref ABCD-EFGH.`).
fn code_in(reason: &str) -> String {
    let at = reason
        .find("Allow-once code ")
        .map(|i| i + "Allow-once code ".len())
        .or_else(|| reason.find("(Ref ").map(|i| i + "(Ref ".len()))
        .unwrap_or_else(|| panic!("no code in: {reason}"));
    reason[at..at + 9].to_owned()
}

fn allow_once(p: &Project, code: &str) -> std::process::Output {
    bin()
        .env("AGENT_GUARD_GRANT_KEY_FILE", &p.key)
        .args(["allow-once", code, "--audit-db", &p.db])
        .output()
        .unwrap()
}

#[test]
fn the_call_past_the_session_cap_is_denied_and_other_sessions_run() {
    for p in projects("hook_limits_cap", "max_session_calls = 3") {
        let s1 = session("cap");
        let s2 = session("other");
        for n in 0..3 {
            assert_eq!(
                claude(&p, &s1, "Read", read(&p, n)).0,
                "allow",
                "{}",
                p.kind
            );
            // The PermissionRequest Claude Code may send about the same call is not a second
            // call of the session.
            run_hook(
                &p,
                "claude-hook",
                event(&p, &s1, "PermissionRequest", "Read", read(&p, n)),
            );
        }
        let (decision, reason) = claude(&p, &s1, "Read", read(&p, 3));
        assert_eq!(decision, "deny", "{}", p.kind);
        assert!(reason.contains("max_session_calls"), "{reason}");
        assert!(reason.contains("made 4 tool calls"), "{reason}");
        assert!(reason.contains("allows 3 per session"), "{reason}");
        assert!(reason.contains("`[limits] max_session_calls`"), "{reason}");
        assert_eq!(
            claude(&p, &s2, "Read", read(&p, 0)).0,
            "allow",
            "{}: another session is unaffected",
            p.kind
        );
    }
}

#[test]
fn the_third_identical_call_in_a_row_is_refused() {
    for p in projects("hook_limits_duplicates", "") {
        let s = session("dup");
        let same = |order: bool| {
            if order {
                json!({"file_path": p.dir.join("a.txt"), "limit": 10})
            } else {
                // The same input with its keys in another order: canonically identical.
                serde_json::from_str(&format!(
                    r#"{{"limit": 10, "file_path": {}}}"#,
                    json!(p.dir.join("a.txt"))
                ))
                .unwrap()
            }
        };
        assert_eq!(claude(&p, &s, "Read", same(true)).0, "allow");
        assert_eq!(claude(&p, &s, "Read", same(false)).0, "allow");
        let (decision, reason) = claude(&p, &s, "Read", same(true));
        assert_eq!(decision, "deny", "{}", p.kind);
        assert!(reason.contains("duplicate_call"), "{reason}");
        assert!(reason.contains("3 times in a row"), "{reason}");
        assert!(
            reason.contains("`[limits] duplicate_threshold`"),
            "{reason}"
        );
        assert_eq!(
            claude(&p, &s, "Read", read(&p, 9)).0,
            "allow",
            "a different call ends the run"
        );
    }
}

#[test]
fn concurrent_hook_processes_of_one_session_count_exactly() {
    for p in projects("hook_limits_concurrent", "max_session_calls = 6") {
        let s = session("par");
        // The first call creates the database, as a session's first call does.
        assert_eq!(claude(&p, &s, "Read", read(&p, 100)).0, "allow");
        let exe = assert_cmd::cargo::cargo_bin("agent-guard");
        let children: Vec<_> = (0..10)
            .map(|n| {
                let mut cmd = Std::new(&exe);
                for var in CLEAN_ENV {
                    cmd.env_remove(var);
                }
                let mut child = cmd
                    .env("AGENT_GUARD_GRANT_KEY_FILE", &p.key)
                    .arg("claude-hook")
                    .arg("--policy")
                    .arg(&p.policy)
                    .arg("--audit-db")
                    .arg(&p.db)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let stdin = event(&p, &s, "PreToolUse", "Read", read(&p, n));
                std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes())
                    .unwrap();
                child
            })
            .collect();
        let mut allowed = 0;
        let mut capped = 0;
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let o = &v["hookSpecificOutput"];
            match o["permissionDecision"].as_str().unwrap() {
                "allow" => allowed += 1,
                "deny" => {
                    assert!(
                        o["permissionDecisionReason"]
                            .as_str()
                            .unwrap()
                            .contains("max_session_calls"),
                        "{v}"
                    );
                    capped += 1;
                }
                other => panic!("{other}: {v}"),
            }
        }
        // Calls 2..=6 of the session fit under the cap, 7..=11 do not: none lost, none twice.
        assert_eq!((allowed, capped), (5, 5), "{}", p.kind);
    }
}

#[test]
fn a_grant_lets_exactly_that_call_through_once() {
    for p in projects("hook_allow_once", "") {
        let s = session("grant");
        // Codex cannot ask: the Ask becomes a deny that carries a code.
        let reason = codex(&p, &s, "npm install").expect("denied");
        assert!(reason.contains("agent-guard allow-once "), "{reason}");
        let code = code_in(&reason);

        let out = allow_once(&p, &code);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("granted"), "{said}");
        assert!(
            said.contains("npm install"),
            "the person sees the call: {said}"
        );

        // Another call does not use it; a second grant of the code is refused.
        assert!(codex(&p, &s, "npm install left-pad").is_some());
        assert!(codex(&p, &session("elsewhere"), "npm install").is_some());
        assert_eq!(allow_once(&p, &code).status.code(), Some(1));

        assert_eq!(
            codex(&p, &s, "npm install"),
            None,
            "{}: granted once",
            p.kind
        );
        let again = codex(&p, &s, "npm install").expect("consumed: denied again");
        assert_ne!(code_in(&again), code, "a new refusal, a new code");
    }
}

#[test]
fn claude_answers_allow_for_a_granted_write_outside_the_roots() {
    for p in projects("hook_allow_once_claude", "") {
        let s = session("claude");
        let outside = p.dir.parent().unwrap().join("notes.txt");
        let input = json!({"file_path": outside, "content": "hi"});
        let (decision, reason) = claude(&p, &s, "Write", input.clone());
        assert_eq!(decision, "deny", "{reason}");
        assert!(reason.contains("outside_roots"), "{reason}");
        assert_eq!(allow_once(&p, &code_in(&reason)).status.code(), Some(0));
        let (decision, reason) = claude(&p, &s, "Write", input.clone());
        assert_eq!(decision, "allow", "{}: {reason}", p.kind);
        assert!(reason.contains("allow-once"), "{reason}");
        assert_eq!(claude(&p, &s, "Write", input).0, "deny");
        assert!(
            p.key.exists(),
            "the grant key lives where the person's grant put it"
        );
    }
}

#[test]
fn configured_denies_and_catastrophes_are_never_granted() {
    for p in projects("hook_allow_once_final", "") {
        let s = session("final");
        for (command, why) in [
            (
                "make deploy --prod",
                "configured rule `run_bash(make deploy:*)`",
            ),
            ("rm -rf ~", "catastrophic class"),
            // bash-guard reports the fork bomb under the function's definition.
            (":(){ :|:& };:", "is not one allow-once lifts"),
        ] {
            let reason = codex(&p, &s, command).expect("denied");
            assert!(
                reason.contains("allow-once cannot lift this refusal"),
                "{command}: {reason}"
            );
            let code = code_in(&reason);
            let out = allow_once(&p, &code);
            assert_eq!(out.status.code(), Some(1), "{command}: {out:?}");
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(said.contains("not granted"), "{said}");
            assert!(said.contains(why), "{command}: {said}");
            assert!(codex(&p, &s, command).is_some(), "{}: still denied", p.kind);
        }
    }
}

#[test]
fn allow_once_needs_the_audit_database_and_a_person() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("none.db");
    let out = bin()
        .args(["allow-once", "ABCD-EFGH", "--audit-db"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs the audit database"), "{err}");
    assert!(!missing.exists(), "it does not create one");

    let out = bin()
        .args(["allow-once", "not-a-code", "--audit-db"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // In an agent's tool shell it refuses before touching anything.
    let out = bin()
        .env("CLAUDECODE", "1")
        .args(["allow-once", "ABCD-EFGH", "--audit-db"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot grant its own calls"));
}

#[test]
fn without_an_audit_database_hooks_behave_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    for _ in 0..4 {
        let out = bin()
            .arg("codex-hook")
            .write_stdin(
                json!({"session_id": "s", "cwd": dir, "hook_event_name": "PreToolUse",
                    "tool_name": "Bash", "tool_input": {"command": "npm install"}})
                .to_string(),
            )
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("deny"), "{text}");
        assert!(!text.contains("allow-once"), "no database, no code: {text}");
        assert!(
            !text.contains("duplicate_call"),
            "no ledger, no limits: {text}"
        );
    }
    assert!(!Path::new(&dir.join(".agent-guard")).exists());
}

#[test]
fn gemini_before_tool_counts_and_shows_a_code() {
    for p in projects("hook_limits_gemini", "max_session_calls = 1") {
        let s = session("gemini");
        let gemini = |input: Value| -> String {
            run_hook(
                &p,
                "gemini-hook",
                event(&p, &s, "BeforeTool", "read_file", input),
            )
        };
        assert_eq!(
            gemini(json!({"file_path": p.dir.join("a")})).trim(),
            "",
            "allowed"
        );
        let text = gemini(json!({"file_path": p.dir.join("b")}));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["decision"], "deny", "{}: {v}", p.kind);
        let reason = v["reason"].as_str().unwrap();
        assert!(reason.contains("max_session_calls"), "{reason}");
        assert!(reason.contains("Allow-once code "), "{reason}");
    }
}

#[test]
fn a_patch_of_several_files_gets_no_grantable_code() {
    for p in projects("hook_allow_once_patch", "") {
        let s = session("patch");
        let outside = p.dir.parent().unwrap().join("x.txt");
        let patch = format!(
            "*** Begin Patch\n*** Add File: {}\n+a\n*** Add File: inside.txt\n+b\n*** End Patch\n",
            outside.display()
        );
        let text = run_hook(
            &p,
            "codex-hook",
            event(
                &p,
                &s,
                "PreToolUse",
                "apply_patch",
                json!({"command": patch}),
            ),
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(reason.contains("outside_roots"), "{reason}");
        assert!(
            reason.contains("judged as 2 separate calls"),
            "{}: {reason}",
            p.kind
        );
        assert_eq!(allow_once(&p, &code_in(reason)).status.code(), Some(1));
    }
}
