use std::sync::{Arc, Mutex};
use std::time::Duration;

use perm_hooks::*;
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone)]
enum Step {
    Continue,
    Block(String),
    Mutate(Option<Value>, Option<String>),
    Perm(String),
    Fail(String),
    Panic,
    Sleep,
}

type Seen = Arc<Mutex<Vec<(String, Value)>>>;

struct Scripted {
    name: String,
    step: Step,
    seen: Seen,
}

#[async_trait]
impl AgentHook for Scripted {
    fn name(&self) -> &str {
        &self.name
    }
    async fn pre_tool_use(&self, ctx: &PreToolUseContext) -> HookResult<PreToolUseAction> {
        self.seen
            .lock()
            .unwrap()
            .push((self.name.clone(), ctx.args.clone()));
        match &self.step {
            Step::Continue => Ok(PreToolUseAction::Continue),
            Step::Block(r) => Ok(PreToolUseAction::Block { reason: r.clone() }),
            Step::Mutate(a, c) => Ok(PreToolUseAction::MutateInput {
                updated_args: a.clone(),
                additional_context: c.clone(),
            }),
            Step::Perm(m) => Ok(PreToolUseAction::PermissionRequired { message: m.clone() }),
            Step::Fail(m) => Err(HookError::new(m.clone())),
            Step::Panic => panic!("boom"),
            Step::Sleep => {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(PreToolUseAction::Continue)
            }
        }
    }
    async fn post_tool_use(&self, ctx: &PostToolUseContext) -> HookResult<PostToolUseAction> {
        self.seen
            .lock()
            .unwrap()
            .push((self.name.clone(), json!(ctx.output)));
        match &self.step {
            Step::Mutate(_, Some(c)) => Ok(PostToolUseAction::MutateOutput {
                updated_content: format!("{}+{c}", ctx.output),
            }),
            Step::Fail(m) => Err(HookError::new(m.clone())),
            Step::Panic => panic!("boom"),
            Step::Sleep => {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(PostToolUseAction::Continue)
            }
            _ => Ok(PostToolUseAction::Continue),
        }
    }
}

fn build(steps: &[(Step, OnError)]) -> (HookRegistry, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut reg = HookRegistry::new();
    for (i, (step, on_error)) in steps.iter().enumerate() {
        reg.register_with(
            Arc::new(Scripted {
                name: format!("h{i}"),
                step: step.clone(),
                seen: seen.clone(),
            }),
            HookOptions {
                timeout: Duration::from_millis(50),
                pre_on_error: *on_error,
                post_on_error: *on_error,
            },
        );
    }
    (reg, seen)
}

fn ctx() -> PreToolUseContext {
    PreToolUseContext {
        session_id: "s".into(),
        tool_name: "run_bash".into(),
        args: json!({"command": "ls"}),
        ..Default::default()
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[tokio::test]
async fn first_block_short_circuits() {
    let (reg, seen) = build(&[
        (Step::Continue, OnError::Deny),
        (Step::Block("no".into()), OnError::Deny),
        (Step::Block("later".into()), OnError::Deny),
    ]);
    let r = reg.run_pre_tool_use(ctx()).await;
    let b = r.blocked.unwrap();
    assert_eq!(
        (b.hook.as_str(), b.reason.as_str(), b.denied_by_failure),
        ("h1", "no", false)
    );
    assert_eq!(b.code(), "hook_block");
    assert_eq!(seen.lock().unwrap().len(), 2, "h2 must not run");
}

#[tokio::test]
async fn mutations_chain_and_context_concatenates() {
    let (reg, seen) = build(&[
        (
            Step::Mutate(Some(json!({"command": "ls -a"})), Some("one".into())),
            OnError::Deny,
        ),
        (Step::Mutate(None, Some("two".into())), OnError::Deny),
        (
            Step::Mutate(Some(json!({"command": "ls -la"})), None),
            OnError::Deny,
        ),
    ]);
    let r = reg.run_pre_tool_use(ctx()).await;
    assert_eq!(r.final_args, json!({"command": "ls -la"}));
    assert_eq!(r.additional_context, "one\ntwo");
    assert_eq!(r.mutations.len(), 2);
    assert_eq!(r.mutations[0].hook, "h0");
    assert_eq!(r.mutations[0].before, json!({"command": "ls"}));
    assert_eq!(r.mutations[1].before, json!({"command": "ls -a"}));
    let seen = seen.lock().unwrap();
    assert_eq!(seen[1].1, json!({"command": "ls -a"}), "h1 sees h0's args");
    assert_eq!(seen[2].1, json!({"command": "ls -a"}));
}

#[tokio::test]
async fn permission_requests_are_collected_not_blocking() {
    let (reg, _) = build(&[
        (Step::Perm("check a".into()), OnError::Deny),
        (Step::Continue, OnError::Deny),
        (Step::Perm("check b".into()), OnError::Deny),
    ]);
    let r = reg.run_pre_tool_use(ctx()).await;
    assert!(!r.is_blocked());
    let msgs: Vec<_> = r
        .permission_requests
        .iter()
        .map(|p| (p.hook.as_str(), p.message.as_str()))
        .collect();
    assert_eq!(msgs, [("h0", "check a"), ("h2", "check b")]);
}

#[tokio::test]
async fn failure_is_not_a_block() {
    for (step, kind) in [
        (Step::Fail("db down".into()), FailureKind::Error),
        (Step::Panic, FailureKind::Panic),
        (Step::Sleep, FailureKind::Timeout),
    ] {
        let (reg, seen) = build(&[
            (step.clone(), OnError::Deny),
            (Step::Continue, OnError::Deny),
        ]);
        let r = reg.run_pre_tool_use(ctx()).await;
        let b = r.blocked.expect("deny policy blocks");
        assert!(b.denied_by_failure, "{step:?}");
        assert_eq!(b.code(), "hook_failure");
        assert_eq!(r.failures.len(), 1);
        assert_eq!(r.failures[0].kind, kind);
        assert_eq!(r.failures[0].hook, "h0");
        assert_eq!(seen.lock().unwrap().len(), 1);

        let (reg, seen) = build(&[
            (step.clone(), OnError::Ignore),
            (Step::Continue, OnError::Deny),
        ]);
        let r = reg.run_pre_tool_use(ctx()).await;
        assert!(!r.is_blocked(), "{step:?}");
        assert_eq!(r.failures[0].kind, kind);
        assert_eq!(seen.lock().unwrap().len(), 2);

        let (reg, _) = build(&[(step, OnError::Ask)]);
        let r = reg.run_pre_tool_use(ctx()).await;
        assert!(!r.is_blocked());
        assert_eq!(r.permission_requests.len(), 1);
    }
}

#[tokio::test]
async fn default_options_deny_pre_and_ignore_post() {
    let opts = HookOptions::default();
    assert_eq!(opts.timeout, Duration::from_secs(10));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut reg = HookRegistry::new();
    reg.register(Arc::new(Scripted {
        name: "f".into(),
        step: Step::Fail("x".into()),
        seen,
    }));
    assert!(
        reg.run_pre_tool_use(ctx())
            .await
            .blocked
            .unwrap()
            .denied_by_failure
    );
    let post = reg
        .run_post_tool_use(PostToolUseContext {
            output: "out".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(post.final_output, "out");
    assert!(post.withheld.is_none());
    assert_eq!(post.failures.len(), 1);
}

#[tokio::test]
async fn post_mutations_chain_and_deny_withholds() {
    let (reg, _) = build(&[
        (Step::Mutate(None, Some("a".into())), OnError::Ignore),
        (Step::Fail("x".into()), OnError::Ignore),
        (Step::Mutate(None, Some("b".into())), OnError::Ignore),
    ]);
    let r = reg
        .run_post_tool_use(PostToolUseContext {
            output: "out".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(r.final_output, "out+a+b");
    assert_eq!(r.mutations.len(), 2);
    assert_eq!(r.mutations[1].before, "out+a");
    assert_eq!(r.failures.len(), 1);

    let (reg, _) = build(&[
        (Step::Panic, OnError::Deny),
        (Step::Mutate(None, Some("b".into())), OnError::Ignore),
    ]);
    let r = reg
        .run_post_tool_use(PostToolUseContext {
            output: "secret".into(),
            ..Default::default()
        })
        .await;
    assert!(r.withheld.is_some());
    assert!(!r.final_output.contains("secret"));
}

#[tokio::test]
async fn cancellation_hook_blocks_until_session_stop() {
    let set = Arc::new(CancelledSet::new());
    let mut reg = HookRegistry::new();
    reg.register(Arc::new(CancellationHook::new(set.clone())));
    assert!(!reg.run_pre_tool_use(ctx()).await.is_blocked());
    set.cancel("s");
    let r = reg.run_pre_tool_use(ctx()).await;
    assert_eq!(r.blocked.unwrap().hook, "cancellation");
    let other = PreToolUseContext {
        session_id: "t".into(),
        ..ctx()
    };
    assert!(!reg.run_pre_tool_use(other).await.is_blocked());
    let failures = reg
        .session_stop(&SessionStopContext {
            session_id: "s".into(),
            ..Default::default()
        })
        .await;
    assert!(failures.is_empty());
    assert!(!set.is_cancelled("s"));
}

#[tokio::test]
async fn metrics_hook_counts() {
    let m = Arc::new(MetricsHook::new());
    let mut reg = HookRegistry::new();
    reg.register(m.clone());
    for (tool, err, ms) in [("a", false, 5), ("a", true, 9), ("b", false, 1)] {
        reg.run_post_tool_use(PostToolUseContext {
            tool_name: tool.into(),
            is_error: err,
            elapsed: Duration::from_millis(ms),
            ..Default::default()
        })
        .await;
    }
    for step in 1..=3 {
        reg.step_complete(&StepContext {
            step,
            ..Default::default()
        })
        .await;
    }
    let s = m.snapshot();
    assert_eq!((s.tool_calls, s.tool_errors, s.steps), (3, 1, 3));
    let a = &s.per_tool["a"];
    assert_eq!((a.calls, a.errors), (2, 1));
    assert_eq!(a.total_latency, Duration::from_millis(14));
    assert_eq!(a.max_latency, Duration::from_millis(9));
}

#[tokio::test]
async fn lifecycle_failures_are_reported_and_others_still_run() {
    struct Failing;
    #[async_trait]
    impl AgentHook for Failing {
        fn name(&self) -> &str {
            "failing"
        }
        async fn on_session_start(&self, _: &SessionStartContext) -> HookResult {
            Err(HookError::new("nope"))
        }
    }
    let m = Arc::new(MetricsHook::new());
    let mut reg = HookRegistry::new();
    reg.register(Arc::new(Failing)).register(m.clone());
    let f = reg.session_start(&SessionStartContext::default()).await;
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].hook, "failing");
    assert_eq!(m.snapshot().sessions_started, 1);
    assert_eq!(reg.names(), ["failing", "metrics"]);
}

fn step_strategy() -> impl Strategy<Value = (Step, OnError)> {
    let step = prop_oneof![
        Just(Step::Continue),
        "[a-c]".prop_map(Step::Block),
        (
            proptest::option::of(0i64..5),
            proptest::option::of("[x-z]{0,2}")
        )
            .prop_map(|(a, c)| Step::Mutate(a.map(|n| json!(n)), c)),
        "[p-q]".prop_map(Step::Perm),
        "[e]".prop_map(Step::Fail),
    ];
    let on = prop_oneof![
        Just(OnError::Deny),
        Just(OnError::Ask),
        Just(OnError::Ignore)
    ];
    (step, on)
}

/// The pipeline's contract, as the simplest possible fold.
fn reference(
    steps: &[(Step, OnError)],
) -> (Value, Option<(String, bool)>, String, Vec<String>, usize) {
    let mut args = ctx().args;
    let mut context: Vec<String> = Vec::new();
    let mut perms = Vec::new();
    let mut failures = 0;
    for (i, (step, on)) in steps.iter().enumerate() {
        let name = format!("h{i}");
        match step {
            Step::Continue => {}
            Step::Block(_) => {
                return (
                    args,
                    Some((name, false)),
                    context.join("\n"),
                    perms,
                    failures,
                );
            }
            Step::Mutate(a, c) => {
                if let Some(a) = a {
                    args = a.clone();
                }
                if let Some(c) = c.clone().filter(|c| !c.is_empty()) {
                    context.push(c);
                }
            }
            Step::Perm(_) => perms.push(name),
            Step::Fail(_) | Step::Panic | Step::Sleep => {
                failures += 1;
                match on {
                    OnError::Ignore => {}
                    OnError::Ask => perms.push(name),
                    OnError::Deny => {
                        return (
                            args,
                            Some((name, true)),
                            context.join("\n"),
                            perms,
                            failures,
                        );
                    }
                }
            }
        }
    }
    (args, None, context.join("\n"), perms, failures)
}

proptest! {
    #[test]
    fn pipeline_equals_reference_fold(steps in proptest::collection::vec(step_strategy(), 0..8)) {
        let (reg, _) = build(&steps);
        let r = rt().block_on(reg.run_pre_tool_use(ctx()));
        let (args, blocked, context, perms, failures) = reference(&steps);
        prop_assert_eq!(r.final_args, args);
        prop_assert_eq!(r.blocked.map(|b| (b.hook, b.denied_by_failure)), blocked);
        prop_assert_eq!(r.additional_context, context);
        prop_assert_eq!(r.permission_requests.into_iter().map(|p| p.hook).collect::<Vec<_>>(), perms);
        prop_assert_eq!(r.failures.len(), failures);
    }
}

/// A hook with nothing to do before tool calls would block them all if it were called.
struct PostOnly;

#[async_trait]
impl AgentHook for PostOnly {
    fn name(&self) -> &str {
        "post-only"
    }
    fn wants_pre_tool_use(&self) -> bool {
        false
    }
    async fn pre_tool_use(&self, _ctx: &PreToolUseContext) -> HookResult<PreToolUseAction> {
        Ok(PreToolUseAction::Block {
            reason: "a post-only hook was asked about a call".into(),
        })
    }
}

#[tokio::test]
async fn the_pre_chain_skips_hooks_that_do_not_want_it() {
    let mut reg = HookRegistry::new();
    reg.register(Arc::new(PostOnly));
    let r = reg.run_pre_tool_use(ctx()).await;
    assert!(r.blocked.is_none(), "{r:?}");
    assert_eq!(r.final_args, ctx().args);
}
