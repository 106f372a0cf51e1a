/// Bad `[limits]` configuration. Checks never return this: they return an [`crate::Intervention`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// A field has a value the limits cannot work with.
    #[error("invalid `limits.{field}`: {message}")]
    InvalidConfig {
        /// The offending key of the `[limits]` table.
        field: &'static str,
        /// What is wrong and what to use instead.
        message: String,
    },
}
