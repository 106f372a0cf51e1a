//! The `[bash]` table of a policy file.

use serde::{Deserialize, Serialize};

use crate::exec::ExecConfig;

/// Bash analysis settings: the `[bash]` table of a policy file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashConfig {
    /// Deny network clients (`curl`, `ssh`, `git push`, ...). Default `true`; the CLI reads
    /// `AGENT_BLOCK_NETWORK` into it.
    #[serde(default = "yes")]
    pub block_network: bool,
    /// Extra command names to deny wherever they appear.
    #[serde(default)]
    pub deny_commands: Vec<String>,
    /// Extra command names to ask about even where they would be allowed.
    #[serde(default)]
    pub ask_commands: Vec<String>,
    /// Guarded execution settings (`[bash.exec]`).
    #[serde(default)]
    pub exec: ExecConfig,
}

fn yes() -> bool {
    true
}

impl Default for BashConfig {
    fn default() -> Self {
        BashConfig {
            block_network: true,
            deny_commands: Vec::new(),
            ask_commands: Vec::new(),
            exec: ExecConfig::default(),
        }
    }
}
