//! The policy file: one TOML document with a section per layer.
//!
//! Each layer crate owns the type of its section (and rejects unknown keys in it); this module
//! only reads the file and rejects unknown sections, naming the file in every error.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Deserialize;

/// The whole policy document. Sections are optional; an absent section is the layer's default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyDoc {
    /// Layer 2: rules and mode.
    #[serde(default)]
    pub permissions: perm_rules::PermissionsConfig,
    /// Layer 4: roots and protected paths.
    #[serde(default)]
    pub sandbox: fs_sandbox::SandboxConfig,
    /// Layer 5: bash analysis and execution.
    #[serde(default)]
    pub bash: bash_guard::BashConfig,
    /// Layer 3: command hooks, redaction, audit.
    #[serde(default)]
    pub hooks: perm_hooks::HooksConfig,
    /// Layer 7: runtime limits.
    #[serde(default)]
    pub limits: runtime_limits::LimitsConfig,
}

/// A loaded policy: the parsed document and where it came from.
#[derive(Debug, Default)]
pub struct Policy {
    /// The file, when one was given.
    pub path: Option<PathBuf>,
    /// Its text (empty when no file was given), kept to turn spans into line numbers.
    pub text: String,
    pub doc: PolicyDoc,
}

impl Policy {
    /// Loads `path`, or an empty policy when `None`.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Policy> {
        let Some(path) = path else {
            return Ok(Policy::default());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read policy file `{}`", path.display()))?;
        let doc: PolicyDoc = toml::from_str(&text)
            .map_err(|err| anyhow::anyhow!("bad policy file `{}`: {err}", path.display()))?;
        Ok(Policy {
            path: Some(path.to_owned()),
            text,
            doc,
        })
    }

    /// Parses a policy held in memory (the bundled demo policy); `name` is used in errors.
    pub fn from_text(name: &str, text: &str) -> anyhow::Result<Policy> {
        let doc: PolicyDoc =
            toml::from_str(text).map_err(|err| anyhow::anyhow!("bad policy `{name}`: {err}"))?;
        Ok(Policy {
            path: Some(PathBuf::from(name)),
            text: text.to_owned(),
            doc,
        })
    }

    /// The layer-2 checker: the policy's `[permissions]` as the project layer, with the
    /// `AGENT_PERMISSIONS_*` variables of `env` on top.
    pub fn checker(
        &self,
        env: &std::collections::HashMap<String, String>,
    ) -> anyhow::Result<perm_rules::PermissionChecker> {
        let mut layers = Vec::new();
        if let Some(path) = &self.path {
            layers.push(perm_rules::ConfigLayer {
                origin: perm_rules::Origin::Project,
                path: path.display().to_string(),
                text: self.text.clone(),
                config: self.doc.permissions.clone(),
            });
        }
        let mut checker = perm_rules::PermissionChecker::from_config(&layers, env)?;
        // Content rules on `run_bash` see the simple commands of a real shell parse, exactly as
        // in the runtime (agent-core wires the same provider), not the fallback splitter.
        checker.set_subjects(std::sync::Arc::new(agent_core::tools::BashSubjects));
        Ok(checker)
    }

    /// A name for the policy's source in messages.
    #[allow(dead_code)]
    pub fn source_name(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => "<no policy file>".to_owned(),
        }
    }
}
