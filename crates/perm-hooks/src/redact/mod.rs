//! Masks secrets in tool output before the model sees it.
//!
//! Secrets are found by their shape, as the scanners people trust do (gitleaks, trufflehog,
//! GitHub secret scanning): known token formats with their prefixes and lengths, private-key
//! blocks, passwords in URLs, and `NAME=value` where NAME holds a secret-like *word*. The
//! formats are data (`detectors.toml`), each with a test pair; one [`SecretScanner`] runs them
//! all behind a single Aho-Corasick prefilter.

mod assign;
mod scanner;
mod table;

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;

pub use scanner::{Redacted, SecretFinding, SecretScanner};

use crate::hook::{AgentHook, HookResult, PostToolUseAction, PostToolUseContext};

/// Every built-in detector's example: (id, hit, miss), `secret-assignment` last.
#[cfg(test)]
pub(crate) fn builtin_examples() -> Vec<(String, String, String)> {
    #[allow(clippy::expect_used)]
    let t = table::builtin().expect("the built-in table parses");
    t.detector
        .iter()
        .filter_map(|d| d.example.as_ref().map(|e| (d.id.clone(), e)))
        .chain(
            t.assignment
                .example
                .as_ref()
                .map(|e| (t.assignment.id.clone(), e)),
        )
        .map(|(id, e)| (id, e.hit.clone(), e.miss.clone()))
        .collect()
}

/// Masks secrets with the built-in detectors ([`SecretScanner::default_set`]).
pub fn redact_secrets(text: &str) -> Cow<'_, str> {
    SecretScanner::default_set().redact(text).text
}

/// The argument names that carry the path a tool read, for `allow_paths`.
const PATH_ARGS: [&str; 4] = ["path", "file_path", "notebook_path", "filePath"];

/// The path a call's arguments name, if any.
pub fn call_path(args: &serde_json::Value) -> Option<&str> {
    PATH_ARGS
        .iter()
        .find_map(|k| args.get(*k).and_then(serde_json::Value::as_str))
}

/// A [`SecretScanner`] that may not be compiled yet: the built-in set compiles on first use
/// (once per process), a policy's own set when it is built (so a bad pattern is a
/// configuration error at load, not at the first tool output).
///
/// A hook process that judges one read of a source file never scans anything; compiling the
/// detectors for it was a tenth of such a call.
#[derive(Debug, Clone)]
pub struct SharedScanner(Option<Arc<SecretScanner>>);

impl SharedScanner {
    /// The built-in detectors, compiled when [`SharedScanner::get`] is first called.
    pub fn builtin() -> SharedScanner {
        SharedScanner(None)
    }

    /// The scanner.
    pub fn get(&self) -> &SecretScanner {
        match &self.0 {
            Some(scanner) => scanner,
            None => SecretScanner::default_set(),
        }
    }

    /// The scanner as a shared handle (compiling the built-in set now, if it is that).
    pub fn into_arc(self) -> Arc<SecretScanner> {
        self.0.unwrap_or_else(SecretScanner::default_set_arc)
    }
}

impl From<Arc<SecretScanner>> for SharedScanner {
    fn from(scanner: Arc<SecretScanner>) -> Self {
        SharedScanner(Some(scanner))
    }
}

/// A post hook that masks secrets in every tool output with its [`SecretScanner`], except for
/// output read from a path the policy's `allow_paths` exempts.
#[derive(Debug, Clone)]
pub struct RedactionHook {
    scanner: SharedScanner,
}

impl RedactionHook {
    /// A hook using `scanner` (e.g. [`crate::HooksConfig::secret_scanner`], or a
    /// [`SharedScanner`] from [`crate::HooksConfig::shared_scanner`]).
    pub fn new(scanner: impl Into<SharedScanner>) -> RedactionHook {
        RedactionHook {
            scanner: scanner.into(),
        }
    }

    /// The scanner it uses.
    pub fn scanner(&self) -> &SecretScanner {
        self.scanner.get()
    }
}

impl Default for RedactionHook {
    /// The built-in detectors, no allow-lists.
    fn default() -> Self {
        RedactionHook::new(SharedScanner::builtin())
    }
}

#[async_trait]
impl AgentHook for RedactionHook {
    fn name(&self) -> &str {
        "redaction"
    }

    fn wants_pre_tool_use(&self) -> bool {
        false
    }

    async fn post_tool_use(&self, ctx: &PostToolUseContext) -> HookResult<PostToolUseAction> {
        let scanner = self.scanner.get();
        if call_path(&ctx.args).is_some_and(|p| scanner.path_allowed(p)) {
            return Ok(PostToolUseAction::Continue);
        }
        Ok(match scanner.redact(&ctx.output).text {
            Cow::Borrowed(_) => PostToolUseAction::Continue,
            Cow::Owned(updated_content) => PostToolUseAction::MutateOutput { updated_content },
        })
    }
}
