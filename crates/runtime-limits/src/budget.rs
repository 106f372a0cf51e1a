use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::Intervention;

/// Estimates tokens as characters / 4, rounded up, for callers without a tokenizer.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// How close token use is to the limits, ordered by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BudgetLevel {
    /// Below the soft limit.
    Ok,
    /// At or past the soft limit; the level (1-based) rises towards the hard limit.
    Nudge(u8),
    /// At or past the hard limit.
    Hard,
}

/// The seed's token budget: escalating nudges from the soft limit, a forced action at the hard
/// limit, and diminishing-returns detection.
///
/// A limit of `n` tokens is reached when `n` tokens are in use. A step adds no new information
/// when every tool output it produced was already seen (same content hash) or is shorter than
/// `min_new_tokens`; `diminishing_steps` such steps in a row force an answer.
#[derive(Debug, Clone)]
pub struct TokenBudget {
    soft: usize,
    hard: usize,
    levels: u8,
    used: usize,
    nudged: u8,
    diminishing_steps: u32,
    min_new_tokens: usize,
    seen: HashSet<u64>,
    step_outputs: u32,
    step_novel: bool,
    stale_steps: u32,
}

impl Default for TokenBudget {
    fn default() -> Self {
        TokenBudget::new(32_000, 40_000, 3, 3, 20)
    }
}

impl TokenBudget {
    /// A budget; `hard` should exceed `soft` (see [`crate::LimitsConfig::validate`]).
    pub fn new(
        soft: usize,
        hard: usize,
        levels: u8,
        diminishing_steps: u32,
        min_new_tokens: usize,
    ) -> Self {
        TokenBudget {
            soft,
            hard: hard.max(soft),
            levels: levels.max(1),
            used: 0,
            nudged: 0,
            diminishing_steps,
            min_new_tokens,
            seen: HashSet::new(),
            step_outputs: 0,
            step_novel: false,
            stale_steps: 0,
        }
    }

    /// Tokens currently in use.
    pub fn used(&self) -> usize {
        self.used
    }

    /// The level for `used` tokens: a pure, monotone function.
    pub fn level_for(&self, used: usize) -> BudgetLevel {
        if used >= self.hard {
            BudgetLevel::Hard
        } else if used >= self.soft {
            let span = (self.hard - self.soft) as u128;
            let past = (used - self.soft) as u128;
            let level = 1 + past * u128::from(self.levels) / span.max(1);
            BudgetLevel::Nudge(u8::try_from(level).unwrap_or(u8::MAX).min(self.levels))
        } else {
            BudgetLevel::Ok
        }
    }

    /// Sets the tokens in use (e.g. the context size after a model call or a compaction) and
    /// judges them. A nudge fires once per level reached; the hard limit fires every time.
    /// `compact` says whether compaction may be tried at the hard limit.
    pub fn set_used(&mut self, used: usize, compact: bool) -> Option<Intervention> {
        self.used = used;
        match self.level_for(used) {
            BudgetLevel::Ok => {
                self.nudged = 0;
                None
            }
            BudgetLevel::Nudge(level) if level > self.nudged => {
                self.nudged = level;
                Some(Intervention::TokenSoftLimit {
                    level,
                    used,
                    limit: self.soft,
                })
            }
            BudgetLevel::Nudge(level) => {
                // Compaction may bring use back down a level; nudge again when it rises.
                self.nudged = level;
                None
            }
            BudgetLevel::Hard => Some(Intervention::TokenHardLimit {
                used,
                limit: self.hard,
                compact,
            }),
        }
    }

    /// Adds `tokens` to the tokens in use and judges the total, like [`TokenBudget::set_used`].
    pub fn add(&mut self, tokens: usize, compact: bool) -> Option<Intervention> {
        self.set_used(self.used.saturating_add(tokens), compact)
    }

    /// Records a tool output of the current step; `tokens` is the caller's count, or `None` to
    /// estimate. Returns whether it counts as new information.
    pub fn record_output(&mut self, output: &str, tokens: Option<usize>) -> bool {
        let tokens = tokens.unwrap_or_else(|| estimate_tokens(output));
        let mut hasher = DefaultHasher::new();
        output.hash(&mut hasher);
        let fresh = self.seen.insert(hasher.finish());
        let novel = fresh && tokens >= self.min_new_tokens;
        self.step_outputs = self.step_outputs.saturating_add(1);
        self.step_novel |= novel;
        novel
    }

    /// Closes the current step; `Some` when `diminishing_steps` steps in a row produced tool
    /// output and none of it was new. A step without tool output leaves the count unchanged.
    pub fn end_step(&mut self) -> Option<Intervention> {
        if self.step_outputs > 0 {
            if self.step_novel {
                self.stale_steps = 0;
            } else {
                self.stale_steps = self.stale_steps.saturating_add(1);
            }
        }
        self.step_outputs = 0;
        self.step_novel = false;
        (self.stale_steps >= self.diminishing_steps).then_some(Intervention::DiminishingReturns {
            steps: self.stale_steps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soft_and_hard_edges() {
        let mut b = TokenBudget::default();
        assert_eq!(b.set_used(31_999, true), None);
        let soft = b.set_used(32_000, true).unwrap();
        assert_eq!(soft.code(), "token_soft_limit");
        assert_eq!(b.set_used(32_001, true), None, "same level nudges once");
        assert_eq!(b.level_for(39_999), BudgetLevel::Nudge(3));
        let hard = b.set_used(40_000, true).unwrap();
        assert_eq!(hard.code(), "token_hard_limit");
        assert_eq!(hard.action(), crate::Action::Compact);
        let hard = b.set_used(40_001, false).unwrap();
        assert_eq!(hard.action(), crate::Action::ForceFinalAnswer);
    }

    #[test]
    fn nudges_escalate() {
        let mut b = TokenBudget::new(100, 400, 3, 3, 1);
        let levels: Vec<_> = [100, 199, 200, 300, 399]
            .into_iter()
            .map(|u| b.set_used(u, true))
            .collect();
        let got: Vec<Option<u8>> = levels
            .iter()
            .map(|i| match i {
                Some(Intervention::TokenSoftLimit { level, .. }) => Some(*level),
                _ => None,
            })
            .collect();
        assert_eq!(got, [Some(1), None, Some(2), Some(3), None]);
        assert_eq!(b.set_used(50, true), None);
        assert!(
            b.set_used(100, true).is_some(),
            "nudges again after dropping below"
        );
    }

    #[test]
    fn estimator_rounds_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("ééééé"), 2);
    }

    #[test]
    fn diminishing_returns_edges() {
        let mut b = TokenBudget::new(100, 200, 3, 3, 5);
        assert!(b.record_output("a fresh output of some length", None));
        assert_eq!(b.end_step(), None);
        // Seen before, too short, seen before: three stale steps.
        assert!(!b.record_output("a fresh output of some length", None));
        assert_eq!(b.end_step(), None);
        assert!(!b.record_output("tiny", Some(1)));
        assert_eq!(b.end_step(), None);
        assert_eq!(b.end_step(), None, "a step without output changes nothing");
        b.record_output("a fresh output of some length", Some(100));
        let hit = b.end_step().unwrap();
        assert_eq!(hit.code(), "diminishing_returns");
        assert!(hit.is_stop());
        b.record_output("something entirely new and long enough", None);
        assert_eq!(b.end_step(), None);
    }
}
