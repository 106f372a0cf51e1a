//! Messages, the `Model` trait and the scripted model.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::tool::ToolSchema;

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the result must carry.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments (a JSON object).
    #[serde(default)]
    pub arguments: Value,
}

/// Token usage the model reported for one completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens of the completion.
    #[serde(default)]
    pub completion_tokens: u64,
}

/// What the model answered: text and/or tool calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Text (may be empty when there are tool calls).
    #[serde(default)]
    pub content: String,
    /// Calls to run.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Reported usage, when the model reports it.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The system prompt.
    System {
        /// The text.
        content: String,
    },
    /// The user (or a notification injected on the user's behalf).
    User {
        /// The text.
        content: String,
    },
    /// A model turn.
    Assistant(AssistantMessage),
    /// A tool result.
    Tool {
        /// The call it answers.
        tool_call_id: String,
        /// The tool.
        name: String,
        /// The (possibly truncated) output or the error.
        content: String,
        /// Whether it is an error result.
        is_error: bool,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// The text of the message (an assistant message's text, a tool result's content).
    pub fn text(&self) -> &str {
        match self {
            Message::System { content } | Message::User { content } => content,
            Message::Assistant(m) => &m.content,
            Message::Tool { content, .. } => content,
        }
    }

    /// A rough token estimate (4 characters a token), used when the model reports no usage.
    pub fn estimate_tokens(&self) -> u64 {
        let mut chars = self.text().chars().count();
        if let Message::Assistant(m) = self {
            for call in &m.tool_calls {
                chars += call.name.len() + call.arguments.to_string().len();
            }
        }
        (chars as u64).div_ceil(4) + 4
    }
}

/// What a model is asked.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools it may call; empty when a final answer is forced.
    pub tools: &'a [ToolSchema],
}

/// A model failure (transport, bad response, exhausted script).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model error: {0}")]
pub struct ModelError(pub String);

/// Messages and tool schemas in, an assistant message out.
#[async_trait]
pub trait Model: Send + Sync {
    /// One completion.
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError>;
}

/// Replays a script of assistant turns, one per call. When a request offers no tools (a forced
/// final answer) the turn's tool calls are dropped; when the script runs out it answers with a
/// final text, so a run always ends.
///
/// The script is a JSON array of turns (`{"content": "..", "tool_calls": [{"id", "name",
/// "arguments"}]}`), or an object `{"turns": [...]}`.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    turns: Mutex<VecDeque<AssistantMessage>>,
    seen: Mutex<Vec<usize>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptDoc {
    Turns(Vec<AssistantMessage>),
    Object { turns: Vec<AssistantMessage> },
}

impl ScriptedModel {
    /// A model replaying `turns`.
    pub fn new(turns: Vec<AssistantMessage>) -> Self {
        ScriptedModel {
            turns: Mutex::new(turns.into()),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Parses a JSON script.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let doc: ScriptDoc =
            serde_json::from_str(text).map_err(|e| Error::Script(e.to_string()))?;
        let turns = match doc {
            ScriptDoc::Turns(t) | ScriptDoc::Object { turns: t } => t,
        };
        Ok(ScriptedModel::new(turns))
    }

    /// Turns not yet replayed.
    pub fn remaining(&self) -> usize {
        self.turns.lock().map(|t| t.len()).unwrap_or(0)
    }

    /// How many tools each request offered, in call order (0 = a forced final answer).
    pub fn requests(&self) -> Vec<usize> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Model for ScriptedModel {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.tools.len());
        }
        let next = self
            .turns
            .lock()
            .map_err(|_| ModelError("script lock poisoned".into()))?
            .pop_front();
        let mut turn = next.unwrap_or_else(|| AssistantMessage {
            content: "script finished".into(),
            ..AssistantMessage::default()
        });
        if request.tools.is_empty() && !turn.tool_calls.is_empty() {
            turn.tool_calls.clear();
            if turn.content.is_empty() {
                turn.content = "final answer".into();
            }
        }
        Ok(turn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replays_then_finishes() {
        let m = ScriptedModel::from_json(
            r#"[{"tool_calls":[{"id":"1","name":"t","arguments":{}}]},{"content":"done"}]"#,
        )
        .unwrap();
        let tools = [ToolSchema {
            name: "t".into(),
            description: String::new(),
            parameters: Value::Null,
        }];
        let a = m
            .complete(ModelRequest {
                messages: &[],
                tools: &tools,
            })
            .await
            .unwrap();
        assert_eq!(a.tool_calls.len(), 1);
        let b = m
            .complete(ModelRequest {
                messages: &[],
                tools: &tools,
            })
            .await
            .unwrap();
        assert_eq!(b.content, "done");
        let c = m
            .complete(ModelRequest {
                messages: &[],
                tools: &[],
            })
            .await
            .unwrap();
        assert!(c.tool_calls.is_empty());
        assert_eq!(m.requests(), vec![1, 1, 0]);
        assert!(ScriptedModel::from_json("{").is_err());
    }
}
