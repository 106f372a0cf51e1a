//! Decisions, findings and verdicts.

use serde::Serialize;

/// What to do with a command, ordered by strictness so that combining findings is `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Provably read-only, no side effects.
    Allow,
    /// Side effects that are not catastrophic: a person should confirm.
    Ask,
    /// Catastrophic, unreviewable or forbidden by policy.
    Deny,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        })
    }
}

/// One rule that fired on one simple command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What this finding alone decides.
    pub decision: Decision,
    /// A stable machine-readable reason code (`read_only`, `network`, `write_outside_roots`, ...).
    pub code: &'static str,
    /// The simple command it is about, its decoded words joined by spaces.
    pub subcommand: String,
    /// Why, in words a person can act on.
    pub message: String,
}

/// The verdict on a whole command: the strictest finding wins, and every finding is listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The strictest decision of all findings.
    pub decision: Decision,
    /// Every finding, in the order the walker met them.
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// Builds a verdict from findings; no findings at all is a deny (nothing to run was found).
    pub(crate) fn from_findings(findings: Vec<Finding>) -> Verdict {
        let decision = findings
            .iter()
            .map(|f| f.decision)
            .max()
            .unwrap_or(Decision::Deny);
        Verdict { decision, findings }
    }

    /// Every simple command the analysis met (inside substitutions, `bash -c` strings, wrappers
    /// and `find -exec` too), each once, in walk order: the subjects perm-rules' content rules
    /// match. `Err` (why) when any part could not be parsed or hit a cap: such a command is
    /// unsplittable, and no allow rule may allow it. Derived from the same walk as the verdict,
    /// so a command is parsed once for both.
    pub fn simple_commands(&self) -> Result<Vec<String>, String> {
        if let Some(f) = self
            .findings
            .iter()
            .find(|f| crate::limits::UNPARSABLE.contains(&f.code))
        {
            return Err(f.message.clone());
        }
        let mut seen = std::collections::HashSet::new();
        Ok(self
            .findings
            .iter()
            .filter(|f| !f.subcommand.is_empty() && seen.insert(f.subcommand.as_str()))
            .map(|f| f.subcommand.clone())
            .collect())
    }

    /// The findings that decided the verdict (those as strict as the verdict itself).
    pub fn deciding(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(move |f| f.decision == self.decision)
    }
}
