//! `check` matches `run_bash` content rules on the real shell parse, as the runtime does.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use assert_cmd::Command;

fn decision(command: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::cargo_bin("agent-guard")
        .unwrap()
        .current_dir(&root)
        .env_remove("AGENT_PERMISSIONS_DENY")
        .env_remove("AGENT_PERMISSIONS_ASK")
        .env_remove("AGENT_PERMISSIONS_ALLOW")
        .env_remove("AGENT_PERMISSIONS_MODE")
        .args([
            "check",
            "--json",
            "--policy",
            "examples/policy.toml",
            "--tool",
            "run_bash",
        ])
        .arg("--input")
        .arg(serde_json::json!({ "command": command }).to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["decision"].as_str().unwrap().to_owned()
}

#[test]
fn wrapped_and_substituted_commands_are_subjects() {
    // `run_bash(rm:*)` is a deny rule of the example policy.
    assert_eq!(decision("env rm -rf x"), "deny");
    assert_eq!(decision("echo $(rm -rf x)"), "deny");
    assert_eq!(decision("bash -c 'rm -rf x'"), "deny");
    assert_eq!(decision("git status"), "allow");
}
