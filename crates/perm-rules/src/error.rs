/// Bad configuration: a malformed rule, a bad policy document or a bad environment variable.
///
/// Checks never return this: they return a [`crate::PermissionResult`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A rule's text is malformed.
    #[error("bad permission rule `{rule}` ({location}): {reason}")]
    Rule {
        /// The offending rule text.
        rule: String,
        /// Where it came from: `file:line`, an environment variable, ...
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The policy document is not valid TOML or does not fit the schema.
    #[error("bad policy file `{path}`: {message}")]
    Policy {
        /// The file.
        path: String,
        /// The parser's message (it names the line).
        message: String,
    },
    /// An `AGENT_PERMISSIONS_*` variable has a bad value.
    #[error("bad environment variable `{var}`: {message}")]
    Env {
        /// The variable.
        var: String,
        /// What is wrong with it.
        message: String,
    },
}
