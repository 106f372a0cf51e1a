//! ask_user, todo_write, save_memory, compress_context, bg_task_run.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use fs_sandbox::WriteMode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{sandbox_denied, str_arg};
use crate::context::ToolContext;
use crate::model::ToolCall;
use crate::runtime::{BgNotificationQueue, CompactionRequest};
use crate::tool::{AgentTool, InterruptBehavior, ToolError, ToolOutput};

/// Where `ask_user` questions go (a terminal, a web UI).
#[async_trait]
pub trait UserChannel: Send + Sync {
    /// The user's answer, or `None` when there is none.
    async fn ask(&self, question: &str) -> Option<String>;
}

/// Asks the user a question. Errors in a silent (subagent) context. Serial, Block.
#[derive(Clone, Default)]
pub struct AskUserTool {
    channel: Option<Arc<dyn UserChannel>>,
}

impl std::fmt::Debug for AskUserTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskUserTool")
            .field("channel", &self.channel.is_some())
            .finish()
    }
}

impl AskUserTool {
    /// A tool asking through `channel`.
    pub fn new(channel: Arc<dyn UserChannel>) -> Self {
        AskUserTool {
            channel: Some(channel),
        }
    }
}

#[async_trait]
impl AgentTool for AskUserTool {
    fn name(&self) -> &str {
        "ask_user"
    }
    fn description(&self) -> &str {
        "Ask the user a clarifying `question` and wait for the answer."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["question"],"additionalProperties":false,
            "properties":{"question":{"type":"string"}}})
    }
    fn interrupt_behavior(&self) -> InterruptBehavior {
        InterruptBehavior::Block
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if ctx.silent {
            return Err(ToolError::denied(
                "ask-user-silent",
                "ask_user is not available in a silent (subagent) context: decide from the task or report back to the parent",
            ));
        }
        let question = str_arg(&args, "question")?;
        let channel = self.channel.as_ref().ok_or_else(|| {
            ToolError::denied("ask-user-no-channel", "no user channel is configured")
        })?;
        match channel.ask(question).await {
            Some(answer) => Ok(ToolOutput::text(answer)),
            None => Err(ToolError::Failed("the user gave no answer".into())),
        }
    }
}

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// The shared todo list `todo_write` replaces.
pub type TodoList = Arc<Mutex<Vec<Todo>>>;

/// Replaces the agent's todo list. Serial, Cancel.
#[derive(Debug, Clone, Default)]
pub struct TodoWriteTool {
    /// The list.
    pub todos: TodoList,
}

#[async_trait]
impl AgentTool for TodoWriteTool {
    fn name(&self) -> &str {
        "todo_write"
    }
    fn description(&self) -> &str {
        "Replace the todo list with `todos` (each `content` and `status`: pending, in_progress, completed)."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["todos"],"additionalProperties":false,"properties":{
            "todos":{"type":"array","items":{"type":"object","required":["content","status"],
            "properties":{"content":{"type":"string"},
            "status":{"enum":["pending","in_progress","completed"]}}}}}})
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let todos: Vec<Todo> =
            serde_json::from_value(args.get("todos").cloned().unwrap_or(Value::Null))
                .map_err(|e| ToolError::InvalidArgs(e.to_string()))?;
        let done = todos.iter().filter(|t| t.status == "completed").count();
        let total = todos.len();
        *self
            .todos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = todos;
        Ok(ToolOutput::text(format!(
            "todo list updated: {done}/{total} completed"
        )))
    }
}

/// Appends a note to `{library_dir}/memory.md` through the sandbox. Serial, Block.
#[derive(Debug, Clone, Copy, Default)]
pub struct SaveMemoryTool;

#[async_trait]
impl AgentTool for SaveMemoryTool {
    fn name(&self) -> &str {
        "save_memory"
    }
    fn description(&self) -> &str {
        "Save `content` to the agent's long-term memory file."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["content"],"additionalProperties":false,
            "properties":{"content":{"type":"string"}}})
    }
    fn interrupt_behavior(&self) -> InterruptBehavior {
        InterruptBehavior::Block
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let sandbox = ctx.require_sandbox()?;
        let content = str_arg(&args, "content")?;
        let dir = ctx
            .library_dir
            .clone()
            .unwrap_or_else(|| sandbox.cwd().join(".agent-memory"));
        sandbox
            .create_dir_all(&dir)
            .map_err(|e| sandbox_denied(&e))?;
        let path = dir.join("memory.md");
        let mut file = sandbox
            .open_write(&path, WriteMode::Append)
            .map_err(|e| sandbox_denied(&e))?;
        writeln!(file, "- {}", content.replace('\n', " "))
            .and_then(|()| file.sync_data())
            .map_err(|e| ToolError::Failed(format!("cannot write memory: {e}")))?;
        Ok(ToolOutput::text(format!("saved to `{}`", path.display())))
    }
}

/// Asks the loop to compact the context after this step. Serial, Cancel.
#[derive(Debug, Clone, Default)]
pub struct CompressContextTool {
    /// The flag the runtime watches.
    pub request: CompactionRequest,
}

#[async_trait]
impl AgentTool for CompressContextTool {
    fn name(&self) -> &str {
        "compress_context"
    }
    fn description(&self) -> &str {
        "Compact the conversation (older messages are summarised away) after this step."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","additionalProperties":false,"properties":{}})
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.request.request();
        Ok(ToolOutput::text(
            "the context will be compacted after this step",
        ))
    }
}

/// Runs another tool call in the background through the full guard pipeline (with a silent
/// context: an Ask is denied, nobody is asked); the result arrives as a notification before a
/// later model call. Serial, Cancel (the background task itself is not cancelled with it).
#[derive(Debug, Clone)]
pub struct BgTaskRunTool {
    queue: BgNotificationQueue,
    next: Arc<AtomicU64>,
}

impl BgTaskRunTool {
    /// A tool reporting to `queue`; the call runs through the executor of the calling context.
    pub fn new(queue: BgNotificationQueue) -> Self {
        BgTaskRunTool {
            queue,
            next: Arc::new(AtomicU64::new(1)),
        }
    }
}

#[async_trait]
impl AgentTool for BgTaskRunTool {
    fn name(&self) -> &str {
        "bg_task_run"
    }
    fn description(&self) -> &str {
        "Run the tool call `tool` with `arguments` in the background; its result is delivered as a later notification."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["tool","arguments"],"additionalProperties":false,
            "properties":{"tool":{"type":"string"},"arguments":{"type":"object"}}})
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = str_arg(&args, "tool")?.to_owned();
        if tool == self.name() {
            return Err(ToolError::InvalidArgs(
                "a background task cannot start another".into(),
            ));
        }
        let executor = ctx
            .executor
            .clone()
            .ok_or_else(|| ToolError::Failed("no executor for background tasks".into()))?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let call = ToolCall {
            id: format!("{}-bg{id}", ctx.call_id),
            name: tool.clone(),
            arguments: args.get("arguments").cloned().unwrap_or(Value::Null),
        };
        let mut bg_ctx = ctx.clone();
        bg_ctx.silent = true;
        bg_ctx.events = None;
        bg_ctx.cancel = tokio_util::sync::CancellationToken::new();
        let queue = self.queue.clone();
        tokio::spawn(async move {
            let results = executor
                .execute_parallel(std::slice::from_ref(&call), &bg_ctx, None)
                .await;
            for r in results {
                let status = if r.is_error { "failed" } else { "finished" };
                queue.push(format!(
                    "task bg{id} (`{}`) {status}: {}",
                    r.tool, r.content
                ));
            }
        });
        Ok(ToolOutput::text(format!(
            "started background task bg{id} running `{tool}`"
        )))
    }
}
