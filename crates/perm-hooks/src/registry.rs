//! The registry and the pre/post pipelines.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hook::{
    AgentHook, CompactContext, HookError, PostToolUseAction, PostToolUseContext, PreToolUseAction,
    PreToolUseContext, SessionStartContext, SessionStopContext, StepContext, SubagentStartContext,
    SubagentStopContext,
};

/// The per-hook timeout when none is configured.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// What to do when a hook fails (errors, panics or times out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Pre: deny the call. Post: withhold the output.
    Deny,
    /// Pre: ask a person (a permission request). Post: same as `Deny`.
    Ask,
    /// Record the failure and go on.
    Ignore,
}

/// How the registry runs one hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookOptions {
    /// How long one event may take.
    pub timeout: Duration,
    /// Failure policy for `pre_tool_use` (default `deny`: fail closed).
    pub pre_on_error: OnError,
    /// Failure policy for `post_tool_use` and lifecycle events (default `ignore`).
    pub post_on_error: OnError,
}

impl Default for HookOptions {
    fn default() -> Self {
        HookOptions {
            timeout: DEFAULT_HOOK_TIMEOUT,
            pre_on_error: OnError::Deny,
            post_on_error: OnError::Ignore,
        }
    }
}

/// How a hook failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureKind {
    /// The hook returned an error.
    Error,
    /// The hook panicked.
    Panic,
    /// The hook ran past its timeout.
    Timeout,
}

/// A hook that failed, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookFailure {
    /// The hook's name.
    pub hook: String,
    /// How it failed.
    pub kind: FailureKind,
    /// What happened.
    pub message: String,
}

impl HookFailure {
    /// A stable reason code: `hook_error`, `hook_panic` or `hook_timeout`.
    pub fn code(&self) -> &'static str {
        match self.kind {
            FailureKind::Error => "hook_error",
            FailureKind::Panic => "hook_panic",
            FailureKind::Timeout => "hook_timeout",
        }
    }
}

/// Why the pre chain refused the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocked {
    /// The hook that blocked (or failed).
    pub hook: String,
    /// Shown to the model and the user.
    pub reason: String,
    /// `true` when the hook failed under `on_error = deny` rather than returning Block.
    pub denied_by_failure: bool,
}

impl Blocked {
    /// A stable reason code: `hook_block` or `hook_failure`.
    pub fn code(&self) -> &'static str {
        if self.denied_by_failure {
            "hook_failure"
        } else {
            "hook_block"
        }
    }
}

/// A hook that changed the arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mutation<T> {
    /// The hook's name.
    pub hook: String,
    /// What it saw.
    pub before: T,
    /// What it made of it.
    pub after: T,
}

/// A hook asking for a person's approval (precedence P4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// The hook's name.
    pub hook: String,
    /// Why approval is needed.
    pub message: String,
}

/// The outcome of the pre chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreToolUseResult {
    /// The arguments after every mutation; the rules must be evaluated on these.
    pub final_args: Value,
    /// Set when a hook blocked or a failing hook denied.
    pub blocked: Option<Blocked>,
    /// Which hooks changed the arguments, in order.
    pub mutations: Vec<Mutation<Value>>,
    /// Every hook's additional context, joined with newlines in hook order.
    pub additional_context: String,
    /// Approval requests for the precedence resolver.
    pub permission_requests: Vec<PermissionRequest>,
    /// Every failed hook, whatever its policy.
    pub failures: Vec<HookFailure>,
}

impl PreToolUseResult {
    /// The result of a chain that did nothing: `args` unchanged, no verdict, no context.
    pub fn unchanged(args: Value) -> Self {
        PreToolUseResult {
            final_args: args,
            blocked: None,
            mutations: Vec::new(),
            additional_context: String::new(),
            permission_requests: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Whether the call must not run.
    pub fn is_blocked(&self) -> bool {
        self.blocked.is_some()
    }
}

/// The outcome of the post chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostToolUseResult {
    /// The output after every mutation (or a notice when it was withheld).
    pub final_output: String,
    /// Which hooks changed the output, in order.
    pub mutations: Vec<Mutation<String>>,
    /// Set when a hook with `on_error = deny` failed: the output was withheld.
    pub withheld: Option<HookFailure>,
    /// Every failed hook, whatever its policy.
    pub failures: Vec<HookFailure>,
}

struct Entry {
    hook: Arc<dyn AgentHook>,
    options: HookOptions,
}

/// Hooks in registration order: added first, called first.
#[derive(Default)]
pub struct HookRegistry {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for HookRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| e.hook.name()))
            .finish()
    }
}

/// Polls the inner future, turning a panic into `Err(message)`.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic with a non-string payload".to_owned());
                Poll::Ready(Err(message))
            }
        }
    }
}

/// Runs one hook event under its timeout, catching panics.
async fn guarded<T, F>(name: &str, timeout: Duration, fut: F) -> Result<T, HookFailure>
where
    F: Future<Output = Result<T, HookError>> + Unpin,
{
    let failure = |kind, message: String| HookFailure {
        hook: name.to_owned(),
        kind,
        message,
    };
    match tokio::time::timeout(timeout, CatchUnwind(fut)).await {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(err))) => Err(failure(FailureKind::Error, err.0)),
        Ok(Err(panic)) => Err(failure(
            FailureKind::Panic,
            format!("hook panicked: {panic}"),
        )),
        Err(_) => Err(failure(
            FailureKind::Timeout,
            format!("hook ran past its timeout of {} ms", timeout.as_millis()),
        )),
    }
}

macro_rules! lifecycle {
    ($(#[$doc:meta])* $fn:ident, $method:ident, $ctx:ty) => {
        $(#[$doc])*
        /// Every hook runs (in order) even if an earlier one fails; failures are returned.
        pub async fn $fn(&self, ctx: &$ctx) -> Vec<HookFailure> {
            let mut failures = Vec::new();
            for entry in &self.entries {
                let name = entry.hook.name();
                if let Err(failure) = guarded(name, entry.options.timeout, entry.hook.$method(ctx)).await {
                    tracing::warn!(hook = name, kind = ?failure.kind, "{}", failure.message);
                    failures.push(failure);
                }
            }
            failures
        }
    };
}

impl HookRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        HookRegistry::default()
    }

    /// Adds a hook with the default options (10 s, pre `deny`, post `ignore`).
    pub fn register(&mut self, hook: Arc<dyn AgentHook>) -> &mut Self {
        self.register_with(hook, HookOptions::default())
    }

    /// Adds a hook with explicit options.
    pub fn register_with(&mut self, hook: Arc<dyn AgentHook>, options: HookOptions) -> &mut Self {
        self.entries.push(Entry { hook, options });
        self
    }

    /// Whether any registered hook has work before tool calls ([`AgentHook::wants_pre_tool_use`]).
    pub fn wants_pre_tool_use(&self) -> bool {
        self.entries.iter().any(|e| e.hook.wants_pre_tool_use())
    }

    /// How many hooks are registered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no hook is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The hook names in call order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.hook.name()).collect()
    }

    /// Runs the pre chain. The first Block (or failure under `deny`) ends it; `MutateInput`
    /// chains, so each hook sees the previous hook's arguments.
    pub async fn run_pre_tool_use(&self, mut ctx: PreToolUseContext) -> PreToolUseResult {
        let mut result = PreToolUseResult::unchanged(Value::Null);
        for entry in self.entries.iter().filter(|e| e.hook.wants_pre_tool_use()) {
            let name = entry.hook.name();
            match guarded(name, entry.options.timeout, entry.hook.pre_tool_use(&ctx)).await {
                Ok(PreToolUseAction::Continue) => {}
                Ok(PreToolUseAction::Block { reason }) => {
                    result.blocked = Some(Blocked {
                        hook: name.to_owned(),
                        reason,
                        denied_by_failure: false,
                    });
                    break;
                }
                Ok(PreToolUseAction::MutateInput {
                    updated_args,
                    additional_context,
                }) => {
                    if let Some(after) = updated_args {
                        let before = std::mem::replace(&mut ctx.args, after.clone());
                        result.mutations.push(Mutation {
                            hook: name.to_owned(),
                            before,
                            after,
                        });
                    }
                    if let Some(extra) = additional_context.filter(|c| !c.is_empty()) {
                        if !result.additional_context.is_empty() {
                            result.additional_context.push('\n');
                        }
                        result.additional_context.push_str(&extra);
                    }
                }
                Ok(PreToolUseAction::PermissionRequired { message }) => {
                    result.permission_requests.push(PermissionRequest {
                        hook: name.to_owned(),
                        message,
                    });
                }
                Err(failure) => {
                    tracing::warn!(hook = name, kind = ?failure.kind, "pre_tool_use hook failed: {}", failure.message);
                    let message = failure.message.clone();
                    result.failures.push(failure);
                    match entry.options.pre_on_error {
                        OnError::Ignore => {}
                        OnError::Ask => result.permission_requests.push(PermissionRequest {
                            hook: name.to_owned(),
                            message: format!("hook `{name}` failed: {message}"),
                        }),
                        OnError::Deny => {
                            result.blocked = Some(Blocked {
                                hook: name.to_owned(),
                                reason: format!(
                                    "hook `{name}` failed and its policy is deny: {message}"
                                ),
                                denied_by_failure: true,
                            });
                            break;
                        }
                    }
                }
            }
        }
        result.final_args = ctx.args;
        result
    }

    /// Runs the post chain. `MutateOutput` chains; a failure under `deny` (or `ask`) withholds
    /// the output, because a failed redaction must not leak what it was meant to mask.
    pub async fn run_post_tool_use(&self, mut ctx: PostToolUseContext) -> PostToolUseResult {
        let mut mutations = Vec::new();
        let mut failures = Vec::new();
        let mut withheld = None;
        for entry in &self.entries {
            let name = entry.hook.name();
            match guarded(name, entry.options.timeout, entry.hook.post_tool_use(&ctx)).await {
                Ok(PostToolUseAction::Continue) => {}
                Ok(PostToolUseAction::MutateOutput { updated_content }) => {
                    let before = std::mem::replace(&mut ctx.output, updated_content.clone());
                    mutations.push(Mutation {
                        hook: name.to_owned(),
                        before,
                        after: updated_content,
                    });
                }
                Err(failure) => {
                    tracing::warn!(hook = name, kind = ?failure.kind, "post_tool_use hook failed: {}", failure.message);
                    failures.push(failure.clone());
                    if entry.options.post_on_error != OnError::Ignore {
                        ctx.output = format!(
                            "[output withheld: hook `{name}` failed: {}]",
                            failure.message
                        );
                        withheld = Some(failure);
                        break;
                    }
                }
            }
        }
        PostToolUseResult {
            final_output: ctx.output,
            mutations,
            withheld,
            failures,
        }
    }

    lifecycle!(
        /// Fans `on_session_start` out to every hook.
        session_start, on_session_start, SessionStartContext);
    lifecycle!(
        /// Fans `on_step_complete` out to every hook.
        step_complete, on_step_complete, StepContext);
    lifecycle!(
        /// Fans `on_session_stop` out to every hook.
        session_stop, on_session_stop, SessionStopContext);
    lifecycle!(
        /// Fans `on_subagent_start` out to every hook.
        subagent_start, on_subagent_start, SubagentStartContext);
    lifecycle!(
        /// Fans `on_subagent_stop` out to every hook.
        subagent_stop, on_subagent_stop, SubagentStopContext);
    lifecycle!(
        /// Fans `on_pre_compact` out to every hook.
        pre_compact, on_pre_compact, CompactContext);
    lifecycle!(
        /// Fans `on_post_compact` out to every hook.
        post_compact, on_post_compact, CompactContext);
}
