//! The `subagent` tool and the narrow trait the `subagent` crate implements.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::str_arg;
use crate::context::ToolContext;
use crate::tool::{AgentTool, InterruptBehavior, ToolError, ToolOutput};

/// A request to run a child agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentRequest {
    /// The subagent type (`explore`, ...), which selects its restricted tool set.
    pub kind: String,
    /// The task, the child's only user message.
    pub prompt: String,
}

/// Runs child agents. Defined here and implemented by the `subagent` crate, so the tool can
/// live in agent-core without agent-core depending on its own dependant.
#[async_trait]
pub trait SubagentSpawner: Send + Sync {
    /// The subagent types offered to the model.
    fn kinds(&self) -> Vec<String>;

    /// Runs `request` as a child of the call in `parent` and returns its final answer.
    async fn spawn(
        &self,
        request: SubagentRequest,
        parent: &ToolContext,
    ) -> Result<String, ToolError>;
}

/// Delegates a task to an isolated child agent. Serial, Block.
#[derive(Clone)]
pub struct SubagentTool {
    spawner: Arc<dyn SubagentSpawner>,
}

impl std::fmt::Debug for SubagentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubagentTool")
            .field("kinds", &self.spawner.kinds())
            .finish()
    }
}

impl SubagentTool {
    /// A tool spawning through `spawner`.
    pub fn new(spawner: Arc<dyn SubagentSpawner>) -> Self {
        SubagentTool { spawner }
    }
}

#[async_trait]
impl AgentTool for SubagentTool {
    fn name(&self) -> &str {
        "subagent"
    }
    fn description(&self) -> &str {
        "Delegate `prompt` to a child agent of type `kind` with its own fresh context and restricted tools; returns its answer."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["kind","prompt"],"additionalProperties":false,
            "properties":{"kind":{"enum":self.spawner.kinds()},"prompt":{"type":"string"}}})
    }
    fn interrupt_behavior(&self) -> InterruptBehavior {
        InterruptBehavior::Block
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let request = SubagentRequest {
            kind: str_arg(&args, "kind")?.to_owned(),
            prompt: str_arg(&args, "prompt")?.to_owned(),
        };
        self.spawner.spawn(request, ctx).await.map(ToolOutput::text)
    }
}
