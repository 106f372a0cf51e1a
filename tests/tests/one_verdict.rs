//! One verdict, generated: for calls over every path shape (symlinks into and out of the
//! project, `..` after a symlink and after a missing name, `~`, sensitive and protected names)
//! in every mode, what the runtime's executor decides is what a client hook decides for the
//! same call (translated from Claude Code's tool names by the one table), reason code included.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::sync::Arc;

use agent_core::clients::{self, Client};
use agent_core::{Approval, FixedApprover, Policy, ToolCall, ToolContext};
use perm_rules::{Decision, PermissionMode};
use proptest::prelude::*;
use serde_json::{Value, json};

const PATHS: &[&str] = &[
    "{P}/src/lib.rs",
    "src/lib.rs",
    "{P}/.env",
    "{P}/.env.example",
    "{P}/env_link",
    "{P}/etc_link/hostname",
    "{P}/etc_link/../etc/hostname",
    "{P}/src/../src/lib.rs",
    "{P}/missing/../src/lib.rs",
    "{P}/.git/config",
    "{P}/git_link/config",
    "{P}/.mcp.json",
    "~/.ssh/id_rsa",
    "~/notes.txt",
    "/etc/shadow",
    "/etc/hostname",
    "{P}/../outside.txt",
    "{P}/new/dir/file.txt",
];

/// (Claude tool, its input, guard tool, its arguments) for a path.
fn shapes(path: &str) -> Vec<(&'static str, Value, &'static str, Value)> {
    vec![
        (
            "Read",
            json!({"file_path": path}),
            "read_file",
            json!({"file_path": path}),
        ),
        (
            "Write",
            json!({"file_path": path, "content": "x"}),
            "file_write",
            json!({"file_path": path, "content": "x"}),
        ),
        (
            "Edit",
            json!({"file_path": path, "old_string": "a", "new_string": "b"}),
            "file_edit",
            json!({"file_path": path, "old_string": "a", "new_string": "b"}),
        ),
        (
            "Grep",
            json!({"pattern": "x", "path": path}),
            "grep_files",
            json!({"pattern": "x", "path": path}),
        ),
        (
            "Bash",
            json!({"command": format!("cat {path}")}),
            "run_bash",
            json!({"command": format!("cat {path}")}),
        ),
    ]
}

struct Fixture {
    _tmp: tempfile::TempDir,
    project: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().canonicalize().unwrap().join("project");
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(p.join("src/lib.rs"), "a\n").unwrap();
    std::fs::write(p.join(".env"), "TOKEN=1\n").unwrap();
    std::fs::write(p.join(".env.example"), "TOKEN=\n").unwrap();
    std::fs::write(p.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(p.join(".mcp.json"), "{}\n").unwrap();
    std::os::unix::fs::symlink(p.join(".env"), p.join("env_link")).unwrap();
    std::os::unix::fs::symlink("/etc", p.join("etc_link")).unwrap();
    std::os::unix::fs::symlink(p.join(".git"), p.join("git_link")).unwrap();
    Fixture {
        _tmp: tmp,
        project: p,
    }
}

fn policy(mode: PermissionMode) -> Policy {
    Policy::from_text(
        "one-verdict.toml",
        &format!(
            r#"
[permissions]
mode = "{mode}"
default = "ask"
allow = ["read_file", "grep_files", "run_bash(cat:*)", "file_write(./src/**)"]
deny = ["file_edit(**/.mcp.json)"]
[hooks]
audit = false
"#
        ),
    )
    .unwrap()
}

/// What the runtime did with the call: (decision, code when refused).
fn runtime_seen(result: &agent_core::ToolCallResult) -> (Option<Decision>, Option<String>) {
    let code = (result.decision == Some(Decision::Deny)).then(|| result.code.clone().unwrap());
    (result.decision, code)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_runtime_and_a_client_hook_agree(
        path in 0..PATHS.len(),
        shape in 0..5usize,
        mode in 0..PermissionMode::ALL.len(),
    ) {
        let fx = fixture();
        let mode = PermissionMode::ALL[mode];
        let path = PATHS[path].replace("{P}", fx.project.to_str().unwrap());
        let (claude_tool, claude_input, tool, args) = shapes(&path).swap_remove(shape);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let env = HashMap::new();
        let guard = rt
            .block_on(
                policy(mode)
                    .guard_builder(&fx.project, &env)
                    .unwrap()
                    .approver(Arc::new(FixedApprover(Approval::Deny)))
                    .build(),
            )
            .unwrap();

        // The hook's door: the client's tool name through the one table, then evaluate.
        let calls = clients::translate(Client::ClaudeCode, claude_tool, &claude_input, &fx.project)
            .unwrap();
        let verdict = rt.block_on(guard.evaluate(&calls[0]));
        let hook = (
            Some(verdict.decision),
            (verdict.decision == Decision::Deny).then(|| verdict.code().to_owned()),
        );

        // The runtime's door: the executor with an approver that says no, so nothing asked runs.
        let ctx = ToolContext::new("s").with_sandbox(Arc::clone(guard.sandbox()));
        let call = ToolCall { id: "c".into(), name: tool.into(), arguments: args };
        let results = rt.block_on(guard.executor().execute_parallel(&[call], &ctx, None));
        let runtime = runtime_seen(&results[0]);
        prop_assert_eq!(&hook, &runtime, "{} {} in {}", claude_tool, claude_input, mode);

        // And never a sensitive read allowed by either door.
        if path.contains(".env\"") || path.ends_with(".env") || path.contains("env_link")
            || path.contains("shadow") || path.contains(".ssh")
        {
            prop_assert_ne!(hook.0, Some(Decision::Allow), "{} {}", claude_tool, claude_input);
        }
    }
}
