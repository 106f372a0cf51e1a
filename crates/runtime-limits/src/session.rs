use std::collections::HashSet;

use crate::{Intervention, LimitsConfig};

/// The limits of a session whose state lives outside this process: the agent hooks run once
/// per tool call, so the count and the run of identical calls are kept by the caller (the
/// audit database) and judged here, with the same semantics as [`crate::DuplicateDetector`]
/// (the `duplicate_threshold`-th identical consecutive call is refused, a refused call still
/// counts, exempt tools never are) plus a cap on the session's calls.
#[derive(Debug, Clone)]
pub struct SessionLimits {
    max_calls: u32,
    duplicate_threshold: u32,
    exempt: HashSet<String>,
}

impl SessionLimits {
    /// The limits of the `[limits]` table.
    pub fn from_config(config: &LimitsConfig) -> Self {
        SessionLimits {
            max_calls: config.max_session_calls,
            duplicate_threshold: config.duplicate_threshold,
            exempt: config.duplicate_exempt.iter().cloned().collect(),
        }
    }

    /// The configured cap on a session's calls.
    pub fn max_calls(&self) -> u32 {
        self.max_calls
    }

    /// Judges a call of `tools` (any of the names it goes by, e.g. the client's and the
    /// guard's) that made the session's count `calls` and ended a run of `run` identical
    /// consecutive calls. The cap is judged first: past it, nothing more runs.
    pub fn judge(&self, tools: &[&str], calls: u64, run: u64) -> Option<Intervention> {
        if calls > u64::from(self.max_calls) {
            return Some(Intervention::MaxSessionCalls {
                count: calls,
                max: self.max_calls,
            });
        }
        let exempt = tools.iter().any(|t| self.exempt.contains(*t));
        (run >= u64::from(self.duplicate_threshold) && !exempt).then(|| {
            Intervention::DuplicateCall {
                tool: tools.first().copied().unwrap_or_default().to_owned(),
                count: u32::try_from(run).unwrap_or(u32::MAX),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DuplicateDetector;
    use proptest::prelude::*;
    use serde_json::json;

    fn limits(max: u32, threshold: u32, exempt: &[&str]) -> SessionLimits {
        SessionLimits::from_config(&LimitsConfig {
            max_session_calls: max,
            duplicate_threshold: threshold,
            duplicate_exempt: exempt.iter().map(|s| (*s).to_owned()).collect(),
            ..LimitsConfig::default()
        })
    }

    #[test]
    fn the_call_past_the_cap_is_refused_and_names_the_key() {
        let l = limits(3, 3, &[]);
        assert_eq!(l.judge(&["Read"], 3, 1), None);
        let hit = l.judge(&["Read"], 4, 1).unwrap();
        assert_eq!(hit.code(), "max_session_calls");
        assert_eq!(hit.action(), crate::Action::RefuseCall);
        assert!(hit.message().contains("4 tool calls"), "{hit}");
        assert!(
            hit.message().contains("[limits] max_session_calls"),
            "{hit}"
        );
    }

    #[test]
    fn an_exempt_name_is_never_a_duplicate() {
        let l = limits(100, 2, &["poll"]);
        assert_eq!(l.judge(&["Poll", "poll"], 5, 5), None);
        assert_eq!(
            l.judge(&["Read", "read_file"], 5, 2).unwrap().code(),
            "duplicate_call"
        );
    }

    // The tally the audit database keeps (count, and a run that a different call resets to 1)
    // judged here must refuse exactly the calls the in-process detector refuses.
    proptest! {
        #[test]
        fn mirrors_the_in_process_detector(
            calls in proptest::collection::vec((0u8..3, 0u8..2), 1..40),
            threshold in 2u32..5,
        ) {
            let mut detector = DuplicateDetector::new(threshold, 3, ["t2"]);
            let session = limits(u32::MAX, threshold, &["t2"]);
            let mut last: Option<(u8, u8)> = None;
            let mut run = 0u64;
            for (n, (tool, arg)) in calls.into_iter().enumerate() {
                let name = format!("t{tool}");
                run = if last == Some((tool, arg)) { run + 1 } else { 1 };
                last = Some((tool, arg));
                let expected = detector.on_call(&name, &json!({"a": arg}));
                let got = session.judge(&[name.as_str()], n as u64 + 1, run);
                prop_assert_eq!(got, expected);
            }
        }
    }
}
