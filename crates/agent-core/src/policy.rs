//! The policy file: one TOML document with a section per layer, and the whole stack built
//! from it. Another Rust agent embeds the guard with [`Policy::load`] and
//! [`Policy::guard_builder`] (see the crate docs' example).
//!
//! Each layer crate owns the type of its section (and rejects unknown keys in it); this module
//! only reads the file and rejects unknown sections, naming the file in every error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::error::Error;
use crate::guard::GuardBuilder;

/// The whole policy document. Sections are optional; an absent section is the layer's default.
#[derive(Debug, Default, Clone, Deserialize)]
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
    /// Auto mode: a model resolves asks that are a known side effect.
    #[serde(default)]
    pub auto: crate::auto::AutoConfig,
}

/// A loaded policy: the parsed document and where it came from.
#[derive(Debug, Default, Clone)]
pub struct Policy {
    /// The file, when one was given.
    pub path: Option<PathBuf>,
    /// Its text (empty when no file was given), kept to turn spans into line numbers.
    pub text: String,
    /// The parsed document, shared: a policy file parsed once is handed to every later load
    /// of the same text (`Policy::load`) without copying its tables.
    pub doc: Arc<PolicyDoc>,
}

/// `permissions` with every rule written in a client's vocabulary (`Bash(rm:*)`) renamed to
/// the guard tool it means (`run_bash(rm:*)`), through the client table. A name the clients
/// disagree on is an error: a rule the guard would silently not apply is worse than none.
fn in_guard_vocabulary(
    permissions: &perm_rules::PermissionsConfig,
) -> Result<perm_rules::PermissionsConfig, Error> {
    let mut out = permissions.clone();
    for list in [&mut out.deny, &mut out.ask, &mut out.allow] {
        for rule in list.iter_mut() {
            let text = rule.get_ref();
            let end = text.find('(').unwrap_or(text.len());
            let (name, rest) = text.split_at(end);
            match crate::clients::rule_tool(name.trim()) {
                Ok(None) => {}
                Ok(Some(guard)) => {
                    *rule = toml::Spanned::new(rule.span(), format!("{guard}{rest}"));
                }
                Err(guards) => {
                    return Err(Error::Policy {
                        message: format!(
                            "the rule `{text}` names `{}`, which the clients map onto different guard tools ({}); write one of those instead",
                            name.trim(),
                            guards.join(", ")
                        ),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The largest policy file read.
const MAX_POLICY_BYTES: usize = 16 * 1024 * 1024;

impl Policy {
    /// Loads `path`, or an empty policy (every layer's default) when `None`.
    pub fn load(path: Option<&Path>) -> Result<Policy, Error> {
        let Some(path) = path else {
            return Ok(Policy::default());
        };
        // Never opened unless it is a regular file: a FIFO at the policy's path would hold a
        // hook until its client's timeout.
        let bad = |message: String| Error::Policy {
            message: format!("cannot read policy file `{}`: {message}", path.display()),
        };
        let text = match fs_sandbox::read_head(path, MAX_POLICY_BYTES + 1) {
            Ok(fs_sandbox::Head::Bytes(bytes)) if bytes.len() <= MAX_POLICY_BYTES => {
                String::from_utf8(bytes).map_err(|e| bad(e.to_string()))?
            }
            Ok(fs_sandbox::Head::Bytes(_)) => {
                return Err(bad(format!("it is larger than {MAX_POLICY_BYTES} bytes")));
            }
            Ok(fs_sandbox::Head::Missing) => return Err(bad("it does not exist".to_owned())),
            Ok(fs_sandbox::Head::NotRegular(_)) => {
                return Err(bad("it is not a regular file".to_owned()));
            }
            Err(e) => return Err(bad(e.to_string())),
        };
        if let Some(policy) = last_parsed(path, &text) {
            return Ok(policy);
        }
        let mut doc: PolicyDoc = toml::from_str(&text).map_err(|err| Error::Policy {
            message: format!("bad policy file `{}`: {err}", path.display()),
        })?;
        doc.hooks.anchor(path);
        let policy = Policy {
            path: Some(path.to_owned()),
            text,
            doc: Arc::new(doc),
        };
        remember(&policy);
        Ok(policy)
    }

    /// Parses a policy held in memory; `name` is used in errors.
    pub fn from_text(name: &str, text: &str) -> Result<Policy, Error> {
        let doc: PolicyDoc = toml::from_str(text).map_err(|err| Error::Policy {
            message: format!("bad policy `{name}`: {err}"),
        })?;
        Ok(Policy {
            path: Some(PathBuf::from(name)),
            text: text.to_owned(),
            doc: Arc::new(doc),
        })
    }

    /// The layer-2 checker: the policy's `[permissions]` as the project layer, with the
    /// `AGENT_PERMISSIONS_*` variables of `env` on top.
    pub fn checker(
        &self,
        env: &HashMap<String, String>,
    ) -> Result<perm_rules::PermissionChecker, Error> {
        let mut layers = Vec::new();
        if let Some(path) = &self.path {
            layers.push(perm_rules::ConfigLayer {
                origin: perm_rules::Origin::Project,
                path: path.display().to_string(),
                text: self.text.clone(),
                config: in_guard_vocabulary(&self.doc.permissions)?,
            });
        }
        let mut checker =
            perm_rules::PermissionChecker::from_config(&layers, env).map_err(|e| {
                Error::Policy {
                    message: e.to_string(),
                }
            })?;
        // Content rules on `run_bash` see the simple commands of a real shell parse, exactly as
        // in the runtime, not the fallback splitter.
        checker.set_subjects(Arc::new(crate::tools::BashSubjects::default()));
        Ok(checker)
    }

    /// The `[bash]` table with `AGENT_BLOCK_NETWORK` from `env` applied on top (anything but an
    /// explicit false keeps the network blocked).
    pub fn bash_config(&self, env: &HashMap<String, String>) -> bash_guard::BashConfig {
        let mut config = self.doc.bash.clone();
        if let Some(value) = env.get("AGENT_BLOCK_NETWORK") {
            config.block_network = !matches!(
                value.trim().to_ascii_lowercase().as_str(),
                "0" | "false" | "no" | "off"
            );
        }
        config
    }

    /// A [`GuardBuilder`] for a session in `cwd` with every layer configured from this policy
    /// and `env` (`AGENT_PERMISSIONS_*`, `AGENT_BLOCK_NETWORK`). Add an approver, a model's
    /// subagents or an audit log, then `build()`.
    pub fn guard_builder(
        &self,
        cwd: impl Into<PathBuf>,
        env: &HashMap<String, String>,
    ) -> Result<GuardBuilder, Error> {
        Ok(GuardBuilder::new(cwd)
            .permissions(self.checker(env)?)
            .sandbox(self.doc.sandbox.clone())
            .bash(self.bash_config(env))
            .hooks(self.doc.hooks.clone())
            .limits(self.doc.limits.clone())
            .auto(self.doc.auto.clone()))
    }

    /// A name for the policy's source in messages.
    pub fn source_name(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => "<no policy file>".to_owned(),
        }
    }
}

/// The policy file this process parsed last. Parsing is a pure function of an absolute path
/// and the file's text, so a process that loads the same unchanged file again (a judge of the
/// resident hook guard, whose warm-up loaded the policy of the call before) reuses the parse;
/// the file is still read every time, and any change in its text parses it anew.
static LAST_PARSED: std::sync::Mutex<Option<Policy>> = std::sync::Mutex::new(None);

fn last_parsed(path: &Path, text: &str) -> Option<Policy> {
    let last = LAST_PARSED.lock().ok()?;
    let policy = last.as_ref()?;
    (path.is_absolute() && policy.path.as_deref() == Some(path) && policy.text == text)
        .then(|| policy.clone())
}

fn remember(policy: &Policy) {
    // A relative path's audit database is anchored at the working directory, which the key
    // would not hold: only absolute paths are remembered.
    if policy.path.as_deref().is_some_and(Path::is_absolute)
        && let Ok(mut last) = LAST_PARSED.lock()
    {
        *last = Some(policy.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_file_whose_text_changed_is_parsed_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, "[permissions]\ndefault = \"allow\"\n").unwrap();
        let first = Policy::load(Some(&path)).unwrap();
        let again = Policy::load(Some(&path)).unwrap();
        assert_eq!(format!("{:?}", first.doc), format!("{:?}", again.doc));
        std::fs::write(&path, "[permissions]\ndefault = \"ask\"\n").unwrap();
        let changed = Policy::load(Some(&path)).unwrap();
        assert!(changed.text.contains("ask"));
        assert_ne!(format!("{:?}", first.doc), format!("{:?}", changed.doc));
        std::fs::write(&path, "[permissions]\ndefault = ").unwrap();
        assert!(
            Policy::load(Some(&path)).is_err(),
            "a broken file is an error, not the last parse"
        );
    }

    #[test]
    fn rules_in_a_clients_vocabulary_are_applied_as_guard_rules() {
        let policy = Policy::from_text(
            "p.toml",
            "[permissions]\ndefault = \"allow\"\ndeny = [\"Bash(rm:*)\", \"Read(**/.env)\", \"mcp__x__y\"]\n",
        )
        .unwrap();
        let checker = policy.checker(&HashMap::new()).unwrap();
        let texts: Vec<&str> = checker.rules().map(|r| r.text()).collect();
        assert_eq!(texts, ["run_bash(rm:*)", "read_file(**/.env)", "mcp__x__y"]);
    }
}
