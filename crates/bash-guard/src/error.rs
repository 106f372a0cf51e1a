//! The crate's error type.

/// A command that the shell parser rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse `{command}`: {message}")]
pub struct ParseError {
    /// The command (or nested command string) that failed to parse.
    pub command: String,
    /// The parser's message.
    pub message: String,
}
