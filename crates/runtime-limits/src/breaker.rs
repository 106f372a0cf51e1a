use crate::Intervention;

/// Skips automatic compaction after `threshold` consecutive failures, so a context that cannot
/// be compacted does not loop forever.
///
/// Time is a caller-supplied tick (the step number, or any monotone clock), so the breaker is
/// deterministic. Once open, it lets one attempt through `cooldown` ticks after the last
/// failure (half-open): a success closes it, a failure re-opens it for another cool-down.
/// A `cooldown` of 0 means only a success (e.g. a manual compaction) closes it.
#[derive(Debug, Clone)]
pub struct CompactionCircuitBreaker {
    threshold: u32,
    cooldown: u64,
    failures: u32,
    last_failure: u64,
}

impl Default for CompactionCircuitBreaker {
    fn default() -> Self {
        CompactionCircuitBreaker::new(3, 5)
    }
}

impl CompactionCircuitBreaker {
    /// A breaker opening after `threshold` failures in a row, with `cooldown` ticks.
    pub fn new(threshold: u32, cooldown: u64) -> Self {
        CompactionCircuitBreaker {
            threshold: threshold.max(1),
            cooldown,
            failures: 0,
            last_failure: 0,
        }
    }

    /// Consecutive failures so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Whether automatic compaction is skipped at tick `now`.
    pub fn is_open(&self, now: u64) -> bool {
        self.failures >= self.threshold
            && (self.cooldown == 0 || now < self.last_failure.saturating_add(self.cooldown))
    }

    /// `Some` when automatic compaction must be skipped at tick `now`.
    pub fn check(&self, now: u64) -> Option<Intervention> {
        self.is_open(now)
            .then_some(Intervention::CompactionBreakerOpen {
                failures: self.failures,
            })
    }

    /// A compaction succeeded: close the breaker.
    pub fn record_success(&mut self) {
        self.failures = 0;
    }

    /// A compaction failed at tick `now`.
    pub fn record_failure(&mut self, now: u64) {
        self.failures = self.failures.saturating_add(1);
        self.last_failure = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_at_threshold_not_before() {
        let mut b = CompactionCircuitBreaker::new(3, 5);
        b.record_failure(1);
        b.record_failure(2);
        assert!(!b.is_open(2));
        b.record_failure(3);
        let open = b.check(3).unwrap();
        assert_eq!(open.code(), "compaction_breaker_open");
        assert_eq!(open.action(), crate::Action::SkipCompaction);
    }

    #[test]
    fn cooldown_edges_and_half_open() {
        let mut b = CompactionCircuitBreaker::new(1, 5);
        b.record_failure(10);
        assert!(b.is_open(14));
        assert!(!b.is_open(15), "one attempt after exactly the cool-down");
        b.record_failure(15);
        assert!(b.is_open(15), "a failed retry re-opens it");
        b.record_success();
        assert!(!b.is_open(16));
    }

    #[test]
    fn zero_cooldown_waits_for_a_success() {
        let mut b = CompactionCircuitBreaker::new(1, 0);
        b.record_failure(0);
        assert!(b.is_open(u64::MAX));
        b.record_success();
        assert!(!b.is_open(0));
    }
}
