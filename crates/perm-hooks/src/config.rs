//! The `[hooks]` section of the policy file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::command::{CommandHook, HookEvent};
use crate::error::Error;
use crate::redact::{RedactionHook, SecretScanner, SharedScanner};
use crate::registry::{DEFAULT_HOOK_TIMEOUT, HookOptions, HookRegistry, OnError};

fn yes() -> bool {
    true
}

fn default_events() -> Vec<HookEvent> {
    vec![HookEvent::PreToolUse]
}

/// The `[hooks]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// Mask secrets in tool output (default `true`).
    #[serde(default = "yes")]
    pub redact_secrets: bool,
    /// What redaction finds and skips, `[hooks.redaction]`.
    #[serde(default)]
    pub redaction: RedactionConfig,
    /// The audit database (default [`crate::DEFAULT_AUDIT_DB`]).
    #[serde(default)]
    pub audit_db: Option<PathBuf>,
    /// Write the audit log (default `true`).
    #[serde(default = "yes")]
    pub audit: bool,
    /// The per-hook timeout in seconds when a hook does not set one (default 10).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// External hooks, `[[hooks.command]]`.
    #[serde(default)]
    pub command: Vec<CommandHookConfig>,
}

impl Default for HooksConfig {
    fn default() -> Self {
        HooksConfig {
            redact_secrets: true,
            redaction: RedactionConfig::default(),
            audit_db: None,
            audit: true,
            timeout: None,
            command: Vec::new(),
        }
    }
}

/// The `[hooks.redaction]` table: policy changes to the built-in secret detectors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactionConfig {
    /// Built-in detector ids to turn off (e.g. `["jwt"]`); an unknown id is an error.
    #[serde(default)]
    pub disable: Vec<String>,
    /// Detectors to add, `[[hooks.redaction.extra]]`.
    #[serde(default)]
    pub extra: Vec<ExtraDetector>,
    /// Globs of paths whose output is never redacted (fixtures full of fake keys). A relative
    /// glob matches at any depth: `tests/fixtures/**` is `**/tests/fixtures/**`.
    #[serde(default)]
    pub allow_paths: Vec<String>,
    /// Names that are not secrets for `secret-assignment` (compared case-insensitively).
    #[serde(default)]
    pub allow_keys: Vec<String>,
}

/// One `[[hooks.redaction.extra]]` detector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraDetector {
    /// Its id, shown as `[REDACTED:<id>]`; must not be a built-in id.
    pub id: String,
    /// A Rust regex; a named group `secret` narrows what is masked.
    pub pattern: String,
    /// Minimum Shannon entropy (bits per character) of the masked text.
    #[serde(default)]
    pub entropy: Option<f64>,
    /// Literals one of which starts every match: the pattern then runs only where one occurs
    /// (fast). Without anchors it runs over the whole text.
    #[serde(default)]
    pub anchors: Vec<String>,
    /// A text it must find (checked when the policy loads).
    #[serde(default)]
    pub hit: Option<String>,
    /// A look-alike it must not match (checked when the policy loads).
    #[serde(default)]
    pub miss: Option<String>,
}

/// One `[[hooks.command]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandHookConfig {
    /// Run with `bash -c`, as Claude Code does.
    pub command: String,
    /// Tool names it applies to: exact, `a|b`, a regex, a glob like `mcp__*`; empty or `*` = all.
    #[serde(default)]
    pub matcher: Option<String>,
    /// Which events it receives (default `["PreToolUse"]`).
    #[serde(default = "default_events")]
    pub events: Vec<HookEvent>,
    /// Seconds before it is killed and counted as failed.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Failure policy (default `deny` for PreToolUse, `ignore` for PostToolUse).
    #[serde(default)]
    pub on_error: Option<OnError>,
    /// A name for results and logs (default `command:<command>`).
    #[serde(default)]
    pub name: Option<String>,
}

fn seconds(key: &str, value: Option<f64>, default: Duration) -> Result<Duration, Error> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(Error::Config {
            key: key.to_owned(),
            message: format!("`{s}` is not a number of seconds in (0, 3600]"),
        }),
    }
}

/// The `audit_db` earlier starter policies wrote (see [`HooksConfig::anchor`]).
const LEGACY_STARTER_AUDIT_DB: &str = ".agent-guard/audit.db";

impl HooksConfig {
    /// The audit database: `audit_db` as given (see [`HooksConfig::anchor`]), else
    /// [`crate::default_audit_db`] in the guard's state directory, outside every project.
    pub fn audit_db_path(&self) -> Result<PathBuf, Error> {
        match &self.audit_db {
            Some(db) => Ok(db.clone()),
            None => crate::default_audit_db(),
        }
    }

    /// Resolves a relative SQLite `audit_db` against the directory of the policy file that
    /// names it, never against whatever directory the guard runs in (a hook runs in every
    /// project the agent opens).
    ///
    /// The value earlier starter policies wrote, `.agent-guard/audit.db`, put a database in
    /// every project a user-level install saw (where `git add -A` commits it, and where the
    /// agent can write): it means the default now, in the guard's state directory.
    pub fn anchor(&mut self, policy_file: &Path) {
        let Some(db) = &self.audit_db else { return };
        if db == Path::new(LEGACY_STARTER_AUDIT_DB) {
            self.audit_db = None;
            return;
        }
        if !db.is_relative() || db.to_str().is_some_and(crate::is_postgres_url) {
            return;
        }
        let dir = policy_file.parent().unwrap_or(Path::new(""));
        let dir = if dir.is_absolute() {
            dir.to_owned()
        } else {
            std::env::current_dir().unwrap_or_default().join(dir)
        };
        self.audit_db = Some(dir.join(db));
    }

    /// The default per-hook timeout.
    pub fn default_timeout(&self) -> Result<Duration, Error> {
        seconds("hooks.timeout", self.timeout, DEFAULT_HOOK_TIMEOUT)
    }

    /// Compiles every command hook with its options, in file order.
    pub fn command_hooks(&self) -> Result<Vec<(Arc<CommandHook>, HookOptions)>, Error> {
        let default_timeout = self.default_timeout()?;
        self.command
            .iter()
            .map(|c| {
                let timeout = seconds("hooks.command.timeout", c.timeout, default_timeout)?;
                let hook = CommandHook::new(c)?;
                let defaults = HookOptions::default();
                let options = HookOptions {
                    timeout,
                    pre_on_error: c.on_error.unwrap_or(defaults.pre_on_error),
                    post_on_error: c.on_error.unwrap_or(defaults.post_on_error),
                };
                Ok((Arc::new(hook), options))
            })
            .collect()
    }

    /// The secret scanner this policy asks for (the shared built-in set when unchanged).
    pub fn secret_scanner(&self) -> Result<Arc<SecretScanner>, Error> {
        self.shared_scanner().map(SharedScanner::into_arc)
    }

    /// The policy's detectors as a [`SharedScanner`]: the built-in set is compiled on first
    /// use, a changed set now (its errors are the policy's).
    pub fn shared_scanner(&self) -> Result<SharedScanner, Error> {
        if self.redaction == RedactionConfig::default() {
            Ok(SharedScanner::builtin())
        } else {
            SecretScanner::from_config(&self.redaction).map(|s| SharedScanner::from(Arc::new(s)))
        }
    }

    /// The redaction hook this policy asks for.
    pub fn redaction_hook(&self) -> Result<RedactionHook, Error> {
        self.shared_scanner().map(RedactionHook::new)
    }

    /// Registers the configured hooks: the command hooks in file order, then redaction (when
    /// on), so a post hook registered after these sees redacted output.
    pub fn register(&self, registry: &mut HookRegistry) -> Result<(), Error> {
        let timeout = self.default_timeout()?;
        let redaction = if self.redact_secrets {
            Some(self.redaction_hook()?)
        } else {
            None
        };
        for (hook, options) in self.command_hooks()? {
            registry.register_with(hook, options);
        }
        if let Some(hook) = redaction {
            registry.register_with(
                Arc::new(hook),
                HookOptions {
                    timeout,
                    // A redaction that failed must not let the secret through.
                    post_on_error: OnError::Deny,
                    ..HookOptions::default()
                },
            );
        }
        Ok(())
    }
}
