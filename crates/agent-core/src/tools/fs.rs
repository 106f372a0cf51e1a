//! read_file, grep_files, glob_files, file_write, file_edit.

use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use fs_sandbox::{Op, WriteMode};
use serde_json::{Value, json};

use super::{read_text, sandbox_denied, str_arg};
use crate::context::ToolContext;
use crate::tool::{AgentTool, ToolError, ToolOutput};

/// The default `max_file_size` of the write tools: 1 MiB.
pub const DEFAULT_MAX_FILE_SIZE: usize = 1 << 20;
const MAX_GREP_MATCHES: usize = 200;
const MAX_GLOB_RESULTS: usize = 1000;

/// Reads a text file (optionally a line window). Read-only, concurrency-safe, Cancel.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadFileTool;

#[async_trait]
impl AgentTool for ReadFileTool {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a text file inside the sandbox, optionally from line `offset` for `limit` lines."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["file_path"],"additionalProperties":false,"properties":{
            "file_path":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}}})
    }
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let sandbox = ctx.require_sandbox()?;
        let path = str_arg(&args, "file_path")?;
        let file = sandbox.open_read(path).map_err(|e| sandbox_denied(&e))?;
        let text = read_text(file)?;
        let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0);
        let limit = args.get("limit").and_then(Value::as_u64);
        if offset == 0 && limit.is_none() {
            return Ok(ToolOutput::text(text));
        }
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        let take = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let window: Vec<&str> = text.lines().skip(skip).take(take).collect();
        Ok(ToolOutput::text(window.join("\n")))
    }
}

fn base_dir(ctx: &ToolContext, args: &Value) -> Option<PathBuf> {
    args.get("path")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .or_else(|| ctx.sandbox.as_ref().map(|s| s.cwd().to_path_buf()))
}

/// Finds files by glob pattern. Read-only, concurrency-safe, Cancel.
#[derive(Debug, Default, Clone, Copy)]
pub struct GlobFilesTool;

#[async_trait]
impl AgentTool for GlobFilesTool {
    fn name(&self) -> &str {
        "glob_files"
    }
    fn description(&self) -> &str {
        "List files matching a glob `pattern` (`**` crosses directories), relative to `path` or the working directory."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["pattern"],"additionalProperties":false,"properties":{
            "pattern":{"type":"string"},"path":{"type":"string"}}})
    }
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let sandbox = ctx.require_sandbox()?;
        let pattern = str_arg(&args, "pattern")?;
        let base = args.get("path").and_then(Value::as_str).map(Path::new);
        let outcome = sandbox
            .glob_outcome(pattern, base)
            .map_err(|e| sandbox_denied(&e))?;
        let found = outcome.paths;
        let total = found.len();
        let mut lines: Vec<String> = found
            .iter()
            .take(MAX_GLOB_RESULTS)
            .map(|p| p.display().to_string())
            .collect();
        if total > MAX_GLOB_RESULTS {
            lines.push(format!("[{} more not shown]", total - MAX_GLOB_RESULTS));
        }
        if outcome.skipped_sensitive > 0 {
            lines.push(skipped_note(outcome.skipped_sensitive));
        }
        Ok(ToolOutput::text(lines.join("\n")))
    }
}

/// Searches file contents with a regular expression. Read-only, concurrency-safe, Cancel.
#[derive(Debug, Default, Clone, Copy)]
pub struct GrepFilesTool;

#[async_trait]
impl AgentTool for GrepFilesTool {
    fn name(&self) -> &str {
        "grep_files"
    }
    fn description(&self) -> &str {
        "Search files under `path` (default: the working directory) for the regular expression `pattern`; `glob` filters file names."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["pattern"],"additionalProperties":false,"properties":{
            "pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"}}})
    }
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let sandbox = ctx.require_sandbox()?;
        let re = regex::Regex::new(str_arg(&args, "pattern")?)
            .map_err(|e| ToolError::InvalidArgs(format!("bad regular expression: {e}")))?;
        let base =
            base_dir(ctx, &args).ok_or_else(|| ToolError::InvalidArgs("no `path`".into()))?;
        let checked = sandbox
            .check(&base, Op::Read)
            .map_err(|e| sandbox_denied(&e))?;
        let mut skipped = 0;
        let files = if sandbox.metadata(&base).map(|m| m.is_dir()).unwrap_or(false) {
            let glob = args.get("glob").and_then(Value::as_str).unwrap_or("**/*");
            let outcome = sandbox
                .glob_outcome(glob, Some(&base))
                .map_err(|e| sandbox_denied(&e))?;
            skipped = outcome.skipped_sensitive;
            outcome.paths
        } else {
            vec![checked.path().to_path_buf()]
        };
        let mut hits = Vec::new();
        'files: for file in files {
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let Ok(meta) = sandbox.metadata(&file) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let Ok(handle) = sandbox.open_read(&file) else {
                continue;
            };
            let Ok(text) = read_text(handle) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    hits.push(format!("{}:{}:{line}", file.display(), n + 1));
                    if hits.len() >= MAX_GREP_MATCHES {
                        hits.push(format!("[stopped at {MAX_GREP_MATCHES} matches]"));
                        break 'files;
                    }
                }
            }
        }
        if skipped > 0 {
            hits.push(skipped_note(skipped));
        }
        Ok(ToolOutput::text(hits.join("\n")))
    }
}

/// Says how many sensitive files a search left out, so the model knows the listing is partial.
fn skipped_note(count: usize) -> String {
    format!("[{count} sensitive file(s) skipped: credential stores are never read by an agent]")
}

fn write_whole(ctx: &ToolContext, path: &str, content: &str) -> Result<(), ToolError> {
    let sandbox = ctx.require_sandbox()?;
    if let Some(parent) = Path::new(path).parent()
        && !parent.as_os_str().is_empty()
    {
        sandbox
            .create_dir_all(parent)
            .map_err(|e| sandbox_denied(&e))?;
    }
    let mut file = sandbox
        .open_write(path, WriteMode::Truncate)
        .map_err(|e| sandbox_denied(&e))?;
    file.write_all(content.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|e| ToolError::Failed(format!("cannot write `{path}`: {e}")))
}

fn size_ok(content: &str, max: usize) -> Result<(), ToolError> {
    if content.len() > max {
        return Err(ToolError::denied(
            "file-too-large",
            format!(
                "refusing to write {} bytes: the limit is {max} bytes (max_file_size)",
                content.len()
            ),
        ));
    }
    Ok(())
}

/// Creates or overwrites a file, up to `max_file_size` bytes. Serial, Cancel.
#[derive(Debug, Clone, Copy)]
pub struct FileWriteTool {
    /// Largest content accepted, in bytes.
    pub max_file_size: usize,
}

impl Default for FileWriteTool {
    fn default() -> Self {
        FileWriteTool {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }
}

#[async_trait]
impl AgentTool for FileWriteTool {
    fn name(&self) -> &str {
        "file_write"
    }
    fn description(&self) -> &str {
        "Create or overwrite the file `file_path` with `content`."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["file_path","content"],"additionalProperties":false,"properties":{
            "file_path":{"type":"string"},"content":{"type":"string"}}})
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = str_arg(&args, "file_path")?;
        let content = str_arg(&args, "content")?;
        size_ok(content, self.max_file_size)?;
        write_whole(ctx, path, content)?;
        Ok(ToolOutput::text(format!(
            "wrote {} bytes to `{path}`",
            content.len()
        )))
    }
}

/// Replaces text in a file. Serial, Cancel.
#[derive(Debug, Clone, Copy)]
pub struct FileEditTool {
    /// Largest resulting file accepted, in bytes.
    pub max_file_size: usize,
}

impl Default for FileEditTool {
    fn default() -> Self {
        FileEditTool {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }
}

#[async_trait]
impl AgentTool for FileEditTool {
    fn name(&self) -> &str {
        "file_edit"
    }
    fn description(&self) -> &str {
        "Replace `old_string` by `new_string` in `file_path`; it must occur exactly once unless `replace_all`."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["file_path","old_string","new_string"],"additionalProperties":false,
            "properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},
            "new_string":{"type":"string"},"replace_all":{"type":"boolean"}}})
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let sandbox = ctx.require_sandbox()?;
        let path = str_arg(&args, "file_path")?;
        let old = str_arg(&args, "old_string")?;
        let new = str_arg(&args, "new_string")?;
        if old.is_empty() {
            return Err(ToolError::InvalidArgs(
                "`old_string` must not be empty".into(),
            ));
        }
        let all = args
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let text = read_text(sandbox.open_read(path).map_err(|e| sandbox_denied(&e))?)?;
        let count = text.matches(old).count();
        if count == 0 {
            return Err(ToolError::Failed(format!(
                "`old_string` was not found in `{path}`"
            )));
        }
        if count > 1 && !all {
            return Err(ToolError::Failed(format!(
                "`old_string` occurs {count} times in `{path}`; give more context or set replace_all"
            )));
        }
        let updated = if all {
            text.replace(old, new)
        } else {
            text.replacen(old, new, 1)
        };
        size_ok(&updated, self.max_file_size)?;
        write_whole(ctx, path, &updated)?;
        Ok(ToolOutput::text(format!(
            "replaced {} occurrence(s) in `{path}`",
            if all { count } else { 1 }
        )))
    }
}
