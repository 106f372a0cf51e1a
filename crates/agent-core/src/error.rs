//! The crate's one error enum: bad configuration and I/O while composing the stack.

use std::path::PathBuf;

/// Errors of composition (bad configuration, I/O), never of a check: checks return values.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Two tools were registered under one name.
    #[error("a tool named `{0}` is already registered")]
    DuplicateTool(String),
    /// A model script could not be parsed.
    #[error("bad model script: {0}")]
    Script(String),
    /// A file could not be read or written.
    #[error("cannot access `{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The policy file could not be read or parsed.
    #[error("{message}")]
    Policy {
        /// What is wrong, naming the file.
        message: String,
    },
    /// A layer rejected its configuration.
    #[error("bad {layer} configuration: {message}")]
    Config {
        /// Which layer (`permissions`, `sandbox`, `bash`, `hooks`, `limits`).
        layer: &'static str,
        /// What is wrong.
        message: String,
    },
}
