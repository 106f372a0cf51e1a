//! External hooks spoken to in the Claude Code hook protocol.

use std::process::Stdio;

use async_trait::async_trait;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::CommandHookConfig;
use crate::error::Error;
use crate::hook::{
    AgentHook, HookError, HookResult, PostToolUseAction, PostToolUseContext, PreToolUseAction,
    PreToolUseContext,
};

/// Most bytes read from a hook's stdout or stderr; more is a failure, not a silent cut.
const MAX_HOOK_OUTPUT: u64 = 1 << 20;

/// The events a command hook can receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    /// Before a tool runs.
    PreToolUse,
    /// After a tool ran.
    PostToolUse,
}

impl HookEvent {
    fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
        }
    }
}

/// Claude Code's matcher: empty or `*` matches every tool; a plain name, `a|b` or a glob such
/// as `mcp__*` is matched whole; anything else is an anchored regex.
#[derive(Debug, Clone)]
pub struct ToolMatcher(Option<Regex>);

impl ToolMatcher {
    /// Compiles `matcher`.
    pub fn new(matcher: Option<&str>) -> Result<Self, Error> {
        let text = matcher.map(str::trim).unwrap_or("");
        if text.is_empty() || text == "*" {
            return Ok(ToolMatcher(None));
        }
        let is_glob = text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | '*'));
        let pattern = if is_glob {
            text.split('|')
                .map(|alt| {
                    alt.split('*')
                        .map(regex::escape)
                        .collect::<Vec<_>>()
                        .join(".*")
                })
                .collect::<Vec<_>>()
                .join("|")
        } else {
            text.to_owned()
        };
        Regex::new(&format!("^(?:{pattern})$"))
            .map(|re| ToolMatcher(Some(re)))
            .map_err(|source| Error::Matcher {
                matcher: text.to_owned(),
                source,
            })
    }

    /// Whether `tool_name` matches.
    pub fn matches(&self, tool_name: &str) -> bool {
        self.0.as_ref().is_none_or(|re| re.is_match(tool_name))
    }
}

/// An external executable run for matching tool calls (`bash -c <command>`). It receives the
/// event as JSON on stdin; exit 0 (optionally with JSON on stdout) continues or decides, exit 2
/// blocks with stderr as the reason, any other exit is a hook failure.
#[derive(Debug, Clone)]
pub struct CommandHook {
    name: String,
    command: String,
    matcher: ToolMatcher,
    pre: bool,
    post: bool,
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// The fields of a hook's JSON stdout we act on (others are ignored, as Claude Code does).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HookOutput {
    #[serde(rename = "continue")]
    continue_: Option<bool>,
    stop_reason: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<SpecificOutput>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecificOutput {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
    #[serde(rename = "updatedMCPToolOutput")]
    updated_mcp_tool_output: Option<Value>,
}

impl CommandHook {
    /// A hook from one `[[hooks.command]]` entry.
    pub fn new(config: &CommandHookConfig) -> Result<Self, Error> {
        if config.command.trim().is_empty() {
            return Err(Error::Config {
                key: "hooks.command.command".to_owned(),
                message: "the command is empty".to_owned(),
            });
        }
        Ok(CommandHook {
            name: config
                .name
                .clone()
                .unwrap_or_else(|| format!("command:{}", config.command)),
            command: config.command.clone(),
            matcher: ToolMatcher::new(config.matcher.as_deref())?,
            pre: config.events.contains(&HookEvent::PreToolUse),
            post: config.events.contains(&HookEvent::PostToolUse),
        })
    }

    async fn run(&self, input: &Value, cwd: Option<&std::path::Path>) -> HookResult<Outcome> {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // The registry's timeout drops this future; the child must not outlive it.
            .kill_on_drop(true);
        if let Some(dir) = cwd {
            cmd.current_dir(dir).env("CLAUDE_PROJECT_DIR", dir);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| HookError::new(format!("cannot start `{}`: {e}", self.command)))?;
        let payload = serde_json::to_vec(input)
            .map_err(|e| HookError::new(format!("cannot encode the hook input: {e}")))?;
        let mut stdin = child.stdin.take();
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let write = async {
            if let Some(mut pipe) = stdin.take() {
                // A hook that exits without reading stdin is fine (broken pipe).
                let _ = pipe.write_all(&payload).await;
            }
        };
        let read = |pipe: Option<_>| async move {
            let mut buf = Vec::new();
            if let Some(pipe) = pipe {
                let pipe: Box<dyn tokio::io::AsyncRead + Unpin + Send> = pipe;
                pipe.take(MAX_HOOK_OUTPUT + 1).read_to_end(&mut buf).await?;
            }
            Ok::<_, std::io::Error>(buf)
        };
        let out_pipe = stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>);
        let err_pipe = stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>);
        let ((), out, err) = tokio::join!(write, read(out_pipe), read(err_pipe));
        let io = |e: std::io::Error| HookError::new(format!("cannot read the hook's output: {e}"));
        let (out, err) = (out.map_err(io)?, err.map_err(io)?);
        if out.len() as u64 > MAX_HOOK_OUTPUT || err.len() as u64 > MAX_HOOK_OUTPUT {
            return Err(HookError::new("the hook wrote more than 1 MiB"));
        }
        let status = child
            .wait()
            .await
            .map_err(|e| HookError::new(format!("cannot wait for the hook: {e}")))?;
        Ok(Outcome {
            code: status.code(),
            stdout: String::from_utf8_lossy(&out).into_owned(),
            stderr: String::from_utf8_lossy(&err).trim().to_owned(),
        })
    }

    fn failure(&self, outcome: &Outcome) -> HookError {
        let code = outcome
            .code
            .map_or_else(|| "a signal".to_owned(), |c| format!("status {c}"));
        HookError::new(format!(
            "hook `{}` exited with {code}: {}",
            self.name,
            if outcome.stderr.is_empty() {
                "(no stderr)"
            } else {
                &outcome.stderr
            }
        ))
    }

    /// Parses stdout: empty or plain text means "no opinion"; a JSON object is the protocol.
    fn parse(&self, stdout: &str) -> HookResult<HookOutput> {
        let text = stdout.trim();
        if !text.starts_with('{') {
            return Ok(HookOutput::default());
        }
        serde_json::from_str(text)
            .map_err(|e| HookError::new(format!("hook `{}` printed invalid JSON: {e}", self.name)))
    }

    fn event(&self, ctx_common: Value, event: HookEvent) -> Value {
        let mut v = ctx_common;
        if let Some(map) = v.as_object_mut() {
            map.insert("hook_event_name".to_owned(), json!(event.as_str()));
            map.insert("permission_mode".to_owned(), json!("default"));
        }
        v
    }
}

fn path_str(p: Option<&std::path::PathBuf>) -> Value {
    p.map_or(Value::Null, |p| json!(p.display().to_string()))
}

#[async_trait]
impl AgentHook for CommandHook {
    fn name(&self) -> &str {
        &self.name
    }

    async fn pre_tool_use(&self, ctx: &PreToolUseContext) -> HookResult<PreToolUseAction> {
        if !self.pre || !self.matcher.matches(&ctx.tool_name) {
            return Ok(PreToolUseAction::Continue);
        }
        let input = self.event(
            json!({
                "session_id": ctx.session_id,
                "transcript_path": path_str(ctx.transcript_path.as_ref()),
                "cwd": path_str(ctx.cwd.as_ref()),
                "tool_name": ctx.tool_name,
                "tool_input": ctx.args,
                "tool_use_id": ctx.tool_call_id,
            }),
            HookEvent::PreToolUse,
        );
        let outcome = self.run(&input, ctx.cwd.as_deref()).await?;
        match outcome.code {
            Some(0) => {}
            Some(2) => {
                return Ok(PreToolUseAction::Block {
                    reason: if outcome.stderr.is_empty() {
                        format!("blocked by hook `{}`", self.name)
                    } else {
                        outcome.stderr
                    },
                });
            }
            _ => return Err(self.failure(&outcome)),
        }
        let out = self.parse(&outcome.stdout)?;
        let specific = out.hook_specific_output.unwrap_or_default();
        let reason = specific
            .permission_decision_reason
            .clone()
            .or(out.reason.clone());
        if out.continue_ == Some(false) {
            return Ok(PreToolUseAction::Block {
                reason: out
                    .stop_reason
                    .or(reason)
                    .unwrap_or_else(|| format!("hook `{}` asked to stop", self.name)),
            });
        }
        // hookSpecificOutput wins over the legacy top-level `decision`, as in Claude Code.
        let decision = specific
            .permission_decision
            .clone()
            .or(out.decision.clone());
        match decision.as_deref() {
            None | Some("allow" | "approve") => {}
            Some("deny" | "block") => {
                return Ok(PreToolUseAction::Block {
                    reason: reason.unwrap_or_else(|| format!("denied by hook `{}`", self.name)),
                });
            }
            Some("ask" | "defer") => {
                return Ok(PreToolUseAction::PermissionRequired {
                    message: reason
                        .unwrap_or_else(|| format!("hook `{}` asks for approval", self.name)),
                });
            }
            Some(other) => {
                return Err(HookError::new(format!(
                    "hook `{}` returned unknown permission decision `{other}`",
                    self.name
                )));
            }
        }
        // `allow` never grants beyond the rules: the rules still run on the final arguments.
        if specific.updated_input.is_some() || specific.additional_context.is_some() {
            return Ok(PreToolUseAction::MutateInput {
                updated_args: specific.updated_input,
                additional_context: specific.additional_context,
            });
        }
        Ok(PreToolUseAction::Continue)
    }

    async fn post_tool_use(&self, ctx: &PostToolUseContext) -> HookResult<PostToolUseAction> {
        if !self.post || !self.matcher.matches(&ctx.tool_name) {
            return Ok(PostToolUseAction::Continue);
        }
        let input = self.event(
            json!({
                "session_id": ctx.session_id,
                "transcript_path": path_str(ctx.transcript_path.as_ref()),
                "cwd": path_str(ctx.cwd.as_ref()),
                "tool_name": ctx.tool_name,
                "tool_input": ctx.args,
                "tool_use_id": ctx.tool_call_id,
                "tool_response": { "output": ctx.output, "is_error": ctx.is_error },
            }),
            HookEvent::PostToolUse,
        );
        let outcome = self.run(&input, ctx.cwd.as_deref()).await?;
        let append = |note: &str| PostToolUseAction::MutateOutput {
            updated_content: format!("{}\n[hook `{}`] {note}", ctx.output, self.name),
        };
        match outcome.code {
            Some(0) => {}
            // The tool already ran; as in Claude Code, stderr is fed back to the model.
            Some(2) => return Ok(append(&outcome.stderr)),
            _ => return Err(self.failure(&outcome)),
        }
        let out = self.parse(&outcome.stdout)?;
        let specific = out.hook_specific_output.unwrap_or_default();
        let mut output = match specific.updated_mcp_tool_output {
            Some(Value::String(s)) => Some(s),
            Some(other) => Some(other.to_string()),
            None => None,
        };
        let mut notes = Vec::new();
        if matches!(out.decision.as_deref(), Some("block")) {
            notes.push(
                out.reason
                    .unwrap_or_else(|| format!("hook `{}` flagged this output", self.name)),
            );
        }
        if let Some(extra) = specific.additional_context.filter(|c| !c.is_empty()) {
            notes.push(extra);
        }
        if output.is_none() && notes.is_empty() {
            return Ok(PostToolUseAction::Continue);
        }
        let mut content = output.take().unwrap_or_else(|| ctx.output.clone());
        for note in notes {
            content.push_str(&format!("\n[hook `{}`] {note}", self.name));
        }
        Ok(PostToolUseAction::MutateOutput {
            updated_content: content,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matcher_forms() {
        let all = ToolMatcher::new(None).unwrap();
        assert!(all.matches("anything"));
        assert!(ToolMatcher::new(Some("*")).unwrap().matches("x"));
        let alt = ToolMatcher::new(Some("file_write|file_edit")).unwrap();
        assert!(alt.matches("file_edit"));
        assert!(!alt.matches("file_editor"));
        let glob = ToolMatcher::new(Some("mcp__*")).unwrap();
        assert!(glob.matches("mcp__github__search"));
        assert!(!glob.matches("run_bash"));
        let re = ToolMatcher::new(Some("Notebook.*")).unwrap();
        assert!(re.matches("NotebookEdit"));
        assert!(ToolMatcher::new(Some("(")).is_err());
    }
}
