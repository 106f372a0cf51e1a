use serde::{Deserialize, Serialize};

/// The outcome of a permission check, ordered by strictness: `Allow < Ask < Deny`.
///
/// Combining several findings is `max`, so the strictest one always wins. The enum is
/// exhaustive on purpose: code that matches on it must handle every outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The call may run.
    Allow,
    /// A person must approve the call first.
    Ask,
    /// The call must not run.
    Deny,
}

impl Decision {
    /// The lowercase name used in JSON output and policy files.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictness_order() {
        assert!(Decision::Allow < Decision::Ask);
        assert!(Decision::Ask < Decision::Deny);
        assert_eq!(
            [Decision::Ask, Decision::Deny, Decision::Allow]
                .into_iter()
                .max(),
            Some(Decision::Deny)
        );
    }

    #[test]
    fn serde_names_are_lowercase() {
        assert_eq!(serde_json::to_string(&Decision::Ask).unwrap(), "\"ask\"");
        assert_eq!(Decision::Deny.to_string(), "deny");
    }
}
