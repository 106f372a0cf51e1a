use serde_json::Value;

use crate::{
    CompactionCircuitBreaker, DuplicateDetector, Error, Intervention, LimitsConfig, StepLimit,
    TokenBudget,
};

/// Every limit together, with one method per point of the agent loop.
///
/// Call [`on_step_start`](Limits::on_step_start) at the top of each iteration,
/// [`on_tool_call`](Limits::on_tool_call) before running a tool,
/// [`on_tool_result`](Limits::on_tool_result) after it, [`on_tokens`](Limits::on_tokens) after
/// each model call, and [`on_compaction`](Limits::on_compaction) after a compaction attempt.
/// Step numbers are the breaker's clock.
#[derive(Debug, Clone)]
pub struct Limits {
    steps: StepLimit,
    duplicates: DuplicateDetector,
    budget: TokenBudget,
    breaker: CompactionCircuitBreaker,
    step: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits::from_valid(&LimitsConfig::default())
    }
}

impl Limits {
    /// Builds the limits from a validated configuration.
    pub fn new(config: &LimitsConfig) -> Result<Limits, Error> {
        config.validate()?;
        Ok(Limits::from_valid(config))
    }

    fn from_valid(c: &LimitsConfig) -> Limits {
        Limits {
            steps: StepLimit::new(c.max_steps),
            duplicates: DuplicateDetector::new(
                c.duplicate_threshold,
                c.repeated_error_threshold,
                c.duplicate_exempt.iter().cloned(),
            ),
            budget: TokenBudget::new(
                c.token_soft_limit,
                c.token_hard_limit,
                c.nudge_levels,
                c.diminishing_steps,
                c.min_new_tokens,
            ),
            breaker: CompactionCircuitBreaker::new(
                c.compaction_failures,
                c.compaction_cooldown_steps,
            ),
            step: 0,
        }
    }

    /// The current 1-based step (0 before the first).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The token budget, e.g. for [`TokenBudget::used`].
    pub fn budget(&self) -> &TokenBudget {
        &self.budget
    }

    /// Starts the next step. Checked in order: cancellation (`cancelled`, e.g. from
    /// [`crate::CancellationRegistry::contains`]), then diminishing returns over the steps so
    /// far, then the step limit. `Some` ends the run (abort or a final answer without tools).
    pub fn on_step_start(&mut self, cancelled: bool, session: &str) -> Option<Intervention> {
        if cancelled {
            return Some(Intervention::Cancelled {
                session: session.to_owned(),
            });
        }
        let stale = if self.step > 0 {
            self.budget.end_step()
        } else {
            None
        };
        self.step = self.step.saturating_add(1);
        stale.or_else(|| self.steps.check(self.step))
    }

    /// Judges a tool call about to run; `Some` means refuse it with the message as its result.
    pub fn on_tool_call(&mut self, tool: &str, args: &Value) -> Option<Intervention> {
        self.duplicates.on_call(tool, args)
    }

    /// Records a tool result; `tokens` is the caller's count of `output`, or `None` to estimate.
    pub fn on_tool_result(
        &mut self,
        tool: &str,
        output: &str,
        is_error: bool,
        tokens: Option<usize>,
    ) -> Option<Intervention> {
        self.budget.record_output(output, tokens);
        self.duplicates.on_result(tool, output, is_error)
    }

    /// Records the tokens in use. At the hard limit the intervention says
    /// [`Compact`](crate::Action::Compact) while the breaker is closed, a final answer otherwise.
    pub fn on_tokens(&mut self, used: usize) -> Option<Intervention> {
        let compact = !self.breaker.is_open(u64::from(self.step));
        self.budget.set_used(used, compact)
    }

    /// Whether automatic compaction must be skipped now.
    pub fn check_compaction(&self) -> Option<Intervention> {
        self.breaker.check(u64::from(self.step))
    }

    /// Records a compaction attempt; on success, `used_after` is the new context size.
    pub fn on_compaction(&mut self, ok: bool, used_after: Option<usize>) {
        if ok {
            self.breaker.record_success();
        } else {
            self.breaker.record_failure(u64::from(self.step));
        }
        if let Some(used) = used_after {
            self.budget.set_used(used, true);
        }
    }
}
