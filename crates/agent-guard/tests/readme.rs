//! Every command the README shows a newcomer runs, exactly as written, against the built binary.
//!
//! `cargo run -p agent-guard --` and a bare `agent-guard` both stand for the binary under test.
//! Two commands are not run here: `cargo xtask ci` is the command running this test, and
//! `cargo install` only copies the binary this test already built.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;
use std::process::Command;

fn readme_commands(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_block = matches!(line.trim(), "```sh" | "```bash" | "```console");
            continue;
        }
        if !in_block || line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => pending.push_str(start),
            None => {
                pending.push_str(line);
                commands.push(std::mem::take(&mut pending));
            }
        }
    }
    commands
}

#[test]
fn every_readme_command_works_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let bin = env!("CARGO_BIN_EXE_agent-guard");
    let commands = readme_commands(&text);
    assert!(
        commands
            .iter()
            .any(|c| c == "cargo run -p agent-guard -- demo"),
        "the README lost its main command: {commands:?}"
    );
    assert!(commands.iter().any(|c| c == "cargo xtask ci"));
    // The README's fleet example uses a fixed SQLite file: one left by an earlier run (maybe of
    // an older schema, which every command refuses) is not what a newcomer starts from.
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("/tmp/agent-guard-fleet.db{suffix}"));
    }
    let mut ran = 0;
    for command in &commands {
        if command.starts_with("cargo xtask") || command.starts_with("cargo install") {
            continue;
        }
        // Through a placeholder, so the binary's own path (which ends in `agent-guard`) is not
        // rewritten again.
        let script = command
            .replace("cargo run -p agent-guard --", "@AG@")
            .replace("agent-guard ", "@AG@ ")
            .replace("@AG@", bin);
        assert!(
            script.trim_start().starts_with(bin) || script.contains(&format!("| {bin}")),
            "README command is not an agent-guard command: `{command}`"
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README command failed ({:?}): `{command}`\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 4, "only {ran} README commands ran");
}

#[test]
fn the_extractor_joins_continuations_and_skips_comments() {
    let text =
        "x\n```sh\n# a comment\necho a \\\n  | cat\n```\nnot this\n```rust\nlet x = 1;\n```\n";
    assert_eq!(readme_commands(text), vec!["echo a   | cat".to_owned()]);
}
