//! Issue 26 through the real binaries: stores located by the variables their programs read,
//! hard links of stores, and secrets by content, through the three hooks and `agent-guard
//! path`, and the runtime (`run`); files that run code later by role and the home as a writable
//! and as a read-only root. The policy allows every call, so only the sandbox stands between it
//! and a store.
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
allow = ["read_file", "Read"]
[hooks]
audit = false
"#;

const HOOKS: [(&str, &str, &str); 3] = [
    ("claude-hook", "PreToolUse", "Read"),
    ("codex-hook", "PreToolUse", "Read"),
    ("gemini-hook", "BeforeTool", "read_file"),
];

struct Fixture {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    policy: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let project = base.join("proj");
    let home = base.join("home");
    std::fs::create_dir_all(project.join("ci")).unwrap();
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), "[default]\n").unwrap();
    std::fs::write(project.join("ci/kube.yaml"), "apiVersion: v1\n").unwrap();
    std::fs::hard_link(home.join(".aws/credentials"), project.join("notes.txt")).unwrap();
    let policy = base.join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    Fixture {
        _tmp: tmp,
        project,
        home,
        policy,
    }
}

/// The decision a client takes and everything the hook printed.
fn door(
    fx: &Fixture,
    hook: (&str, &str, &str),
    path: &str,
    env: &[(&str, &str)],
) -> (String, String) {
    let (sub, event, tool) = hook;
    let stdin = json!({
        "session_id": "s1", "transcript_path": "/dev/null", "cwd": fx.project,
        "hook_event_name": event, "tool_name": tool, "tool_input": {"file_path": path},
        "tool_use_id": "t1", "turn_id": "u1",
    });
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.arg(sub)
        .arg("--policy")
        .arg(&fx.policy)
        .env("HOME", &fx.home)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("GEMINI_PROJECT_DIR")
        .env_remove("KUBECONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.write_stdin(stdin.to_string()).output().unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.code() == Some(2) {
        return ("deny".to_owned(), all);
    }
    assert_eq!(out.status.code(), Some(0), "{sub}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return ("allow".to_owned(), all);
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    let hs = &v["hookSpecificOutput"];
    let decision = hs["permissionDecision"]
        .as_str()
        .or(v["decision"].as_str())
        .unwrap_or("allow")
        .to_owned();
    (decision, all)
}

fn path_code(fx: &Fixture, path: &str, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.args(["path", "--json", "--op", "read", path])
        .current_dir(&fx.project)
        .env("HOME", &fx.home)
        .env_remove("KUBECONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["reasons"][0]["code"].as_str().unwrap_or("").to_owned()
}

#[test]
fn a_store_moved_by_its_variable_is_refused_in_every_door() {
    let fx = fixture();
    let kube = fx.project.join("ci/kube.yaml").display().to_string();
    let moved = [("KUBECONFIG", kube.as_str())];
    for hook in HOOKS {
        let (plain, _) = door(&fx, hook, &kube, &[]);
        assert_eq!(
            plain, "allow",
            "{}: an ordinary file without the variable",
            hook.0
        );
        let (decision, text) = door(&fx, hook, &kube, &moved);
        assert_eq!(decision, "deny", "{}: {text}", hook.0);
        assert!(text.contains("KUBECONFIG"), "{}: {text}", hook.0);
    }
    assert_eq!(path_code(&fx, &kube, &moved), "sensitive_path");
    assert_ne!(path_code(&fx, &kube, &[]), "sensitive_path");
}

#[test]
fn a_hard_link_of_a_store_is_refused_in_every_door() {
    let fx = fixture();
    let link = fx.project.join("notes.txt").display().to_string();
    for hook in HOOKS {
        let (decision, text) = door(&fx, hook, &link, &[]);
        assert_eq!(decision, "deny", "{}: {text}", hook.0);
        assert!(text.contains("hard link"), "{}: {text}", hook.0);
    }
    assert_eq!(path_code(&fx, &link, &[]), "sensitive_path");
}

#[test]
fn a_key_outside_the_project_is_refused_not_asked() {
    let fx = fixture();
    let key = fx.home.join("backup-2024");
    std::fs::write(&key, "-----BEGIN RSA PRIVATE KEY-----\nMII\n").unwrap();
    let key = key.display().to_string();
    for hook in HOOKS {
        let (decision, text) = door(&fx, hook, &key, &[]);
        assert_eq!(decision, "deny", "{}: {text}", hook.0);
        assert!(text.contains("private-key"), "{}: {text}", hook.0);
    }
    assert_eq!(path_code(&fx, &key, &[]), "sensitive_path");
}

/// A write through one client's write tool, from `cwd`, as that client decides it.
fn write_door(fx: &Fixture, client: &str, cwd: &std::path::Path, path: &str) -> (String, String) {
    let abs = cwd.join(path).display().to_string();
    let (event, tool, input) = match client {
        "claude-hook" => (
            "PreToolUse",
            "Write",
            json!({"file_path": abs, "content": "x"}),
        ),
        "gemini-hook" => (
            "BeforeTool",
            "write_file",
            json!({"file_path": abs, "content": "x"}),
        ),
        _ => (
            "PreToolUse",
            "apply_patch",
            json!({"command": format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n")}),
        ),
    };
    let stdin = json!({
        "session_id": "s1", "transcript_path": "/dev/null", "cwd": cwd,
        "hook_event_name": event, "tool_name": tool, "tool_input": input,
        "tool_use_id": "t1", "turn_id": "u1",
    });
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .arg(client)
        .arg("--policy")
        .arg(&fx.policy)
        .env("HOME", &fx.home)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("GEMINI_PROJECT_DIR")
        .write_stdin(stdin.to_string())
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.code() == Some(2) {
        return ("deny".to_owned(), all);
    }
    assert_eq!(out.status.code(), Some(0), "{client}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return ("allow".to_owned(), all);
    }
    let v: Value = serde_json::from_str(&text).unwrap();
    let decision = v["hookSpecificOutput"]["permissionDecision"]
        .as_str()
        .or(v["decision"].as_str())
        .unwrap_or("allow")
        .to_owned();
    (decision, all)
}

/// The runtime's (`agent-guard run`) decision and code for each `file_write`, from `cwd`.
fn runtime_writes(fx: &Fixture, cwd: &std::path::Path, paths: &[&str]) -> Vec<(String, String)> {
    let calls: Vec<Value> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"id": format!("c{i}"), "name": "file_write",
                   "arguments": {"file_path": cwd.join(p), "content": "x"}})
        })
        .collect();
    let script = json!({"prompt": "w", "turns": [
        {"content": "", "tool_calls": calls}, {"content": "done", "tool_calls": []}]});
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("script.json");
    std::fs::write(&file, script.to_string()).unwrap();
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["run", "--json", "--approve", "no", "--script"])
        .arg(&file)
        .arg("--policy")
        .arg(&fx.policy)
        .arg("--cwd")
        .arg(cwd)
        .arg("--audit-db")
        .arg(dir.path().join("audit.db"))
        .env("HOME", &fx.home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["decision"].as_str().unwrap_or("none").to_owned(),
                c["code"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn path_write_code(fx: &Fixture, cwd: &std::path::Path, path: &str) -> String {
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(["path", "--json", "--op", "write", path])
        .current_dir(cwd)
        .env("HOME", &fx.home)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["reasons"][0]["code"].as_str().unwrap_or("").to_owned()
}

/// Files that configuration makes code (a hooks directory named by `~/.gitconfig`, a file an
/// allowed `.envrc` sources) and, with the home as the writable root (the agent started in
/// `~`), the places every desktop and shell runs from: refused in every door, while an
/// ordinary file beside them is written.
#[test]
fn code_run_later_files_by_role_are_refused_in_every_door() {
    let fx = fixture();
    std::fs::write(
        fx.home.join(".gitconfig"),
        format!("[core]\n\thooksPath = {}/githooks\n", fx.project.display()),
    )
    .unwrap();
    std::fs::write(
        fx.project.join(".envrc"),
        "source_env_if_exists env/dev.sh\n",
    )
    .unwrap();
    let layouts: [(&std::path::Path, &[&str], &str); 2] = [
        (
            &fx.project,
            &["githooks/pre-commit", "env/dev.sh"],
            "ci/notes.md",
        ),
        (
            &fx.home,
            &[
                ".config/systemd/user/agent.service",
                ".bashrc.d/99.sh",
                ".local/bin/git",
            ],
            "work/notes.md",
        ),
    ];
    for (cwd, refused, ordinary) in layouts {
        for client in ["claude-hook", "gemini-hook", "codex-hook"] {
            for path in refused {
                let (decision, text) = write_door(&fx, client, cwd, path);
                assert_eq!(decision, "deny", "{client} {path}: {text}");
                assert!(text.contains("protected"), "{client} {path}: {text}");
            }
            let (decision, text) = write_door(&fx, client, cwd, ordinary);
            assert_ne!(decision, "deny", "{client} {ordinary}: {text}");
        }
        let mut all: Vec<&str> = refused.to_vec();
        all.push(ordinary);
        let runtime = runtime_writes(&fx, cwd, &all);
        for (path, (decision, code)) in all.iter().zip(&runtime) {
            if *path == ordinary {
                assert_eq!(decision, "allow", "runtime {path}: {code}");
                assert_eq!(path_write_code(&fx, cwd, path), "inside_root", "{path}");
            } else {
                assert_eq!(
                    (decision.as_str(), code.as_str()),
                    ("deny", "protected_path"),
                    "runtime {path}"
                );
                assert_eq!(path_write_code(&fx, cwd, path), "protected_path", "{path}");
            }
        }
    }
}

/// The runtime's (`agent-guard run`) decision and code for each `read_file`, from the project,
/// with `env` added to its environment.
fn runtime_reads(fx: &Fixture, paths: &[&str], env: &[(&str, &str)]) -> Vec<(String, String)> {
    let calls: Vec<Value> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| json!({"id": format!("c{i}"), "name": "read_file", "arguments": {"file_path": p}}))
        .collect();
    let script = json!({"prompt": "r", "turns": [
        {"content": "", "tool_calls": calls}, {"content": "done", "tool_calls": []}]});
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("script.json");
    std::fs::write(&file, script.to_string()).unwrap();
    let mut cmd = Command::cargo_bin("agent-guard").unwrap();
    cmd.args(["run", "--json", "--approve", "no", "--script"])
        .arg(&file)
        .arg("--policy")
        .arg(&fx.policy)
        .arg("--cwd")
        .arg(&fx.project)
        .arg("--audit-db")
        .arg(dir.path().join("audit.db"))
        .env("HOME", &fx.home)
        .env_remove("KUBECONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["decision"].as_str().unwrap_or("none").to_owned(),
                c["code"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The runtime judges stores as the hooks do: moved by a variable, a hard link, a key by
/// content.
#[test]
fn the_runtime_refuses_stores_by_variable_link_and_content() {
    let fx = fixture();
    let key = fx.home.join("backup-2024");
    std::fs::write(&key, "-----BEGIN RSA PRIVATE KEY-----\nMII\n").unwrap();
    let kube = fx.project.join("ci/kube.yaml").display().to_string();
    let link = fx.project.join("notes.txt").display().to_string();
    let key = key.display().to_string();
    let paths = [kube.as_str(), link.as_str(), key.as_str()];
    let moved = runtime_reads(&fx, &paths, &[("KUBECONFIG", kube.as_str())]);
    for (path, seen) in paths.iter().zip(&moved) {
        assert_eq!(
            (seen.0.as_str(), seen.1.as_str()),
            ("deny", "sensitive_path"),
            "{path}"
        );
    }
    let plain = runtime_reads(&fx, &[kube.as_str()], &[]);
    assert_eq!(plain[0].0, "allow", "without the variable: {plain:?}");
}

/// The home as a read-only root (the person lets the agent read dotfiles): a dotfile is read,
/// a key under an ordinary name is refused by content, and nothing in the home is written,
/// in every door.
#[test]
fn a_read_only_home_is_read_but_not_for_its_secrets_in_every_door() {
    let mut fx = fixture();
    let policy = fx.policy.with_file_name("policy-ro-home.toml");
    std::fs::write(
        &policy,
        format!(
            "{POLICY}[sandbox]\nroots = [\".\"]\nread_only_roots = [\"{}\"]\n",
            fx.home.display()
        ),
    )
    .unwrap();
    fx.policy = policy;
    std::fs::create_dir_all(fx.home.join(".config")).unwrap();
    std::fs::write(fx.home.join(".vimrc"), "set nu\n").unwrap();
    std::fs::write(
        fx.home.join(".config/deploy"),
        "-----BEGIN PRIVATE KEY-----\nMII\n",
    )
    .unwrap();
    let vimrc = fx.home.join(".vimrc").display().to_string();
    let deploy = fx.home.join(".config/deploy").display().to_string();
    for hook in HOOKS {
        assert_eq!(door(&fx, hook, &vimrc, &[]).0, "allow", "{}", hook.0);
        let (decision, text) = door(&fx, hook, &deploy, &[]);
        assert_eq!(decision, "deny", "{}: {text}", hook.0);
    }
    let bin = fx.home.join(".local/bin/git");
    for client in ["claude-hook", "gemini-hook", "codex-hook"] {
        let (decision, text) = write_door(&fx, client, &fx.project, bin.to_str().unwrap());
        assert_eq!(decision, "deny", "{client}: {text}");
        assert!(text.contains("read-only root"), "{client}: {text}");
    }
    let runtime = runtime_reads(&fx, &[vimrc.as_str(), deploy.as_str()], &[]);
    assert_eq!(runtime[0].0, "allow", "{runtime:?}");
    assert_eq!(
        (runtime[1].0.as_str(), runtime[1].1.as_str()),
        ("deny", "sensitive_path")
    );
    assert_eq!(
        runtime_writes(&fx, &fx.project, &[bin.to_str().unwrap()])[0],
        ("deny".to_owned(), "read_only_root".to_owned())
    );
    let path_door = |op: &str, path: &str| {
        let out = Command::cargo_bin("agent-guard")
            .unwrap()
            .args(["path", "--json", "--op", op, "--policy"])
            .arg(&fx.policy)
            .arg(path)
            .current_dir(&fx.project)
            .env("HOME", &fx.home)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["reasons"][0]["code"].as_str().unwrap_or("").to_owned()
    };
    assert_eq!(path_door("read", &deploy), "sensitive_path");
    assert_eq!(path_door("read", &vimrc), "inside_root");
    assert_eq!(path_door("write", bin.to_str().unwrap()), "read_only_root");
}

/// Every variable of fs-sandbox's `RELOCATIONS` moves its store through `agent-guard path`: a
/// file with harmless content in the project is refused only while the variable names it.
#[test]
fn every_relocation_variable_moves_its_store_through_path() {
    let fx = fixture();
    for entry in fs_sandbox::RELOCATIONS {
        let moved = fx
            .project
            .join(format!("moved-{}", entry.var.to_lowercase()));
        let target = match entry.moves {
            fs_sandbox::Moves::File | fs_sandbox::Moves::FileList => {
                std::fs::write(&moved, "nothing to see\n").unwrap();
                moved.clone()
            }
            fs_sandbox::Moves::Dir(names) => {
                let name = names.first().unwrap();
                let file = if *name == "**" {
                    moved.join("any/file")
                } else {
                    moved.join(name)
                };
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, "nothing to see\n").unwrap();
                file
            }
        };
        let target = target.display().to_string();
        let moved = moved.display().to_string();
        assert_ne!(
            path_code(&fx, &target, &[]),
            "sensitive_path",
            "{}",
            entry.var
        );
        assert_eq!(
            path_code(&fx, &target, &[(entry.var, moved.as_str())]),
            "sensitive_path",
            "{}",
            entry.var
        );
    }
}
