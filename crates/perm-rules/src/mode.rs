//! Permission modes: how the combined decision is adjusted at the end.

use serde::{Deserialize, Serialize};

use crate::Decision;

/// A session-wide mode applied to the combined decision. No mode turns a Deny into anything
/// else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum PermissionMode {
    /// Decisions stand as they are.
    #[default]
    #[serde(rename = "default")]
    Default,
    /// Ask -> Allow for the edit tools `file_write` and `file_edit` (the sandbox still applies).
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// Every tool that is not read-only -> Deny.
    #[serde(rename = "plan")]
    Plan,
    /// Ask -> Deny: nobody is there to answer.
    #[serde(rename = "dontAsk")]
    DontAsk,
    /// Ask -> Allow.
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

impl PermissionMode {
    /// Every mode, for tests and help text.
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
        PermissionMode::BypassPermissions,
    ];

    /// The name used in policy files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    /// Parses a mode name; `None` for an unknown one.
    pub fn parse(name: &str) -> Option<PermissionMode> {
        PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == name.trim())
    }

    /// The decision after this mode, for `tool` (`read_only` as the tool declares it).
    pub fn transform(self, decision: Decision, tool: &str, read_only: bool) -> Decision {
        match (self, decision) {
            (_, Decision::Deny) => Decision::Deny,
            (PermissionMode::Plan, _) if !read_only => Decision::Deny,
            (PermissionMode::AcceptEdits, Decision::Ask)
                if matches!(tool, "file_write" | "file_edit") =>
            {
                Decision::Allow
            }
            (PermissionMode::DontAsk, Decision::Ask) => Decision::Deny,
            (PermissionMode::BypassPermissions, Decision::Ask) => Decision::Allow,
            (_, d) => d,
        }
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        use Decision::*;
        use PermissionMode::*;
        for m in PermissionMode::ALL {
            assert_eq!(m.transform(Deny, "read_file", true), Deny);
            assert_eq!(PermissionMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(AcceptEdits.transform(Ask, "file_edit", false), Allow);
        assert_eq!(AcceptEdits.transform(Ask, "run_bash", false), Ask);
        assert_eq!(Plan.transform(Allow, "run_bash", false), Deny);
        assert_eq!(Plan.transform(Ask, "read_file", true), Ask);
        assert_eq!(DontAsk.transform(Ask, "x", false), Deny);
        assert_eq!(BypassPermissions.transform(Ask, "x", false), Allow);
        assert_eq!(Default.transform(Ask, "x", false), Ask);
        assert_eq!(
            serde_json::to_string(&AcceptEdits).unwrap(),
            "\"acceptEdits\""
        );
    }
}
