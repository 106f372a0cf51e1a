//! What the client itself says about the guard's hooks: Codex skips a new or edited hook,
//! silently, until the user trusts it in `/hooks` (seen in the real client, tests/clients), so
//! `doctor` asks Codex, through `codex app-server`'s `hooks/list`, for each hook's trust status.
//! Gemini CLI runs a project's hooks only in a folder it trusts.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// One hook as Codex lists it.
pub(crate) struct CodexHook {
    pub event: String,
    pub command: String,
    /// `trusted`, `managed`, `untrusted` or `modified`.
    pub trust: String,
}

impl CodexHook {
    /// Whether Codex runs it.
    pub(crate) fn runs(&self) -> bool {
        matches!(self.trust.as_str(), "trusted" | "managed")
    }
}

/// The hooks Codex would run in `project`, from `codex app-server` (the `codex` on PATH).
pub(crate) fn codex_hooks(project: &Path, timeout: Duration) -> Result<Vec<CodexHook>, String> {
    let mut child = Command::new("codex")
        .arg("app-server")
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run `codex app-server` (is codex on PATH?): {e}"))?;
    let result = ask_hooks(&mut child, project, timeout);
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn ask_hooks(
    child: &mut std::process::Child,
    project: &Path,
    timeout: Duration,
) -> Result<Vec<CodexHook>, String> {
    let mut stdin = child.stdin.take().ok_or("no stdin to codex app-server")?;
    let stdout = child
        .stdout
        .take()
        .ok_or("no stdout from codex app-server")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v.get("id") == Some(&json!(2))
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let messages = [
        json!({"id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "agent-guard-doctor", "version": env!("CARGO_PKG_VERSION")}}}),
        json!({"method": "initialized"}),
        json!({"id": 2, "method": "hooks/list", "params": {"cwds": [project]}}),
    ];
    for m in messages {
        writeln!(stdin, "{m}").map_err(|e| format!("cannot talk to codex app-server: {e}"))?;
    }
    let reply = rx
        .recv_timeout(timeout)
        .map_err(|_| "codex app-server gave no hook list in time".to_owned())?;
    if let Some(err) = reply.get("error") {
        return Err(format!("codex app-server: {err}"));
    }
    Ok(parse_hooks(&reply))
}

fn parse_hooks(reply: &Value) -> Vec<CodexHook> {
    let field = |h: &Value, k: &str| h.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    reply
        .pointer("/result/data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("hooks").and_then(Value::as_array))
        .flatten()
        .map(|h| CodexHook {
            event: field(h, "eventName"),
            command: field(h, "command"),
            trust: field(h, "trustStatus"),
        })
        .collect()
}

/// Whether Gemini CLI trusts the folder `project` (its `trustedFolders.json` under `home`, or
/// `GEMINI_CLI_TRUST_WORKSPACE=true`). In an untrusted folder `gemini -p` refuses to start,
/// and with `--skip-trust` it starts without the project's hooks, silently.
pub(crate) fn gemini_trusts(home: &Path, project: &Path, trust_env: Option<&str>) -> bool {
    if trust_env.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1") {
        return true;
    }
    let Ok(text) = std::fs::read_to_string(home.join(".gemini/trustedFolders.json")) else {
        return false;
    };
    let Ok(Value::Object(entries)) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    let mut trusted = false;
    for (path, level) in &entries {
        let path = Path::new(path);
        match level.as_str() {
            Some("DO_NOT_TRUST") if project == path => return false,
            Some("TRUST_FOLDER") if project.starts_with(path) => trusted = true,
            Some("TRUST_PARENT") if path.parent().is_some_and(|p| project.starts_with(p)) => {
                trusted = true;
            }
            _ => {}
        }
    }
    trusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_folder_trust_is_read() {
        let home = tempfile::tempdir().unwrap();
        let p = Path::new("/w/proj");
        assert!(!gemini_trusts(home.path(), p, None));
        assert!(gemini_trusts(home.path(), p, Some("true")));
        std::fs::create_dir(home.path().join(".gemini")).unwrap();
        let file = home.path().join(".gemini/trustedFolders.json");
        std::fs::write(&file, r#"{"/w": "TRUST_FOLDER"}"#).unwrap();
        assert!(gemini_trusts(home.path(), p, None));
        std::fs::write(&file, r#"{"/w/proj/x": "TRUST_PARENT"}"#).unwrap();
        assert!(gemini_trusts(home.path(), p, None));
        std::fs::write(
            &file,
            r#"{"/w": "TRUST_FOLDER", "/w/proj": "DO_NOT_TRUST"}"#,
        )
        .unwrap();
        assert!(!gemini_trusts(home.path(), p, None));
    }

    #[test]
    fn hook_list_is_read() {
        let reply = json!({"id": 2, "result": {"data": [{"cwd": "/p", "hooks": [
            {"eventName": "preToolUse", "command": "/x/agent-guard codex-hook", "trustStatus": "untrusted"},
            {"eventName": "postToolUse", "command": "/x/agent-guard codex-hook", "trustStatus": "trusted"}]}]}});
        let hooks = parse_hooks(&reply);
        assert_eq!(hooks.len(), 2);
        assert!(!hooks[0].runs());
        assert!(hooks[1].runs());
        assert_eq!(hooks[0].event, "preToolUse");
    }
}
