//! The crate's one error type: bad configuration and I/O. Hook verdicts are values, not errors.

/// Bad configuration, or the audit database could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The audit database could not be opened, read or written.
    #[error("audit database `{path}`: {source}")]
    Database {
        /// The database file.
        path: String,
        /// What sqlx reported.
        #[source]
        source: sqlx::Error,
    },
    /// The audit database schema could not be migrated.
    #[error("cannot migrate audit database `{path}`: {source}")]
    Migrate {
        /// The database file.
        path: String,
        /// What the migrator reported.
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    /// The audit database file does not exist (readers never create it).
    #[error("audit database `{0}` does not exist")]
    MissingDatabase(String),
    /// A command hook's matcher is not a valid regex or glob.
    #[error("bad hook matcher `{matcher}`: {source}")]
    Matcher {
        /// The matcher text.
        matcher: String,
        /// What the regex compiler reported.
        #[source]
        source: regex::Error,
    },
    /// A value in the `[hooks]` section is out of range.
    #[error("bad [hooks] setting `{key}`: {message}")]
    Config {
        /// The key.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// The audit writer has shut down.
    #[error("the audit log writer has shut down")]
    Closed,
}
