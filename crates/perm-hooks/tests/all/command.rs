use std::time::Duration;

use perm_hooks::*;
use serde_json::json;

fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, body).unwrap();
    let interp = if name.ends_with(".py") {
        "python3"
    } else {
        "bash"
    };
    format!("{interp} {}", path.display())
}

fn hook(command: String, events: &[HookEvent], matcher: Option<&str>) -> CommandHook {
    CommandHook::new(&CommandHookConfig {
        command,
        matcher: matcher.map(str::to_owned),
        events: events.to_vec(),
        timeout: None,
        on_error: None,
        name: Some("cmd".into()),
    })
    .unwrap()
}

fn pre(tool: &str) -> PreToolUseContext {
    PreToolUseContext {
        session_id: "s1".into(),
        tool_name: tool.into(),
        tool_call_id: "c1".into(),
        args: json!({"command": "rm -rf /tmp/x"}),
        cwd: Some(std::env::temp_dir()),
        ..Default::default()
    }
}

#[tokio::test]
async fn bash_exit_2_blocks_with_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        &dir,
        "h.sh",
        "input=$(cat)\ncase \"$input\" in *'rm -rf'*) echo \"blocked: rm\" >&2; exit 2;; esac\nexit 0\n",
    );
    let h = hook(cmd, &[HookEvent::PreToolUse], Some("run_bash"));
    assert_eq!(
        h.pre_tool_use(&pre("run_bash")).await.unwrap(),
        PreToolUseAction::Block {
            reason: "blocked: rm".into()
        }
    );
    // The matcher keeps it away from other tools.
    assert_eq!(
        h.pre_tool_use(&pre("read_file")).await.unwrap(),
        PreToolUseAction::Continue
    );
}

#[tokio::test]
async fn bash_plain_stdout_and_other_exit() {
    let dir = tempfile::tempdir().unwrap();
    let ok = hook(
        script(&dir, "ok.sh", "cat >/dev/null; echo looks fine; exit 0\n"),
        &[HookEvent::PreToolUse],
        None,
    );
    assert_eq!(
        ok.pre_tool_use(&pre("x")).await.unwrap(),
        PreToolUseAction::Continue
    );
    let bad = hook(
        script(&dir, "bad.sh", "echo oops >&2; exit 1\n"),
        &[HookEvent::PreToolUse],
        None,
    );
    let err = bad.pre_tool_use(&pre("x")).await.unwrap_err();
    assert!(
        err.0.contains("status 1") && err.0.contains("oops"),
        "{err}"
    );
    let junk = hook(
        script(&dir, "junk.sh", "echo '{not json'\n"),
        &[HookEvent::PreToolUse],
        None,
    );
    assert!(junk.pre_tool_use(&pre("x")).await.is_err());
}

#[tokio::test]
async fn python_reads_the_event_and_decides() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
import json, sys
e = json.load(sys.stdin)
assert e["hook_event_name"] == "PreToolUse", e
assert e["session_id"] == "s1" and e["tool_use_id"] == "c1"
cmd = e["tool_input"]["command"]
mode = open(sys.argv[0] + ".mode").read().strip()
out = {"hookSpecificOutput": {"hookEventName": "PreToolUse"}}
h = out["hookSpecificOutput"]
if mode == "deny":
    h.update(permissionDecision="deny", permissionDecisionReason="no rm: " + cmd)
elif mode == "ask":
    h.update(permissionDecision="ask", permissionDecisionReason="really?")
elif mode == "mutate":
    h.update(permissionDecision="allow", updatedInput={"command": "echo safe"}, additionalContext="rewrote")
elif mode == "legacy":
    out = {"decision": "block", "reason": "legacy says no"}
elif mode == "stop":
    out = {"continue": False, "stopReason": "halt"}
elif mode == "weird":
    h.update(permissionDecision="maybe")
print(json.dumps(out))
"#;
    let cmd = script(&dir, "h.py", body);
    let mode_file = dir.path().join("h.py.mode");
    let h = hook(cmd, &[HookEvent::PreToolUse], Some("run_bash"));
    let cases = [
        (
            "deny",
            Some(PreToolUseAction::Block {
                reason: "no rm: rm -rf /tmp/x".into(),
            }),
        ),
        (
            "ask",
            Some(PreToolUseAction::PermissionRequired {
                message: "really?".into(),
            }),
        ),
        (
            "mutate",
            Some(PreToolUseAction::MutateInput {
                updated_args: Some(json!({"command": "echo safe"})),
                additional_context: Some("rewrote".into()),
            }),
        ),
        (
            "legacy",
            Some(PreToolUseAction::Block {
                reason: "legacy says no".into(),
            }),
        ),
        (
            "stop",
            Some(PreToolUseAction::Block {
                reason: "halt".into(),
            }),
        ),
        ("none", Some(PreToolUseAction::Continue)),
        ("weird", None),
    ];
    for (mode, want) in cases {
        std::fs::write(&mode_file, mode).unwrap();
        let got = h.pre_tool_use(&pre("run_bash")).await;
        match want {
            Some(want) => assert_eq!(got.unwrap(), want, "{mode}"),
            None => assert!(got.is_err(), "{mode}: unknown decisions fail closed"),
        }
    }
}

#[tokio::test]
async fn post_tool_use_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
import json, sys
e = json.load(sys.stdin)
assert e["hook_event_name"] == "PostToolUse"
out = e["tool_response"]["output"]
if "secret" in out:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": out.replace("secret", "***")}}))
elif "lint" in out:
    print(json.dumps({"decision": "block", "reason": "fix the lint first"}))
"#;
    let h = hook(
        script(&dir, "post.py", body),
        &[HookEvent::PostToolUse],
        None,
    );
    let ctx = |output: &str| PostToolUseContext {
        tool_name: "t".into(),
        output: output.into(),
        ..Default::default()
    };
    assert_eq!(
        h.post_tool_use(&ctx("a secret")).await.unwrap(),
        PostToolUseAction::MutateOutput {
            updated_content: "a ***".into()
        }
    );
    assert_eq!(
        h.post_tool_use(&ctx("lint")).await.unwrap(),
        PostToolUseAction::MutateOutput {
            updated_content: "lint\n[hook `cmd`] fix the lint first".into()
        }
    );
    assert_eq!(
        h.post_tool_use(&ctx("fine")).await.unwrap(),
        PostToolUseAction::Continue
    );
    // Pre-only events are not sent to it.
    assert_eq!(
        h.pre_tool_use(&pre("t")).await.unwrap(),
        PreToolUseAction::Continue
    );
}

#[tokio::test]
async fn slow_command_hook_times_out_and_denies() {
    let dir = tempfile::tempdir().unwrap();
    let cfg: HooksConfig = toml::from_str(&format!(
        "redact_secrets = false\n[[command]]\ncommand = \"{}\"\ntimeout = 0.3\n",
        script(&dir, "slow.sh", "sleep 5\n")
    ))
    .unwrap();
    let mut reg = HookRegistry::new();
    cfg.register(&mut reg).unwrap();
    let started = std::time::Instant::now();
    let r = reg.run_pre_tool_use(pre("run_bash")).await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(r.blocked.unwrap().denied_by_failure);
    assert_eq!(r.failures[0].kind, FailureKind::Timeout);
}

#[test]
fn config_rejects_unknown_keys_and_bad_values() {
    assert!(toml::from_str::<HooksConfig>("nope = 1").is_err());
    assert!(toml::from_str::<HooksConfig>("[[command]]\ncommand = \"x\"\nbogus = 1").is_err());
    let bad: HooksConfig = toml::from_str("[[command]]\ncommand = \"x\"\nmatcher = \"(\"").unwrap();
    assert!(matches!(bad.command_hooks(), Err(Error::Matcher { .. })));
    let bad: HooksConfig = toml::from_str("timeout = -1").unwrap();
    assert!(bad.command_hooks().is_err());
    let d = HooksConfig::default();
    assert!(d.redact_secrets);
    // The default is in the guard's state directory, never relative to a project.
    let db = d.audit_db_path().unwrap();
    assert!(db.is_absolute(), "{}", db.display());
    assert!(db.ends_with(DEFAULT_AUDIT_DB));
    // A relative path in a policy resolves against the policy file's directory.
    let mut rel: HooksConfig = toml::from_str("audit_db = \"logs/a.db\"").unwrap();
    rel.anchor(std::path::Path::new("/etc/agent-guard/policy.toml"));
    assert_eq!(
        rel.audit_db_path().unwrap(),
        std::path::PathBuf::from("/etc/agent-guard/logs/a.db")
    );
    let mut url: HooksConfig = toml::from_str("audit_db = \"postgres://h/db\"").unwrap();
    url.anchor(std::path::Path::new("/etc/p.toml"));
    assert_eq!(
        url.audit_db_path().unwrap(),
        std::path::PathBuf::from("postgres://h/db")
    );
}
