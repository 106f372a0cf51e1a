use crate::Intervention;

/// The seed's `step > max_steps` rule: steps `1..=max` may call tools, the next one must be a
/// final answer without tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepLimit {
    max: u32,
}

impl Default for StepLimit {
    fn default() -> Self {
        StepLimit { max: 8 }
    }
}

impl StepLimit {
    /// A limit of `max` tool steps.
    pub fn new(max: u32) -> Self {
        StepLimit { max }
    }

    /// The configured maximum.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// Judges the 1-based `step` about to start.
    pub fn check(&self, step: u32) -> Option<Intervention> {
        (step > self.max).then_some(Intervention::MaxSteps {
            step,
            max: self.max,
        })
    }

    /// The reminder to inject when the limit fires.
    pub fn reminder(&self) -> String {
        Intervention::MaxSteps {
            step: self.max.saturating_add(1),
            max: self.max,
        }
        .message()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_limit_is_allowed_one_past_is_forced() {
        let limit = StepLimit::default();
        assert_eq!(limit.check(8), None);
        let stop = limit.check(9).unwrap();
        assert_eq!(stop.code(), "max_steps");
        assert!(stop.is_stop());
        assert!(limit.reminder().contains("without calling tools"));
    }
}
