//! Behaviour of the executor's pieces on their own: registry views, tool-level rules in the
//! precedence table, schema re-checks, events.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::Arc;

use agent_core::{
    AgentEvent, AgentTool, ChannelSink, Executor, ToolCall, ToolContext, ToolError, ToolOutput,
    ToolRegistry,
};
use async_trait::async_trait;
use perm_rules::{Decision, PermissionChecker, PermissionRule, Priority, RuleKind, RuleSource};
use serde_json::{Value, json};

/// Declares its own rules: Deny when `danger`, Ask when `careful`.
struct Picky(&'static str);

#[async_trait]
impl AgentTool for Picky {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "picky"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "additionalProperties": false,
            "properties": {"danger": {"type": "boolean"}, "careful": {"type": "boolean"}}})
    }
    fn check_permissions(&self, args: &Value) -> Vec<PermissionRule> {
        let src = || RuleSource::Tool {
            name: self.0.into(),
        };
        let mut rules = Vec::new();
        if args.get("careful") == Some(&json!(true)) {
            rules.push(PermissionRule::parse(RuleKind::Ask, self.0, src()).unwrap());
        }
        if args.get("danger") == Some(&json!(true)) {
            rules.push(PermissionRule::parse(RuleKind::Deny, self.0, src()).unwrap());
        }
        rules
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ran"))
    }
}

fn registry() -> ToolRegistry {
    ToolRegistry::new()
        .with(Arc::new(Picky("a")))
        .unwrap()
        .with(Arc::new(Picky("b")))
        .unwrap()
}

#[test]
fn restrict_only_narrows() {
    let r = registry();
    assert!(
        r.clone().with(Arc::new(Picky("a"))).is_err(),
        "duplicate names are refused"
    );
    let only_a = r.restrict(&["a", "zzz"]);
    assert_eq!(only_a.names().collect::<Vec<_>>(), ["a"]);
    assert!(
        only_a.restrict(&["b"]).is_empty(),
        "a view cannot bring a tool back"
    );
    assert_eq!(r.without(&["a"]).names().collect::<Vec<_>>(), ["b"]);
}

#[test]
fn tool_level_rules_are_p1_and_p6() {
    let mut allow_all = PermissionChecker::new();
    allow_all.add_rule(PermissionRule::parse(RuleKind::Allow, "*", RuleSource::Api).unwrap());
    let exec = Executor::new(registry()).with_checker(Arc::new(allow_all));
    let tool = Picky("a");
    let r = exec.resolve(
        &tool,
        &json!({"danger": true, "careful": true}),
        None,
        vec![],
    );
    assert_eq!(r.decision, Decision::Deny);
    assert_eq!(r.decided_by.priority, Priority::ToolDeny);
    let r = exec.resolve(&tool, &json!({"careful": true}), None, vec![]);
    assert_eq!(r.decision, Decision::Ask);
    assert_eq!(r.decided_by.priority, Priority::ToolAsk);
    let r = exec.resolve(&tool, &json!({}), None, vec![]);
    assert_eq!(r.decision, Decision::Allow);
}

#[tokio::test]
async fn events_follow_each_call() {
    let (sink, mut rx) = ChannelSink::new();
    let ctx = ToolContext::new("s").with_events(Arc::new(sink));
    let exec = Executor::new(registry());
    let calls = [
        ToolCall {
            id: "1".into(),
            name: "a".into(),
            arguments: json!({}),
        },
        ToolCall {
            id: "2".into(),
            name: "a".into(),
            arguments: json!({"danger": true}),
        },
    ];
    let results = exec.execute_parallel(&calls, &ctx, None).await;
    assert_eq!(results[0].content, "ran");
    assert_eq!(results[1].code.as_deref(), Some("p1-tool-deny"));
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    assert!(events.contains(&AgentEvent::ToolStarted {
        call_id: "1".into(),
        tool: "a".into()
    }));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolStarted { call_id, .. } if call_id == "2"))
    );
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::ToolResult { call_id, is_error: true, .. } if call_id == "2")
    ));
}

#[path = "ledger/mod.rs"]
mod ledger;
#[path = "lift/mod.rs"]
mod lift;

#[cfg(feature = "openai")]
#[path = "auto/mod.rs"]
mod auto;
