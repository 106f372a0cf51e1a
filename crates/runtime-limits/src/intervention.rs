/// What the agent loop must do about an [`Intervention`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Call the model once more without tools, with [`Intervention::message`] injected.
    ForceFinalAnswer,
    /// Do not run this tool call; return the message as its error `tool_result`.
    RefuseCall,
    /// Inject the message as a reminder and carry on.
    Remind,
    /// Compact the context now.
    Compact,
    /// Skip automatic compaction this time.
    SkipCompaction,
    /// Stop the run at once (the user cancelled it).
    Abort,
}

/// A limit that fired: a typed value with a stable reason [`code`](Intervention::code), never a
/// string to parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intervention {
    /// The step counter passed `max_steps` (seed: `step > max_steps`).
    MaxSteps {
        /// The step being started (1-based).
        step: u32,
        /// The configured maximum.
        max: u32,
    },
    /// The same tool with canonically equal arguments was called `count` times in a row.
    DuplicateCall {
        /// The tool.
        tool: String,
        /// How many identical calls in a row, this one included.
        count: u32,
    },
    /// A session judged across processes (hook mode) made more calls than `max_session_calls`.
    MaxSessionCalls {
        /// The calls of the session, this one included.
        count: u64,
        /// The configured maximum.
        max: u32,
    },
    /// The same tool returned the same error `count` times in a row.
    RepeatedError {
        /// The tool.
        tool: String,
        /// How many identical errors in a row.
        count: u32,
    },
    /// Token use reached the soft limit; `level` (1-based) escalates towards the hard limit.
    TokenSoftLimit {
        /// Nudge level, 1 = just past the soft limit.
        level: u8,
        /// Tokens in use.
        used: usize,
        /// The soft limit.
        limit: usize,
    },
    /// Token use reached the hard limit.
    TokenHardLimit {
        /// Tokens in use.
        used: usize,
        /// The hard limit.
        limit: usize,
        /// Whether compaction may be tried (the breaker is closed); otherwise a final answer.
        compact: bool,
    },
    /// `steps` consecutive steps added no new information.
    DiminishingReturns {
        /// Consecutive steps without new information.
        steps: u32,
    },
    /// The session was cancelled by the user.
    Cancelled {
        /// The session id.
        session: String,
    },
    /// Automatic compaction failed `failures` times in a row and is skipped.
    CompactionBreakerOpen {
        /// Consecutive failures.
        failures: u32,
    },
}

impl Intervention {
    /// The stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Intervention::MaxSteps { .. } => "max_steps",
            Intervention::DuplicateCall { .. } => "duplicate_call",
            Intervention::MaxSessionCalls { .. } => "max_session_calls",
            Intervention::RepeatedError { .. } => "repeated_error",
            Intervention::TokenSoftLimit { .. } => "token_soft_limit",
            Intervention::TokenHardLimit { .. } => "token_hard_limit",
            Intervention::DiminishingReturns { .. } => "diminishing_returns",
            Intervention::Cancelled { .. } => "cancelled",
            Intervention::CompactionBreakerOpen { .. } => "compaction_breaker_open",
        }
    }

    /// What the loop must do.
    pub fn action(&self) -> Action {
        match self {
            Intervention::MaxSteps { .. } | Intervention::DiminishingReturns { .. } => {
                Action::ForceFinalAnswer
            }
            Intervention::DuplicateCall { .. } | Intervention::MaxSessionCalls { .. } => {
                Action::RefuseCall
            }
            Intervention::RepeatedError { .. } | Intervention::TokenSoftLimit { .. } => {
                Action::Remind
            }
            Intervention::TokenHardLimit { compact: true, .. } => Action::Compact,
            Intervention::TokenHardLimit { compact: false, .. } => Action::ForceFinalAnswer,
            Intervention::Cancelled { .. } => Action::Abort,
            Intervention::CompactionBreakerOpen { .. } => Action::SkipCompaction,
        }
    }

    /// Whether the run ends after acting on this (a final answer or an abort).
    pub fn is_stop(&self) -> bool {
        matches!(self.action(), Action::ForceFinalAnswer | Action::Abort)
    }

    /// A message for the model or the person, lowercase, user input in backticks.
    pub fn message(&self) -> String {
        match self {
            Intervention::MaxSteps { max, .. } => format!(
                "step limit of {max} reached: give your final answer now from what you have, without calling tools"
            ),
            Intervention::DuplicateCall { tool, count } => format!(
                "refused: `{tool}` was called {count} times in a row with the same arguments; change the arguments or try another approach"
            ),
            Intervention::MaxSessionCalls { count, max } => format!(
                "refused: this session has made {count} tool calls and the policy allows {max} per session; a person can raise `[limits] max_session_calls` in the policy or start a new session"
            ),
            Intervention::RepeatedError { tool, count } => format!(
                "`{tool}` returned the same error {count} times in a row; stop retrying it unchanged and try another approach"
            ),
            Intervention::TokenSoftLimit { level, used, limit } => match level {
                1 => format!(
                    "context is at {used} tokens (soft limit {limit}): start wrapping up and avoid large tool outputs"
                ),
                2 => format!(
                    "context is at {used} tokens (soft limit {limit}): summarise what you know and answer soon"
                ),
                _ => format!(
                    "context is at {used} tokens, close to the hard limit: give your answer in the next step"
                ),
            },
            Intervention::TokenHardLimit {
                used,
                limit,
                compact: true,
            } => format!("context is at {used} tokens (hard limit {limit}): compacting"),
            Intervention::TokenHardLimit { used, limit, .. } => format!(
                "context is at {used} tokens (hard limit {limit}): give your final answer now from what you have"
            ),
            Intervention::DiminishingReturns { steps } => format!(
                "the last {steps} steps added no new information: answer directly from what you have collected"
            ),
            Intervention::Cancelled { session } => {
                format!("run cancelled by the user (session `{session}`)")
            }
            Intervention::CompactionBreakerOpen { failures } => {
                format!("automatic compaction skipped after {failures} consecutive failures")
            }
        }
    }
}

impl std::fmt::Display for Intervention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}
