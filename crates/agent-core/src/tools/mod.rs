//! Built-in tools. Each declares its contract as in the spec's classification tables and does
//! every file access through the fs-sandbox race-free opens.

mod bash;
mod fs;
mod misc;
mod subagent;

use std::io::Read;

use fs_sandbox::SandboxError;
use serde_json::Value;

pub use bash::{BashSubjects, RunBashTool, SandboxJudge};
pub use fs::{
    DEFAULT_MAX_FILE_SIZE, FileEditTool, FileWriteTool, GlobFilesTool, GrepFilesTool, ReadFileTool,
};
pub use misc::{
    AskUserTool, BgTaskRunTool, CompressContextTool, SaveMemoryTool, Todo, TodoList, TodoWriteTool,
    UserChannel,
};
pub use subagent::{SubagentRequest, SubagentSpawner, SubagentTool};

use crate::tool::ToolError;

/// Largest file a read tool loads (bounds memory whatever the file size).
const MAX_READ_BYTES: u64 = 8 << 20;

pub(crate) fn sandbox_denied(err: &SandboxError) -> ToolError {
    ToolError::denied(format!("sandbox-{}", err.code()), err.to_string())
}

pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::InvalidArgs(format!("`{key}` must be a string")))
}

pub(crate) fn read_text(file: std::fs::File) -> Result<String, ToolError> {
    let mut buf = Vec::new();
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut buf)
        .map_err(|e| ToolError::Failed(format!("cannot read: {e}")))?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
