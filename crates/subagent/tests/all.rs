//! Behaviour of `SubAgentRunner::spawn` at its refusal edges.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::Arc;

use agent_core::{
    Executor, RemainingBudget, ScriptedModel, SubagentRequest, SubagentSpawner, ToolContext,
    ToolError, ToolRegistry,
};
use subagent::SubAgentRunner;

fn runner() -> SubAgentRunner {
    SubAgentRunner::new(Arc::new(ScriptedModel::new(vec![])))
}

fn req(kind: &str) -> SubagentRequest {
    SubagentRequest {
        kind: kind.into(),
        prompt: "task".into(),
    }
}

fn parent(depth: u32, steps: u32) -> ToolContext {
    let mut ctx = ToolContext::new("p");
    ctx.depth = depth;
    ctx.budget = RemainingBudget {
        steps,
        tokens: 10_000,
    };
    ctx.executor = Some(Executor::new(ToolRegistry::new()));
    ctx
}

fn code(r: Result<String, ToolError>) -> String {
    r.unwrap_err().code().to_owned()
}

#[tokio::test]
async fn refuses_past_the_depth_limit() {
    let r = runner().with_max_depth(2);
    assert_eq!(
        code(r.spawn(req("explore"), &parent(2, 5)).await),
        "subagent-depth-limit"
    );
}

#[tokio::test]
async fn refuses_unknown_kinds_missing_executor_and_empty_budget() {
    let r = runner();
    assert_eq!(
        code(r.spawn(req("root"), &parent(0, 5)).await),
        "invalid-args"
    );
    let mut orphan = parent(0, 5);
    orphan.executor = None;
    assert_eq!(
        code(r.spawn(req("explore"), &orphan).await),
        "subagent-no-executor"
    );
    assert_eq!(
        code(r.spawn(req("explore"), &parent(0, 0)).await),
        "subagent-no-budget"
    );
}

#[tokio::test]
async fn a_child_answers_from_a_fresh_context() {
    let model = Arc::new(ScriptedModel::from_json(r#"[{"content": "child answer"}]"#).unwrap());
    let r = SubAgentRunner::new(model);
    let answer = r.spawn(req("explore"), &parent(0, 3)).await.unwrap();
    assert_eq!(answer, "child answer");
}
