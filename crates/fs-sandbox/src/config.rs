//! The `[sandbox]` table of the policy file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sandbox::{Access, Sandbox, SandboxBuilder};

/// The `[sandbox]` table: roots and protected paths.
///
/// ```toml
/// [sandbox]
/// roots = ["."]                       # read-write; relative roots resolve against the cwd
/// read_only_roots = ["/opt/skills"]
/// # protected = [".git/config"]       # replaces the default protected list
/// extra_protected = ["secrets/**"]    # extends it
/// home = "/home/me"                   # anchors `~/` sensitive patterns (default: $HOME)
/// sensitive = ["~/.config/acme/token", "*.secret"]  # extends the sensitive list
/// ```
///
/// With neither `roots` nor `read_only_roots`, the cwd is the one writable root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Read-write roots.
    #[serde(default)]
    pub roots: Vec<PathBuf>,
    /// Read-only roots.
    #[serde(default)]
    pub read_only_roots: Vec<PathBuf>,
    /// When given, REPLACES [`DEFAULT_PROTECTED`](crate::DEFAULT_PROTECTED).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected: Option<Vec<String>>,
    /// Patterns added to the protected list (the default or `protected`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_protected: Vec<String>,
    /// The home directory `~/` sensitive patterns are anchored at (default: `$HOME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<PathBuf>,
    /// Patterns added to [`DEFAULT_SENSITIVE`](crate::DEFAULT_SENSITIVE) (`~/x` = below the
    /// home directory, `/x` absolute, anything else at any depth, `dir/**` a whole tree).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive: Vec<String>,
}

impl SandboxConfig {
    /// A builder with this configuration, to add more roots before building.
    pub fn builder(&self, cwd: &Path) -> SandboxBuilder {
        let mut builder = Sandbox::builder(cwd);
        for root in &self.roots {
            builder = builder.root(root.clone(), Access::ReadWrite);
        }
        for root in &self.read_only_roots {
            builder = builder.root(root.clone(), Access::ReadOnly);
        }
        if let Some(protected) = &self.protected {
            builder = builder.clear_protected();
            for pattern in protected {
                builder = builder.protected(pattern);
            }
        }
        for pattern in &self.extra_protected {
            builder = builder.protected(pattern);
        }
        if let Some(home) = &self.home {
            builder = builder.home(home.clone());
        }
        for pattern in &self.sensitive {
            builder = builder.sensitive(pattern);
        }
        builder
    }
}
