//! The audit log through the real hook binaries (issue 28), on SQLite and (with
//! `AGENT_GUARD_TEST_PG_URL`) PostgreSQL: a session is reconstructed from the log alone, no
//! detector's sample secret reaches the database files, a database with a planted trigger is
//! refused, a replayed grant is refused, a held lock yields a deny inside the deadline, and a
//! `--user` install leaves the project untouched.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command as Std, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{Value, json};

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
    "AGENT_GUARD_STATE_DIR",
    "XDG_STATE_HOME",
    "CLAUDECODE",
    "GEMINI_CLI",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
];

/// The client timeout `init` writes (seconds): a hook must answer well before it.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

struct Project {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    policy: PathBuf,
    /// A SQLite path, or a PostgreSQL URL of a database of this test's own.
    db: String,
    key: PathBuf,
    kind: &'static str,
}

impl Project {
    fn sqlite_file(&self) -> Option<PathBuf> {
        (self.kind == "sqlite").then(|| PathBuf::from(&self.db))
    }
}

fn pg_admin(test: &str) -> Option<String> {
    match std::env::var("AGENT_GUARD_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("AGENT_GUARD_TEST_PG_URL is not set but CI is: `{test}` needs PostgreSQL")
        }
        _ => {
            eprintln!(
                "SKIPPED: the PostgreSQL half of `{test}` (AGENT_GUARD_TEST_PG_URL is not set)"
            );
            None
        }
    }
}

fn psql() -> PathBuf {
    for dir in std::fs::read_dir("/usr/lib/postgresql").unwrap().flatten() {
        let p = dir.path().join("bin/psql");
        if p.exists() {
            return p;
        }
    }
    PathBuf::from("psql")
}

/// Runs SQL on a PostgreSQL URL with psql.
fn pg_sql(url: &str, sql: &str) -> String {
    let out = Std::new(psql())
        .args([
            "-X",
            "-q",
            "-t",
            "-A",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-c",
            sql,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "psql {sql}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A database of the test's own on the server (tests that plant triggers or hold locks must
/// not disturb the others).
fn pg_db(admin: &str, name: &str) -> String {
    let db = format!("ag_{name}_{}", std::process::id());
    pg_sql(admin, &format!("DROP DATABASE IF EXISTS {db}"));
    pg_sql(admin, &format!("CREATE DATABASE {db}"));
    let (head, tail) = admin.rsplit_once("/postgres").unwrap();
    format!("{head}/{db}{tail}")
}

fn projects(test: &str, policy: &str) -> Vec<Project> {
    let mut out = Vec::new();
    let mut backends: Vec<Option<String>> = vec![None];
    backends.extend(pg_admin(test).map(|a| Some(pg_db(&a, test))));
    for pg in backends {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("project");
        std::fs::create_dir_all(&dir).unwrap();
        let policy_path = tmp.path().join("policy.toml");
        std::fs::write(&policy_path, policy).unwrap();
        let (db, kind) = match pg {
            Some(url) => (url, "postgres"),
            None => (
                tmp.path().join("state/audit.db").display().to_string(),
                "sqlite",
            ),
        };
        let key = tmp.path().join("keys/grant.key");
        out.push(Project {
            tmp,
            dir,
            policy: policy_path,
            db,
            key,
            kind,
        });
    }
    out
}

const POLICY: &str = "[permissions]\n\
    deny = [\"run_bash(make deploy:*)\"]\n\
    ask = [\"run_bash(make test:*)\"]\n\
    allow = [\"read_file\", \"run_bash(ls:*)\", \"run_bash(cat:*)\"]\n\
    [sandbox]\nroots = [\".\"]\n";

fn bin(p: &Project) -> Command {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    for var in CLEAN_ENV {
        cmd.env_remove(var);
    }
    cmd.env("AGENT_GUARD_GRANT_KEY_FILE", &p.key);
    cmd.env("HOME", p.tmp.path().join("home"));
    cmd
}

fn session(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

/// Runs hook `sub` with `event`; returns (exit code, stdout, stderr).
fn hook(p: &Project, sub: &str, event: Value) -> (i32, String, String) {
    let out = bin(p)
        .arg(sub)
        .arg("--policy")
        .arg(&p.policy)
        .arg("--audit-db")
        .arg(&p.db)
        .write_stdin(event.to_string())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn ev(p: &Project, session: &str, name: &str, tool: &str, input: Value, id: &str) -> Value {
    let mut v = json!({
        "session_id": session, "transcript_path": "/dev/null", "cwd": p.dir,
        "permission_mode": "default", "hook_event_name": name,
        "tool_name": tool, "tool_input": input,
    });
    if !id.is_empty() {
        v["tool_use_id"] = json!(id);
    }
    v
}

fn with(mut v: Value, key: &str, value: Value) -> Value {
    v[key] = value;
    v
}

/// Claude Code's PreToolUse decision (`none` when it left the call to the client).
fn claude_pre(p: &Project, s: &str, command: &str, id: &str) -> (String, String) {
    let (code, out, err) = hook(
        p,
        "claude-hook",
        ev(p, s, "PreToolUse", "Bash", json!({"command": command}), id),
    );
    assert_eq!(code, 0, "{}: {err}", p.kind);
    let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    let o = &v["hookSpecificOutput"];
    (
        o["permissionDecision"]
            .as_str()
            .unwrap_or("none")
            .to_owned(),
        o["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

fn claude_post(p: &Project, s: &str, command: &str, id: &str, stdout: &str, failed: bool) {
    let e = ev(
        p,
        s,
        if failed {
            "PostToolUseFailure"
        } else {
            "PostToolUse"
        },
        "Bash",
        json!({"command": command}),
        id,
    );
    let e = if failed {
        with(
            e,
            "error",
            json!("Exit code 2\nls: cannot access 'missing'"),
        )
    } else {
        with(
            with(
                e,
                "tool_response",
                json!({"stdout": stdout, "stderr": "", "interrupted": false}),
            ),
            "duration_ms",
            json!(44),
        )
    };
    let (code, _, err) = hook(p, "claude-hook", e);
    assert_eq!(code, 0, "{}: {err}", p.kind);
}

fn audit_json(p: &Project, extra: &[&str]) -> Value {
    let out = bin(p)
        .args(["audit", "--db", &p.db, "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}: {out:?}", p.kind);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn code_in(reason: &str) -> String {
    let at = reason
        .find("Allow-once code ")
        .map(|i| i + "Allow-once code ".len())
        .or_else(|| reason.find("(Ref ").map(|i| i + "(Ref ".len()))
        .unwrap_or_else(|| panic!("no code in: {reason}"));
    reason[at..at + 9].to_owned()
}

#[test]
fn a_session_is_reconstructed_from_the_log_alone() {
    for p in projects("reconstructed", POLICY) {
        let s = session("timeline");
        // Allowed by a rule, and ran.
        assert_eq!(claude_pre(&p, &s, "ls -la", "t1").0, "allow", "{}", p.kind);
        claude_post(&p, &s, "ls -la", "t1", "total 0", false);
        // Asked; the person allowed it at Claude Code's prompt, and it ran.
        assert_eq!(claude_pre(&p, &s, "make test", "t2").0, "ask", "{}", p.kind);
        claude_post(&p, &s, "make test", "t2", "ok 12 tests", false);
        // Refused by a rule, with a reference.
        let (d, reason) = claude_pre(&p, &s, "make deploy", "t3");
        assert_eq!(d, "deny", "{}", p.kind);
        let reference = code_in(&reason);
        // Allowed, and failed.
        assert_eq!(claude_pre(&p, &s, "ls missing", "t4").0, "allow");
        claude_post(&p, &s, "ls missing", "t4", "", true);
        // Codex: allowed and ran (its PostToolUse records the run).
        let (code, _, err) = hook(
            &p,
            "codex-hook",
            ev(
                &p,
                &s,
                "PreToolUse",
                "Bash",
                json!({"command": "cat README"}),
                "c1",
            ),
        );
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = hook(
            &p,
            "codex-hook",
            with(
                ev(
                    &p,
                    &s,
                    "PostToolUse",
                    "Bash",
                    json!({"command": "cat README"}),
                    "c1",
                ),
                "tool_response",
                json!("hello"),
            ),
        );
        assert_eq!(code, 0, "{err}");
        // Gemini: no call id; paired by session, tool and input.
        let input = json!({"file_path": p.dir.join("a.txt")});
        let (code, _, err) = hook(
            &p,
            "gemini-hook",
            ev(&p, &s, "BeforeTool", "read_file", input.clone(), ""),
        );
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = hook(
            &p,
            "gemini-hook",
            with(
                ev(&p, &s, "AfterTool", "read_file", input, ""),
                "tool_response",
                json!({"llmContent": "alpha", "returnDisplay": "alpha"}),
            ),
        );
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = hook(
            &p,
            "claude-hook",
            with(
                json!({"session_id": s, "cwd": p.dir, "hook_event_name": "SessionEnd"}),
                "reason",
                json!("prompt_input_exit"),
            ),
        );
        assert_eq!(code, 0, "{err}");

        let v = audit_json(&p, &["--session", &s]);
        let calls = v["calls"].as_array().unwrap();
        let story: Vec<(String, String, String, String)> = calls
            .iter()
            .map(|c| {
                (
                    c["input"].as_str().unwrap_or_default().to_owned(),
                    c["decision"].as_str().unwrap_or("-").to_owned(),
                    c["resolved_by"].as_str().unwrap_or("-").to_owned(),
                    c["outcome"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let expected = [
            ("ls -la", "allow", "rule", "ran"),
            ("make test", "ask", "person", "ran"),
            ("make deploy", "deny", "rule", "refused"),
            ("ls missing", "allow", "rule", "failed"),
            ("cat README", "allow", "rule", "ran"),
            ("a.txt", "allow", "rule", "ran"),
            ("", "-", "-", "session-stop"),
        ];
        assert_eq!(story.len(), expected.len(), "{}: {story:#?}", p.kind);
        for (got, want) in story.iter().zip(expected) {
            assert!(got.0.contains(want.0), "{}: {got:?} vs {want:?}", p.kind);
            assert_eq!(
                (got.1.as_str(), got.2.as_str(), got.3.as_str()),
                (want.1, want.2, want.3),
                "{}: {}",
                p.kind,
                got.0
            );
        }
        let clients: Vec<&str> = calls
            .iter()
            .map(|c| c["client"].as_str().unwrap())
            .collect();
        assert_eq!(
            clients,
            [
                "claude-code",
                "claude-code",
                "claude-code",
                "claude-code",
                "codex",
                "gemini",
                "claude-code"
            ],
            "{}",
            p.kind
        );
        assert_eq!(calls[0]["elapsed_ms"], 44, "the reported duration");
        assert_eq!(calls[2]["ref_code"], reference.as_str());
        assert_eq!(calls[2]["layer"], "perm-rules");
        // The reference finds its call.
        let by_ref = audit_json(&p, &["--ref", &format!("Ref {reference}")]);
        let found = by_ref["calls"].as_array().unwrap();
        assert_eq!(found.len(), 1, "{by_ref}");
        assert!(found[0]["input"].as_str().unwrap().contains("make deploy"));
        // The summary counts what the filters and the limit show.
        let limited = audit_json(&p, &["--session", &s, "--limit", "3"]);
        let total: u64 = limited["summary"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["calls"].as_u64().unwrap())
            .sum();
        assert!(total <= 3, "{limited}");
        // The human listing has dates, not raw milliseconds.
        let out = bin(&p)
            .args(["audit", "--db", &p.db, "--session", &s])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("asked [perm-rules]"), "{text}");
        assert!(text.contains("by person"), "{text}");
        let year = text
            .find(" 20")
            .is_some_and(|_| text.contains("-") && text.contains(":"));
        assert!(year, "{text}");
        // CSV export, one line per call plus the header.
        let out = bin(&p)
            .args(["audit", "--db", &p.db, "--session", &s, "--csv"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 8);
        // And the chain holds.
        let out = bin(&p)
            .args(["audit", "--db", &p.db, "--verify"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {out:?}", p.kind);
        // The chain is keyed by the user's `audit.key`: without it nothing can be checked.
        let out = bin(&p)
            .env("HOME", p.tmp.path().join("someone-else"))
            .args(["audit", "--db", &p.db, "--verify"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}: {out:?}", p.kind);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("there is no audit key"),
            "{out:?}"
        );
        // Stats by layer and code.
        let out = bin(&p)
            .args(["audit", "stats", "--db", &p.db, "--session", &s, "--json"])
            .output()
            .unwrap();
        let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            stats["stats"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l["decision"] == "deny" && l["layer"] == "perm-rules"),
            "{stats}"
        );
    }
}

/// Every detector's sample (its `hit`), and the lines of what the detector masks in it.
fn sample_secrets() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../perm-hooks/src/redact/detectors.toml"),
    )
    .unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let scanner = perm_hooks::SecretScanner::default_set();
    let mut out = Vec::new();
    for d in doc["detector"].as_array().unwrap() {
        let hit = d["example"]["hit"].as_str().unwrap();
        let mut parts = Vec::new();
        for f in scanner.redact(hit).findings {
            parts.extend(
                hit[f.span]
                    .lines()
                    .map(str::trim)
                    .filter(|l| l.len() >= 12)
                    .map(str::to_owned),
            );
        }
        assert!(!parts.is_empty(), "{hit}");
        out.push((hit.to_owned(), parts));
    }
    assert!(out.len() >= 20, "{out:?}");
    out
}

#[test]
fn no_sample_secret_reaches_the_database_files() {
    for p in projects("no_secrets", POLICY) {
        let s = session("secrets");
        let secrets = sample_secrets();
        for (i, (secret, _)) in secrets.iter().enumerate() {
            let id = format!("s{i}");
            // In an allowed call's input and its output, and in a refused call's input (which
            // the allow-once table keeps).
            let cmd = format!("cat {secret}");
            claude_pre(&p, &s, &cmd, &id);
            claude_post(&p, &s, &cmd, &id, secret, false);
            let refused = format!("make deploy --token={secret}");
            assert_eq!(claude_pre(&p, &s, &refused, &format!("r{i}")).0, "deny");
        }
        match p.sqlite_file() {
            Some(file) => {
                let dir = file.parent().unwrap();
                let mut seen = 0;
                for entry in std::fs::read_dir(dir).unwrap().flatten() {
                    let bytes = std::fs::read(entry.path()).unwrap();
                    seen += bytes.len();
                    for (_, parts) in &secrets {
                        for part in parts {
                            if bytes.windows(part.len()).any(|w| w == part.as_bytes()) {
                                let dump = Std::new("python3").arg("-c").arg(
                                    "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nfor t in ['agent_audit_log','agent_guard_allow_once','agent_guard_session_calls','agent_guard_cancellations']:\n  for r in c.execute('select * from '+t):\n    if sys.argv[2] in repr(r): print(t, r)",
                                ).arg(&file).arg(part).output().unwrap();
                                panic!(
                                    "`{part}` is in {}: {}",
                                    entry.path().display(),
                                    String::from_utf8_lossy(&dump.stdout)
                                );
                            }
                        }
                    }
                }
                assert!(seen > 0);
            }
            None => {
                let dump = pg_sql(
                    &p.db,
                    "SELECT string_agg(t::text, E'\\n') FROM agent_audit_log t; \
                     SELECT string_agg(t::text, E'\\n') FROM agent_guard_allow_once t;",
                );
                assert!(dump.contains("REDACTED"), "{dump}");
                for (_, parts) in &secrets {
                    for part in parts {
                        assert!(!dump.contains(part.as_str()), "`{part}` is in the database");
                    }
                }
            }
        }
    }
}

fn sqlite(file: &Path, sql: &str) {
    let status = Std::new("python3")
        .arg("-c")
        .arg("import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()")
        .arg(file)
        .arg(sql)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_planted_trigger_is_refused() {
    for p in projects("planted_trigger", POLICY) {
        let s = session("trigger");
        assert_eq!(claude_pre(&p, &s, "ls", "t1").0, "allow");
        let trigger = "CREATE TRIGGER hide AFTER INSERT ON agent_guard_cancellations \
                       BEGIN DELETE FROM agent_guard_cancellations; END;";
        match p.sqlite_file() {
            Some(file) => sqlite(&file, trigger),
            None => {
                pg_sql(
                    &p.db,
                    "CREATE FUNCTION hide() RETURNS trigger LANGUAGE plpgsql AS \
                     $$ BEGIN DELETE FROM agent_guard_cancellations; RETURN NULL; END $$; \
                     CREATE TRIGGER hide AFTER INSERT ON agent_guard_cancellations \
                     FOR EACH ROW EXECUTE FUNCTION hide();",
                );
            }
        }
        // The hook refuses every call (exit 2 with the reason), whatever the call.
        let (code, out, err) = hook(
            &p,
            "claude-hook",
            ev(&p, &s, "PreToolUse", "Bash", json!({"command": "ls"}), "t2"),
        );
        assert_eq!(code, 2, "{}: {out} {err}", p.kind);
        assert!(err.contains("not the guard's own"), "{err}");
        assert!(err.contains("trigger"), "{err}");
        // So do the commands a person uses.
        for args in [vec!["audit"], vec!["cancel", "--session", &s]] {
            let out = bin(&p).args(&args).arg("--db").arg(&p.db).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("not the guard's own"));
        }
    }
}

#[test]
fn a_replayed_grant_is_refused() {
    for p in projects("replayed_grant", POLICY) {
        let s = session("replay");
        let outside = p.tmp.path().join("outside.txt");
        let input = json!({"file_path": outside, "content": "x"});
        let pre = |id: &str| {
            let (code, out, err) = hook(
                &p,
                "claude-hook",
                ev(&p, &s, "PreToolUse", "Write", input.clone(), id),
            );
            assert_eq!(code, 0, "{err}");
            let v: Value = serde_json::from_str(&out).unwrap();
            (
                v["hookSpecificOutput"]["permissionDecision"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                v["hookSpecificOutput"]["permissionDecisionReason"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        };
        let (d, reason) = pre("w1");
        assert_eq!(d, "deny", "{}: {reason}", p.kind);
        let code = code_in(&reason);
        let out = bin(&p)
            .args(["allow-once", &code, "--audit-db", &p.db])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            pre("w2").0,
            "allow",
            "{}: the grant lets it through once",
            p.kind
        );
        // The attacker resets the use in the database.
        let reset = "UPDATE agent_guard_allow_once SET used_at = NULL";
        match p.sqlite_file() {
            Some(file) => sqlite(&file, reset),
            None => drop(pg_sql(&p.db, reset)),
        }
        let (d, reason) = pre("w3");
        assert_eq!(d, "deny", "{}: a replayed grant: {reason}", p.kind);
        // The log says who let the second call through.
        let v = audit_json(&p, &["--session", &s]);
        let granted = v["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["call_id"] == "w2")
            .unwrap()
            .clone();
        assert_eq!(granted["resolved_by"], "allow-once", "{granted}");
        assert!(granted["resolution"].as_str().unwrap().contains(&code));
    }
}

#[test]
fn a_held_write_lock_yields_a_deny_inside_the_deadline() {
    for p in projects("held_lock", POLICY) {
        let s = session("lock");
        assert_eq!(claude_pre(&p, &s, "ls", "t1").0, "allow");
        // Another process takes the write lock and keeps it.
        let mut holder = match p.sqlite_file() {
            Some(file) => Std::new("python3")
                .arg("-c")
                .arg(
                    "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); \
                     c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(60)",
                )
                .arg(&file)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap(),
            None => Std::new(psql())
                .args(["-X", "-q", "-d", &p.db, "-c"])
                .arg(
                    "BEGIN; LOCK TABLE agent_guard_session_calls, agent_audit_log IN ACCESS EXCLUSIVE MODE; \
                     SELECT 'locked'; SELECT pg_sleep(60); COMMIT;",
                )
                .stdout(Stdio::piped())
                .spawn()
                .unwrap(),
        };
        match p.sqlite_file() {
            Some(_) => {
                use std::io::BufRead as _;
                let mut line = String::new();
                std::io::BufReader::new(holder.stdout.as_mut().unwrap())
                    .read_line(&mut line)
                    .unwrap();
                assert_eq!(line.trim(), "locked");
            }
            None => {
                // psql prints nothing until its statements end: watch pg_locks instead.
                let held = || {
                    pg_sql(
                        &p.db,
                        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
                         WHERE c.relname = 'agent_guard_session_calls' \
                         AND l.mode = 'AccessExclusiveLock' AND l.granted",
                    )
                    .trim()
                        == "1"
                };
                let start = Instant::now();
                while !held() {
                    assert!(
                        start.elapsed() < Duration::from_secs(20),
                        "psql took no lock"
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        let start = Instant::now();
        let (code, out, err) = hook(
            &p,
            "claude-hook",
            ev(&p, &s, "PreToolUse", "Bash", json!({"command": "ls"}), "t2"),
        );
        let took = start.elapsed();
        let _ = holder.kill();
        let _ = holder.wait();
        // A deny (exit 2 with the reason, or a deny answer), never a silent allow.
        let denied = code == 2 || out.contains("\"deny\"");
        assert!(denied, "{}: {code} {out} {err}", p.kind);
        assert!(
            took < CLIENT_TIMEOUT / 2,
            "{}: the hook took {took:?}, too close to the client's timeout",
            p.kind
        );
    }
}

#[test]
fn a_user_install_leaves_the_project_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("main.rs"), "fn main() {}\n").unwrap();
    let run = |args: &[&str], stdin: Option<String>| {
        let mut cmd = Command::cargo_bin("agent-guard").unwrap();
        for var in CLEAN_ENV {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &home)
            .env(
                "AGENT_GUARD_GRANT_KEY_FILE",
                home.join(".agent-guard/grant.key"),
            )
            .current_dir(&project)
            .args(args);
        if let Some(s) = stdin {
            cmd.write_stdin(s);
        }
        cmd.output().unwrap()
    };
    let out = run(&["init", "claude", "--user", "--binary", "/bin/true"], None);
    assert!(out.status.success(), "{out:?}");
    let policy = home.join(".config/agent-guard/policy.toml");
    assert!(policy.is_file());
    let s = session("user");
    for (name, extra) in [
        ("PreToolUse", json!({})),
        (
            "PostToolUse",
            json!({"tool_response": {"stdout": "main.rs"}}),
        ),
    ] {
        let mut e = json!({
            "session_id": s, "cwd": project, "hook_event_name": name,
            "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "u1",
        });
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        let out = run(
            &["claude-hook", "--policy", policy.to_str().unwrap()],
            Some(e.to_string()),
        );
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }
    // Nothing new in the project.
    let names: Vec<String> = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["main.rs"]);
    // The log is in the user's state directory, private.
    use std::os::unix::fs::PermissionsExt as _;
    let db = home.join(".local/state/agent-guard/audit.db");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&db), 0o600, "{}", db.display());
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    let out = run(
        &["audit", "--policy", policy.to_str().unwrap(), "--json"],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["calls"][0]["outcome"], "ran", "{v}");
}

#[test]
fn cancel_and_audit_refuse_a_database_that_does_not_exist() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        vec!["cancel", "--session", "x", "--db", "rel/audit.db"],
        vec!["audit", "--db", "rel/audit.db"],
    ] {
        let out = Command::cargo_bin("agent-guard")
            .unwrap()
            .current_dir(tmp.path())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("does not exist"),
            "{out:?}"
        );
        assert!(
            !tmp.path().join("rel").exists(),
            "{args:?} created a database"
        );
    }
}
