//! The one output shape shared by every deciding subcommand.
//!
//! With `--json`, stdout is exactly one JSON object: `decision`, `reasons` (each with `layer`,
//! `code`, `message`) and any subcommand-specific fields (`resolved`, `findings`, ...).

use perm_rules::Decision;
use serde::Serialize;
use serde_json::{Map, Value};

/// Why a layer decided what it did.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Reason {
    /// Which layer decided: `perm-rules`, `fs-sandbox`, `bash-guard`, ...
    pub layer: String,
    /// A stable machine-readable code.
    pub code: String,
    /// A sentence a person can act on.
    pub message: String,
}

impl Reason {
    pub(crate) fn new(
        layer: impl Into<String>,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Reason {
            layer: layer.into(),
            code: code.into(),
            message: message.into(),
        }
    }
}

/// A decision with its reasons and extra fields.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    pub decision: Decision,
    pub reasons: Vec<Reason>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Report {
    pub(crate) fn new(decision: Decision, reasons: Vec<Reason>) -> Self {
        Report {
            decision,
            reasons,
            extra: Map::new(),
        }
    }

    /// Adds a subcommand-specific field.
    pub(crate) fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// Prints the report: one JSON object, or a short human summary.
    pub(crate) fn print(&self, json: bool) -> anyhow::Result<()> {
        if json {
            println!("{}", serde_json::to_string(self)?);
            return Ok(());
        }
        println!("{}", self.decision);
        for reason in &self.reasons {
            println!("  [{}] {}: {}", reason.layer, reason.code, reason.message);
        }
        for (key, value) in &self.extra {
            match value {
                Value::String(s) => println!("  {key}: {s}"),
                other => println!("  {key}: {other}"),
            }
        }
        Ok(())
    }
}
