//! The hook doors attacked as a hostile client would: every client's tool names and argument
//! spellings, opaque tools, and the same call through every door getting the same verdict.
//! The policy allows every tool explicitly, so only the layers below the rules stand between a
//! call and its effect: a door that fails to translate a call lets it through.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::{Value, json};

const POLICY: &str = r#"
[permissions]
default = "allow"
allow = ["read_file", "file_write", "file_edit", "glob_files", "grep_files", "run_bash",
         "web_fetch", "web_search", "subagent", "task_output", "task_stop", "mcp__*", "Read",
         "FutureTool"]
[hooks]
audit = false
"#;

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
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "key").unwrap();
    let policy = tmp.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let project = project.canonicalize().unwrap();
    let home = home.canonicalize().unwrap();
    Fixture {
        _tmp: tmp,
        project,
        home,
        policy,
    }
}

/// The decision a client takes from the door's answer: `allow`, `ask`, `deny`, or `none` (no
/// decision: the client's own flow). A non-protocol exit code fails the test.
fn door(fx: &Fixture, sub: &str, tool: &str, input: Value) -> String {
    let event = if sub == "gemini-hook" {
        "BeforeTool"
    } else {
        "PreToolUse"
    };
    let stdin = json!({
        "session_id": "s1", "transcript_path": "/dev/null", "cwd": fx.project,
        "hook_event_name": event, "tool_name": tool, "tool_input": input,
        "tool_use_id": "t1", "turn_id": "u1",
    });
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .arg(sub)
        .arg("--policy")
        .arg(&fx.policy)
        .env("HOME", &fx.home)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("GEMINI_PROJECT_DIR")
        .write_stdin(stdin.to_string())
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 2)), "{sub} {tool}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return "none".to_owned();
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    let hs = &v["hookSpecificOutput"];
    hs["permissionDecision"]
        .as_str()
        .or(hs["decision"]["behavior"].as_str())
        .or(v["decision"].as_str())
        .unwrap_or("none")
        .to_owned()
}

fn in_home(fx: &Fixture, rel: &str) -> String {
    fx.home.join(rel).to_string_lossy().into_owned()
}

fn in_project(fx: &Fixture, rel: &str) -> String {
    fx.project.join(rel).to_string_lossy().into_owned()
}

#[test]
fn gemini_legacy_argument_names_are_judged() {
    let fx = fixture();
    let ssh = in_home(&fx, ".ssh");
    let key = in_home(&fx, ".ssh/id_rsa");
    for (tool, input) in [
        ("glob", json!({"pattern": "*", "path": ssh})),
        ("search_file_content", json!({"pattern": "x", "path": ssh})),
        ("grep_search", json!({"pattern": "x", "path": ssh})),
        ("list_directory", json!({"path": ssh})),
        ("read_file", json!({"absolute_path": key})),
        (
            "run_shell_command",
            json!({"command": "ls", "directory": ssh}),
        ),
        ("read_many_files", json!({"paths": [key]})),
    ] {
        assert_eq!(
            door(&fx, "gemini-hook", tool, input.clone()),
            "deny",
            "{tool} {input}"
        );
    }
    // The legacy names of a harmless call work as the current ones do.
    let a = in_project(&fx, "src/a.txt");
    assert_eq!(
        door(&fx, "gemini-hook", "read_file", json!({"absolute_path": a})),
        door(&fx, "gemini-hook", "read_file", json!({"file_path": a}))
    );
}

#[test]
fn codex_shell_tools_are_judged_under_every_name() {
    let fx = fixture();
    let key = in_home(&fx, ".ssh/id_rsa");
    for (tool, input) in [
        (
            "shell",
            json!({"command": ["bash", "-lc", format!("cat {key}")]}),
        ),
        ("exec_command", json!({"cmd": format!("cat {key}")})),
        (
            "unified_exec",
            json!({"input": ["bash", "-lc", "rm -rf ~"]}),
        ),
        (
            "Bash",
            json!({"command": ["bash", "-lc", format!("cat {key}")]}),
        ),
        (
            "shell",
            json!({"command": ["ls"], "workdir": in_home(&fx, ".ssh")}),
        ),
    ] {
        assert_eq!(
            door(&fx, "codex-hook", tool, input.clone()),
            "deny",
            "{tool} {input}"
        );
    }
    // An argv array is a command, not bad input.
    assert_eq!(
        door(
            &fx,
            "codex-hook",
            "Bash",
            json!({"command": ["git", "status"]})
        ),
        "none"
    );
}

#[test]
fn tools_without_a_contract_have_their_input_read() {
    let fx = fixture();
    let key = in_home(&fx, ".ssh/id_rsa");
    // A client tool the table does not know, under another client's name or a future one.
    assert_eq!(
        door(&fx, "codex-hook", "Read", json!({"file_path": key})),
        "deny"
    );
    assert_eq!(
        door(&fx, "claude-hook", "FutureTool", json!({"file_path": key})),
        "deny"
    );
    assert_eq!(
        door(
            &fx,
            "claude-hook",
            "LS",
            json!({"path": in_home(&fx, ".ssh")})
        ),
        "deny"
    );
    // Input nested deeper than the guard reads is refused, not skipped.
    let mut deep = json!("http://169.254.169.254/latest/meta-data/");
    for _ in 0..80 {
        deep = json!([deep]);
    }
    assert_eq!(
        door(&fx, "claude-hook", "mcp__x__fetch", json!({ "a": deep })),
        "deny"
    );
    // A protected file an opaque tool may write is for a person to allow.
    let hook = in_project(&fx, ".git/hooks/pre-commit");
    assert_eq!(
        door(
            &fx,
            "claude-hook",
            "mcp__fs__write_file",
            json!({"path": hook, "content": "x"})
        ),
        "ask"
    );
}

/// Codex cannot ask: its door denies what the others ask about.
fn codex_view(decision: &str) -> &str {
    match decision {
        "ask" => "deny",
        "allow" => "none",
        d => d,
    }
}

#[test]
fn a_write_gets_one_verdict_through_every_door() {
    let fx = fixture();
    std::os::unix::fs::symlink(fx.home.join(".ssh"), fx.project.join("keys")).unwrap();
    std::os::unix::fs::symlink(fx.project.join(".git"), fx.project.join("g")).unwrap();
    let paths = [
        "src/new.txt",
        ".git/config",
        "g/hooks/pre-commit",
        ".claude/settings.json",
        ".mcp.json",
        ".vscode/tasks.json",
        ".envrc",
        ".cargo/config.toml",
        ".npmrc",
        ".env",
        "keys/id_rsa",
        "x/../../etc/passwd",
        ".ENVRC",
        ".Claude/settings.json",
        ".claude\u{200b}/settings.json",
    ];
    for rel in paths {
        let abs = in_project(&fx, rel);
        let claude = door(
            &fx,
            "claude-hook",
            "Write",
            json!({"file_path": abs, "content": "x"}),
        );
        let gemini = door(
            &fx,
            "gemini-hook",
            "write_file",
            json!({"file_path": abs, "content": "x"}),
        );
        let patch = format!("*** Begin Patch\n*** Add File: {rel}\n+x\n*** End Patch\n");
        let codex = door(
            &fx,
            "codex-hook",
            "apply_patch",
            json!({ "command": patch }),
        );
        let argv = door(
            &fx,
            "codex-hook",
            "apply_patch",
            json!({ "command": ["apply_patch", patch] }),
        );
        let heredoc = door(
            &fx,
            "codex-hook",
            "Bash",
            json!({ "command": format!("apply_patch <<'EOF'\n{patch}EOF\n") }),
        );
        assert_eq!(codex, heredoc, "{rel}");
        // Gemini's allow is no output, as Codex's is.
        let gemini = if gemini == "none" { "allow" } else { &gemini };
        assert_eq!(claude, gemini, "{rel}");
        assert_eq!(codex_view(&claude), codex, "{rel}");
        assert_eq!(codex, argv, "{rel}");
    }
}

#[test]
fn credentials_an_agent_could_use_against_the_guard_or_the_host_are_sensitive() {
    let fx = fixture();
    for rel in [
        // The approval server's token: with it the agent answers its own asks.
        ".agent-guard/serve.token",
        ".config/git/credentials",
        ".config/github-copilot/apps.json",
        ".config/sops/age/keys.txt",
        ".databrickscfg",
    ] {
        let path = in_home(&fx, rel);
        assert_eq!(
            door(&fx, "claude-hook", "Read", json!({ "file_path": path })),
            "deny",
            "{rel}"
        );
    }
    for path in [
        "/run/secrets/kubernetes.io/serviceaccount/token",
        "/var/run/secrets/kubernetes.io/serviceaccount/token",
    ] {
        let v = door(
            &fx,
            "gemini-hook",
            "read_file",
            json!({ "file_path": path }),
        );
        assert_eq!(v, "deny", "{path}");
        let out = Command::cargo_bin("agent-guard")
            .unwrap()
            .args(["path", "--json", path])
            .current_dir(&fx.project)
            .env("HOME", &fx.home)
            .output()
            .unwrap();
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["reasons"][0]["code"], "sensitive_path", "{path}: {j}");
    }
}

#[test]
fn protected_files_are_protected_as_the_filesystem_names_them() {
    let fx = fixture();
    // Does the project's filesystem fold case? (`.Claude` IS `.claude` only where it does.)
    std::fs::write(fx.project.join("fold-probe"), "").unwrap();
    let folds = fx.project.join("FOLD-PROBE").exists();
    for rel in [
        ".ENVRC",
        ".Claude/settings.json",
        ".GIT/config",
        ".Husky/pre-commit",
    ] {
        let abs = in_project(&fx, rel);
        let want = if folds { "deny" } else { "allow" };
        assert_eq!(
            door(
                &fx,
                "claude-hook",
                "Write",
                json!({"file_path": abs, "content": "x"})
            ),
            want,
            "{rel}"
        );
    }
    // The exact spellings are protected everywhere.
    for rel in [".envrc", ".claude/settings.json", ".husky/pre-commit"] {
        let abs = in_project(&fx, rel);
        assert_eq!(
            door(
                &fx,
                "claude-hook",
                "Write",
                json!({"file_path": abs, "content": "x"})
            ),
            "deny",
            "{rel}"
        );
    }
}

#[test]
fn a_key_given_twice_is_malformed_input_in_every_door() {
    let fx = fixture();
    let key = in_home(&fx, ".ssh/id_rsa");
    let safe = in_project(&fx, "src/a.txt");
    for (sub, event, tool) in [
        ("claude-hook", "PreToolUse", "Read"),
        ("codex-hook", "PreToolUse", "Read"),
        ("gemini-hook", "BeforeTool", "read_file"),
    ] {
        // The guard's parser keeps the last `file_path`; another reader may keep the first.
        let project = fx.project.display();
        let stdin = format!(
            r#"{{"session_id":"s1","cwd":"{project}","hook_event_name":"{event}","tool_name":"{tool}","tool_input":{{"file_path":"{key}","file_path":"{safe}"}}}}"#
        );
        let out = Command::cargo_bin("agent-guard")
            .unwrap()
            .arg(sub)
            .arg("--policy")
            .arg(&fx.policy)
            .env("HOME", &fx.home)
            .env_remove("CLAUDE_PROJECT_DIR")
            .write_stdin(stdin)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sub}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("appears twice"), "{sub}: {stderr}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let decision = v["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .or(v["decision"].as_str());
        assert_eq!(decision, Some("deny"), "{sub}: {v}");
    }
}

#[test]
fn a_path_starting_with_another_accounts_tilde_is_refused_in_every_door() {
    let fx = fixture();
    let patch = "*** Begin Patch\n*** Add File: ~root/.bashrc\n+x\n*** End Patch\n";
    for (sub, tool, input) in [
        (
            "claude-hook",
            "Read",
            json!({"file_path": "~root/.aws/credentials"}),
        ),
        ("claude-hook", "Glob", json!({"pattern": "~root/.ssh/*"})),
        (
            "claude-hook",
            "Grep",
            json!({"pattern": "x", "path": "~root"}),
        ),
        (
            "gemini-hook",
            "write_file",
            json!({"file_path": "~root/.bashrc", "content": "x"}),
        ),
        ("codex-hook", "apply_patch", json!({ "command": patch })),
    ] {
        assert_eq!(
            door(&fx, sub, tool, input.clone()),
            "deny",
            "{sub} {tool} {input}"
        );
    }
}

#[test]
fn a_search_filter_that_selects_a_secret_is_refused() {
    let fx = fixture();
    std::fs::write(fx.project.join(".env"), "KEY=1").unwrap();
    // ripgrep searches what `--glob` whitelists even when it is hidden: `.en?` reads `.env`.
    for glob in [".en?", ".e*", "*", "[.]env"] {
        assert_eq!(
            door(
                &fx,
                "claude-hook",
                "Grep",
                json!({"pattern": "KEY", "glob": glob})
            ),
            "deny",
            "{glob}"
        );
        assert_eq!(
            door(
                &fx,
                "gemini-hook",
                "grep_search",
                json!({"pattern": "KEY", "include_pattern": glob})
            ),
            "deny",
            "{glob}"
        );
    }
    for glob in ["*.rs", "src/**/*.ts", "*.json", "*.yml"] {
        assert_eq!(
            door(
                &fx,
                "claude-hook",
                "Grep",
                json!({"pattern": "KEY", "glob": glob})
            ),
            "allow",
            "{glob}"
        );
    }
}

#[test]
fn devices_and_pipes_outside_the_project_are_refused_not_asked_about() {
    let fx = fixture();
    let fifo = fx.home.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for path in [
        "/dev/zero".to_owned(),
        "/proc/kcore".to_owned(),
        fifo.display().to_string(),
    ] {
        assert_eq!(
            door(&fx, "claude-hook", "Read", json!({ "file_path": path })),
            "deny",
            "{path}"
        );
        let out = Command::cargo_bin("agent-guard")
            .unwrap()
            .args(["path", "--json", &path])
            .current_dir(&fx.project)
            .env("HOME", &fx.home)
            .output()
            .unwrap();
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["decision"], "deny", "{path}: {j}");
    }
    // An ordinary file outside the project is still for a person to allow.
    assert_eq!(
        door(
            &fx,
            "claude-hook",
            "Read",
            json!({"file_path": "/etc/hosts"})
        ),
        "ask"
    );
}

#[test]
fn an_opaque_tool_cannot_hide_a_secret_behind_dotdot_length_or_numbers() {
    let fx = fixture();
    let home = fx.home.display().to_string();
    // A server that folds `..` lexically opens the secret the physical walk never reaches.
    let folded = format!("/nonexistent-dir/..{home}/.aws/credentials");
    let long = format!("{home}/.ssh/{}id_rsa", "./".repeat(3000));
    let many: Vec<String> = (0..5000).map(|i| format!("/tmp/f{i}")).collect();
    for input in [
        json!({ "path": folded }),
        json!({ "path": long }),
        json!({ "paths": many }),
    ] {
        assert_eq!(door(&fx, "claude-hook", "mcp__fs__read", input), "deny");
    }
}

#[test]
fn a_relative_path_under_a_path_key_of_an_opaque_tool_is_judged_in_the_cwd() {
    let fx = fixture();
    assert_eq!(
        door(
            &fx,
            "claude-hook",
            "mcp__fs__read_file",
            json!({"file_path": ".env"})
        ),
        "deny"
    );
    assert_eq!(
        door(
            &fx,
            "claude-hook",
            "mcp__fs__write_file",
            json!({"path": ".claude/settings.json", "content": "x"})
        ),
        "ask"
    );
    // Prose and titles are not paths.
    assert_eq!(
        door(
            &fx,
            "claude-hook",
            "mcp__gh__create_issue",
            json!({"title": ".env", "body": "see .claude/settings.json"})
        ),
        "allow"
    );
}

#[test]
fn a_permission_request_the_guard_cannot_judge_is_denied_in_its_own_shape() {
    let fx = fixture();
    for sub in ["claude-hook", "codex-hook"] {
        for (panic, input) in [(false, None), (true, Some(json!({"command": "ls"})))] {
            let mut event = json!({
                "session_id": "s1", "cwd": fx.project, "hook_event_name": "PermissionRequest",
                "tool_name": "Bash",
            });
            if let Some(input) = input {
                event["tool_input"] = input;
            }
            let mut cmd = Command::cargo_bin("agent-guard").unwrap();
            cmd.arg(sub).env_remove("CLAUDE_PROJECT_DIR");
            if panic {
                cmd.env("AGENT_GUARD_TEST_PANIC", "1");
            }
            let out = cmd.write_stdin(event.to_string()).output().unwrap();
            // Exit 2 and a PreToolUse-shaped answer are ignored for a permission request.
            assert_eq!(out.status.code(), Some(0), "{sub} panic={panic}: {out:?}");
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let hs = &v["hookSpecificOutput"];
            assert_eq!(hs["hookEventName"], "PermissionRequest", "{sub}: {v}");
            assert_eq!(hs["decision"]["behavior"], "deny", "{sub}: {v}");
            assert!(!out.stderr.is_empty(), "{sub}");
        }
    }
}

#[test]
fn another_clients_project_variable_does_not_move_codexs_roots() {
    let fx = fixture();
    // Codex started from a Claude Code shell inherits CLAUDE_PROJECT_DIR; its roots stay at
    // its own cwd.
    let outside = in_home(&fx, "notes.txt");
    let patch = format!("*** Begin Patch\n*** Add File: {outside}\n+x\n*** End Patch\n");
    let stdin = json!({
        "session_id": "s1", "cwd": fx.project, "hook_event_name": "PreToolUse",
        "tool_name": "apply_patch", "tool_input": {"command": patch}, "turn_id": "u1",
    });
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .arg("codex-hook")
        .arg("--policy")
        .arg(&fx.policy)
        .env("HOME", &fx.home)
        .env("CLAUDE_PROJECT_DIR", &fx.home)
        .env_remove("GEMINI_PROJECT_DIR")
        .write_stdin(stdin.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
}
