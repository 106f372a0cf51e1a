#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `agent-guard path`: decisions, JSON shape and exit codes.

use assert_cmd::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn tree() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(base.join("proj/src")).unwrap();
    std::fs::create_dir_all(base.join("proj-evil")).unwrap();
    std::fs::create_dir_all(base.join("docs")).unwrap();
    std::os::unix::fs::symlink(base.join("proj-evil"), base.join("proj/out")).unwrap();
    (dir, base.display().to_string())
}

#[test]
fn default_root_is_cwd_and_prefix_sibling_is_outside() {
    let (_d, base) = tree();
    let cwd = format!("{base}/proj");
    let (code, out) = run(&[
        "path",
        "--cwd",
        &cwd,
        "--op",
        "write",
        "--json",
        "--",
        "src/../new.txt",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "allow");
    assert_eq!(v["resolved"], format!("{base}/proj/new.txt"));
    let (code, out) = run(&[
        "path",
        "--cwd",
        &cwd,
        "--op",
        "read",
        "--json",
        "--",
        "../proj-evil/x",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Reading outside the roots is asked about, as the hooks, `test` and `explain` do.
    assert_eq!(v["decision"], "ask");
    assert_eq!(v["reasons"][0]["code"], "outside_roots");
    assert_eq!(v["reasons"][0]["layer"], "fs-sandbox");
    assert_eq!(v["resolved"], format!("{base}/proj-evil/x"));
    let (_, out) = run(&[
        "path",
        "--cwd",
        &cwd,
        "--op",
        "write",
        "--json",
        "--",
        "../proj-evil/x",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["decision"], "deny",
        "a write outside the roots is refused"
    );
    let (_, out) = run(&[
        "path", "--cwd", &cwd, "--op", "read", "--json", "--", "out/x",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["reasons"][0]["code"], "outside_roots");
}

#[test]
fn repeated_and_read_only_roots() {
    let (_d, base) = tree();
    let cwd = format!("{base}/proj");
    let args = [
        "path",
        "--cwd",
        &cwd,
        "--root",
        ".",
        "--read-only-root",
        "../docs",
        "--op",
        "write",
        "--json",
        "--",
    ];
    let (_, out) = run(&[&args[..], &["../docs/a"]].concat());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["reasons"][0]["code"], "read_only_root");
    let (_, out) = run(&[&args[..], &[".git/config"]].concat());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["reasons"][0]["code"], "protected_path");
    let (code, out) = run(&["path", "--cwd", &cwd, "--op", "read", "--", "src"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("allow"), "{out}");
}

#[test]
fn policy_roots_and_bad_input_exit_2() {
    let (d, base) = tree();
    let policy = d.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!("[sandbox]\nread_only_roots = [\"{base}/proj\"]\n"),
    )
    .unwrap();
    let cwd = format!("{base}/proj");
    let p = policy.display().to_string();
    let (_, out) = run(&[
        "path", "--policy", &p, "--cwd", &cwd, "--op", "write", "--json", "--", "x",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["reasons"][0]["code"], "read_only_root");
    std::fs::write(&policy, "[sandbox]\nbogus = 1\n").unwrap();
    let (code, _) = run(&[
        "path", "--policy", &p, "--cwd", &cwd, "--op", "read", "--", "x",
    ]);
    assert_eq!(code, 2);
    let (code, _) = run(&["path", "--cwd", &cwd, "--op", "delete", "--", "x"]);
    assert_eq!(code, 2);
    let (code, _) = run(&[
        "path",
        "--cwd",
        &cwd,
        "--root",
        "/nonexistent-root-xyz",
        "--op",
        "read",
        "--",
        "x",
    ]);
    assert_eq!(code, 2);
}

/// A tmpfs build directory inside the project is writable through `agent-guard path` and the
/// three hooks (Claude Code `Write`, Gemini `write_file`, Codex `apply_patch`), a bind
/// mount of a directory outside is not (issue 26 item 4). The mounts are made in a private
/// mount namespace (`unshare -m`, or `-Urm` when not root); a machine that cannot make one fails
/// the test unless `FS_SANDBOX_SKIP_MOUNT_TESTS` is set, when it prints that it was skipped.
#[test]
fn tmpfs_build_directory_is_writable_and_a_bind_mount_is_not() {
    let (_d, base) = tree();
    std::fs::create_dir_all(format!("{base}/outside")).unwrap();
    std::fs::write(format!("{base}/outside/secret"), "s").unwrap();
    let bin = assert_cmd::cargo::cargo_bin("agent-guard");
    // The three clients' write tools, into the tmpfs and into the bind, under a policy that
    // allows every write: only the sandbox decides.
    let events = format!("{base}/events");
    std::fs::create_dir_all(&events).unwrap();
    std::fs::write(
        format!("{events}/policy.toml"),
        "[permissions]\ndefault = \"allow\"\n[hooks]\naudit = false\n",
    )
    .unwrap();
    for place in ["target", "bind"] {
        let rel = format!("{place}/debug/hooked");
        let abs = format!("{base}/proj/{rel}");
        let patch = format!("*** Begin Patch\n*** Add File: {rel}\n+x\n*** End Patch\n");
        for (sub, event, tool, input) in [
            (
                "claude-hook",
                "PreToolUse",
                "Write",
                serde_json::json!({"file_path": abs, "content": "x"}),
            ),
            (
                "gemini-hook",
                "BeforeTool",
                "write_file",
                serde_json::json!({"file_path": abs, "content": "x"}),
            ),
            (
                "codex-hook",
                "PreToolUse",
                "apply_patch",
                serde_json::json!({ "command": patch }),
            ),
        ] {
            let stdin = serde_json::json!({
                "session_id": "s1", "transcript_path": "/dev/null", "cwd": format!("{base}/proj"),
                "hook_event_name": event, "tool_name": tool, "tool_input": input,
                "tool_use_id": "t1", "turn_id": "u1",
            });
            std::fs::write(format!("{events}/{sub}@{place}.json"), stdin.to_string()).unwrap();
        }
    }
    let script = r#"set -e
P="$1"; OUT="$2"; BIN="$3"; EV="$4"
mkdir "$P/target" "$P/bind"
mount -t tmpfs tmpfs "$P/target"
mount --bind "$OUT" "$P/bind"
echo built > "$P/target/x.txt"
for spec in "write target/debug/app" "read target/x.txt" "write target/.claude/settings.json" \
    "write bind/new" "read bind/secret"; do
  set -- $spec
  echo "=== $1 $2"
  "$BIN" path --cwd "$P" --op "$1" --json -- "$2"
done
for f in "$EV"/*@*.json; do
  name=$(basename "$f" .json)
  echo "=== hook $name"
  "$BIN" "${name%%@*}" --policy "$EV/policy.toml" < "$f" || echo "rc:$?"
  echo
done
"#;
    let mut args = vec!["-m", "--propagation", "private"];
    if !rustix::process::geteuid().is_root() {
        args.extend(["-U", "-r"]);
    }
    let out = std::process::Command::new("unshare")
        .args(&args)
        .args(["--", "sh", "-c", script, "sh"])
        .arg(format!("{base}/proj"))
        .arg(format!("{base}/outside"))
        .arg(&bin)
        .arg(&events)
        .output();
    let stdout = out
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !stdout.contains("=== ") && std::env::var_os("FS_SANDBOX_SKIP_MOUNT_TESTS").is_some() {
        eprintln!(
            "SKIPPED: no private mount namespace here (`unshare {}`): {out:?}",
            args.join(" ")
        );
        return;
    }
    let out = out.unwrap();
    assert!(
        out.status.success(),
        "the mount script failed (`unshare {}`; set FS_SANDBOX_SKIP_MOUNT_TESTS=1 to skip where \
         no mount namespace can be made): {stdout}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: std::collections::HashMap<String, serde_json::Value> = stdout
        .split("=== ")
        .filter(|chunk| !chunk.is_empty() && !chunk.starts_with("hook "))
        .map(|chunk| {
            let (label, json) = chunk.split_once('\n').unwrap();
            (label.to_owned(), serde_json::from_str(json).unwrap())
        })
        .collect();
    for (label, decision, code) in [
        ("write target/debug/app", "allow", "inside_root"),
        ("read target/x.txt", "allow", "inside_root"),
        (
            "write target/.claude/settings.json",
            "deny",
            "protected_path",
        ),
        ("write bind/new", "deny", "other_filesystem"),
        ("read bind/secret", "deny", "other_filesystem"),
    ] {
        let v = &verdicts[label];
        assert_eq!(v["decision"], decision, "{label}: {v}");
        assert_eq!(v["reasons"][0]["code"], code, "{label}: {v}");
    }
    assert!(
        verdicts["read bind/secret"]["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("bind mount"),
        "{}",
        verdicts["read bind/secret"]
    );
    // A hook refuses by exit code 2 or a `deny`/`block` decision; allows by no output or an
    // `allow`.
    let hooks: Vec<(&str, &str)> = stdout
        .split("=== hook ")
        .skip(1)
        .map(|chunk| chunk.split_once('\n').unwrap())
        .collect();
    assert_eq!(hooks.len(), 6, "{stdout}");
    for (name, output) in hooks {
        let refused =
            output.contains("rc:2") || output.contains("\"deny\"") || output.contains("\"block\"");
        if name.ends_with("@bind") {
            assert!(refused, "{name}: {output}");
            assert!(output.contains("other_filesystem"), "{name}: {output}");
        } else {
            assert!(!refused && !output.contains("\"ask\""), "{name}: {output}");
        }
    }
}
