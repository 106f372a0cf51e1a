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
    /// The allow-once grant key could not be read or created.
    #[error("allow-once grant key `{path}`: {source}")]
    GrantKey {
        /// The key file.
        path: String,
        /// What the filesystem reported.
        #[source]
        source: std::io::Error,
    },
    /// The audit chain's key could not be read, created, or is not private to this user.
    #[error("audit key `{path}`: {message}")]
    AuditKey {
        /// The key file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
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
    /// The audit database server could not be reached (PostgreSQL down, wrong socket or host).
    #[error("cannot reach audit database `{target}`: {source} (is the server running?)")]
    Unreachable {
        /// The database, password removed.
        target: String,
        /// What sqlx reported.
        #[source]
        source: sqlx::Error,
    },
    /// The audit database failed its integrity check when it was opened.
    #[error(
        "audit database `{target}` is corrupt ({detail}); move it aside and a new one is created"
    )]
    Corrupt {
        /// The database.
        target: String,
        /// What the check reported.
        detail: String,
    },
    /// The database holds schema objects the guard did not make (a trigger, a view, a
    /// changed table): something rewrote it, so nothing in it is trusted.
    #[error(
        "audit database `{target}` is not the guard's own: {detail}; the guard refuses to use it \
         (move it aside and a new one is created, after finding out who changed it)"
    )]
    ForeignSchema {
        /// The database, password removed.
        target: String,
        /// What was found.
        detail: String,
    },
    /// Rows meant for the audit log are not in it: `lost` were acknowledged by
    /// [`crate::AuditLog::record`] but could not be written, `refused` were never queued.
    #[error(
        "audit log `{target}` is incomplete: {lost} acknowledged row(s) not written, \
         {refused} refused (last error: {cause})"
    )]
    Incomplete {
        /// The database, password removed.
        target: String,
        /// Acknowledged rows whose write failed.
        lost: u64,
        /// Rows `record` refused (queue full past the timeout, or after shutdown).
        refused: u64,
        /// The last write error, or why rows were refused.
        cause: String,
    },
}
