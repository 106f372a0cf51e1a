use serde::{Deserialize, Serialize};

use crate::Error;

/// The `[limits]` table of the policy file. Every key is optional; unknown keys are errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Steps with tools allowed; step `max_steps + 1` must be a final answer (default 8).
    pub max_steps: u32,
    /// Tool calls one session may make when calls are judged one process at a time (the
    /// agent hooks, counted in the audit database); the next one is refused (default 1000).
    pub max_session_calls: u32,
    /// Identical consecutive calls at which the call is refused (default 3, at least 2).
    pub duplicate_threshold: u32,
    /// Tools never refused as duplicates (e.g. a polling tool).
    pub duplicate_exempt: Vec<String>,
    /// Identical consecutive errors from one tool at which the model is told to stop (default 3).
    pub repeated_error_threshold: u32,
    /// Tokens at which nudges start (default 32000).
    pub token_soft_limit: usize,
    /// Tokens at which compaction or a final answer is forced (default 40000).
    pub token_hard_limit: usize,
    /// Nudge levels between the soft and the hard limit (default 3).
    pub nudge_levels: u8,
    /// Consecutive steps without new information that force an answer (default 3).
    pub diminishing_steps: u32,
    /// A tool output with fewer tokens than this adds no new information (default 20).
    pub min_new_tokens: usize,
    /// Consecutive compaction failures that open the breaker (default 3).
    pub compaction_failures: u32,
    /// Steps after which an open breaker allows one retry; 0 = only a success closes it (default 5).
    pub compaction_cooldown_steps: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_steps: 8,
            max_session_calls: 1000,
            duplicate_threshold: 3,
            duplicate_exempt: Vec::new(),
            repeated_error_threshold: 3,
            token_soft_limit: 32_000,
            token_hard_limit: 40_000,
            nudge_levels: 3,
            diminishing_steps: 3,
            min_new_tokens: 20,
            compaction_failures: 3,
            compaction_cooldown_steps: 5,
        }
    }
}

fn invalid(field: &'static str, message: &str) -> Error {
    Error::InvalidConfig {
        field,
        message: message.to_owned(),
    }
}

impl LimitsConfig {
    /// Rejects values that would make a limit meaningless (fail closed on bad configuration).
    pub fn validate(&self) -> Result<(), Error> {
        if self.max_steps == 0 {
            return Err(invalid("max_steps", "must be at least 1"));
        }
        if self.max_session_calls == 0 {
            return Err(invalid("max_session_calls", "must be at least 1"));
        }
        if self.duplicate_threshold < 2 {
            return Err(invalid(
                "duplicate_threshold",
                "must be at least 2 (1 would refuse every call)",
            ));
        }
        if self.repeated_error_threshold < 2 {
            return Err(invalid("repeated_error_threshold", "must be at least 2"));
        }
        if self.token_soft_limit == 0 {
            return Err(invalid("token_soft_limit", "must be at least 1"));
        }
        if self.token_hard_limit <= self.token_soft_limit {
            return Err(invalid(
                "token_hard_limit",
                "must be greater than `token_soft_limit`",
            ));
        }
        if self.nudge_levels == 0 {
            return Err(invalid("nudge_levels", "must be at least 1"));
        }
        if self.diminishing_steps == 0 {
            return Err(invalid("diminishing_steps", "must be at least 1"));
        }
        if self.compaction_failures == 0 {
            return Err(invalid("compaction_failures", "must be at least 1"));
        }
        Ok(())
    }
}
