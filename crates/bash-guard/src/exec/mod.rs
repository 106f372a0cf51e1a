//! Guarded execution of an already-validated command.

use serde::{Deserialize, Serialize};

/// Execution settings: the `[bash.exec]` table of a policy file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecConfig {}
