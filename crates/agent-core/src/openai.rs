//! An OpenAI-compatible chat-completions [`Model`] (feature `openai`; `openai-rustls` for https).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::model::{AssistantMessage, Message, Model, ModelError, ModelRequest, ToolCall, Usage};

/// A chat-completions client: `POST {base_url}/chat/completions` with the conversation and the
/// tool schemas as `function` tools.
///
/// Tool-call arguments that are not valid JSON are passed on as a JSON string, which no tool
/// schema accepts, so such a call is refused as `invalid-args` rather than guessed at.
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    client: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
}

impl OpenAiModel {
    /// A client for `model` at `base_url` (e.g. `https://api.openai.com/v1`), 120 s timeout.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Result<Self, ModelError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| ModelError(format!("cannot build the http client: {e}")))?;
        Ok(OpenAiModel {
            client,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
        })
    }

    /// Sends `Authorization: Bearer {key}`.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    fn body(&self, request: &ModelRequest<'_>) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
        let mut body = json!({"model": self.model, "messages": messages});
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
            if let Some(obj) = body.as_object_mut() {
                obj.insert("tools".into(), Value::Array(tools));
            }
        }
        body
    }
}

fn wire_message(m: &Message) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant(a) => {
            let mut v = json!({"role": "assistant", "content": a.content});
            if !a.tool_calls.is_empty() {
                let calls: Vec<Value> = a
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name, "arguments": c.arguments.to_string()}})
                    })
                    .collect();
                if let Some(obj) = v.as_object_mut() {
                    obj.insert("tool_calls".into(), Value::Array(calls));
                }
            }
            v
        }
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

fn parse_reply(v: &Value) -> Result<AssistantMessage, ModelError> {
    let msg = v
        .pointer("/choices/0/message")
        .ok_or_else(|| ModelError("the response has no `choices[0].message`".into()))?;
    let content = msg
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut tool_calls = Vec::new();
    for c in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let name = c
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| ModelError("a tool call has no function name".into()))?
            .to_owned();
        let raw = c
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        let arguments = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
        tool_calls.push(ToolCall {
            id,
            name,
            arguments,
        });
    }
    let usage = v
        .get("usage")
        .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok());
    Ok(AssistantMessage {
        content,
        tool_calls,
        usage,
    })
}

#[async_trait]
impl Model for OpenAiModel {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let mut req = self
            .client
            .post(format!("{}/chat/completions", self.base_url))
            .json(&self.body(&request));
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| ModelError(format!("request failed: {e}")))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| ModelError(format!("cannot read the response: {e}")))?;
        if !status.is_success() {
            let (head, _) = crate::output::truncate_chars(&text, 300);
            return Err(ModelError(format!("http {status}: {head}")));
        }
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| ModelError(format!("the response is not json: {e}")))?;
        parse_reply(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_stay_unparsed() {
        let v = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "read_file", "arguments": "{oops"}}]}}]});
        let m = parse_reply(&v).unwrap();
        assert_eq!(m.tool_calls[0].arguments, Value::String("{oops".into()));
        assert!(parse_reply(&json!({})).is_err());
    }
}
