//! The crate's one error type.

use std::path::PathBuf;

/// Why the sandbox refused a path, or could not be built.
///
/// Every variant has a stable machine-readable [`code`](SandboxError::code) and a message a
/// person can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The path was the empty string.
    #[error("the path is empty")]
    Empty,
    /// The path contained a NUL byte, which no file name can hold.
    #[error("the path `{path}` contains a NUL byte")]
    Nul {
        /// The path, lossily printed.
        path: String,
    },
    /// The path or one of its names exceeds the kernel's limits.
    #[error("the path `{path}` is too long: {what}")]
    TooLong {
        /// The path, lossily printed (possibly shortened).
        path: String,
        /// Which limit was exceeded.
        what: String,
    },
    /// The path starts with `~`, which only a shell expands.
    #[error(
        "the path `{path}` starts with `~`; the sandbox does not expand home directories, give the full path"
    )]
    Tilde {
        /// The path as given.
        path: PathBuf,
    },
    /// The resolved path is inside no root.
    #[error("`{resolved}` is outside the allowed roots {roots}", resolved = .resolved.display())]
    OutsideRoots {
        /// The path as given.
        path: PathBuf,
        /// Where it really leads.
        resolved: PathBuf,
        /// The roots, printed.
        roots: String,
    },
    /// A write was asked inside a read-only root.
    #[error("`{resolved}` is inside the read-only root `{root}`; writes are refused there", resolved = .resolved.display(), root = .root.display())]
    ReadOnlyRoot {
        /// Where the path really leads.
        resolved: PathBuf,
        /// The read-only root.
        root: PathBuf,
    },
    /// A write to a protected path was asked.
    #[error("`{resolved}` is protected (matches `{pattern}` in root `{root}`); writes to it are refused", resolved = .resolved.display(), root = .root.display())]
    Protected {
        /// Where the path really leads.
        resolved: PathBuf,
        /// The root it is in.
        root: PathBuf,
        /// The protected pattern it matched.
        pattern: String,
    },
    /// The path (as given or where it physically leads) is a credential store or a key.
    #[error("`{path}` is {what}; reading, writing or listing it is refused (secrets are not handed to the agent)", path = .path.display())]
    Sensitive {
        /// The path that matched: the physical one, or the one given when only that matched.
        path: PathBuf,
        /// What it holds (`an SSH key or configuration`).
        what: String,
    },
    /// The path is not a regular file or a directory (a FIFO would block a reader forever; a
    /// socket or a device is not a file).
    #[error("`{resolved}` is {kind}; only regular files and directories are opened", resolved = .resolved.display())]
    SpecialFile {
        /// Where the path really leads.
        resolved: PathBuf,
        /// What it is (`a FIFO (named pipe)`).
        kind: &'static str,
    },
    /// The path leads onto another filesystem (a mount) below a root that is not itself a root,
    /// and that mount is not a fresh scratch filesystem (see
    /// [`SCRATCH_FILESYSTEMS`](crate::SCRATCH_FILESYSTEMS)).
    #[error("`{resolved}` is on another filesystem mounted below the root `{root}`: {why}; only a fresh tmpfs or ramfs mounted there and nowhere else is crossed, so add the mount as a root to allow it", resolved = .resolved.display(), root = .root.display())]
    OtherFilesystem {
        /// Where the path really leads.
        resolved: PathBuf,
        /// The root it is below.
        root: PathBuf,
        /// What the mount is, and why that makes it a window onto somewhere else.
        why: String,
    },
    /// A `..` follows a name that does not exist, so the path cannot be resolved physically.
    #[error("`{path}` has a `..` after `{missing}`, which does not exist; what `..` means there depends on what gets created, so give the path without it", path = .path.display(), missing = .missing.display())]
    Unresolvable {
        /// The path as given.
        path: PathBuf,
        /// The first missing name, resolved up to it.
        missing: PathBuf,
    },
    /// A write to a regular file with more than one hard link was asked.
    #[error("`{resolved}` has {nlink} hard links; a write through one of them would change a file that may live outside the roots, so it is refused", resolved = .resolved.display())]
    HardLink {
        /// The file.
        resolved: PathBuf,
        /// Its link count.
        nlink: u64,
    },
    /// Resolving the path met a symlink loop or more than 40 symlinks.
    #[error("`{path}` goes through a symlink loop or more than 40 symlinks", path = .path.display())]
    SymlinkLoop {
        /// The path as given.
        path: PathBuf,
    },
    /// Resolving the path met a procfs magic link such as `/proc/self/root`.
    #[error("`{path}` goes through the magic link `{link}`, which can lead anywhere; refused", path = .path.display(), link = .link.display())]
    MagicLink {
        /// The path as given.
        path: PathBuf,
        /// The magic link met.
        link: PathBuf,
    },
    /// The path changed between the check and the open (for example a symlink was swapped in).
    #[error("`{resolved}` changed while it was being opened (a symlink or rename appeared); refused, try again", resolved = .resolved.display())]
    Changed {
        /// The checked physical path.
        resolved: PathBuf,
    },
    /// A glob pattern tried to leave its base or the roots.
    #[error(
        "the glob pattern `{pattern}` climbs out of its base with `..`; give a pattern inside the roots"
    )]
    GlobEscape {
        /// The pattern.
        pattern: String,
    },
    /// A glob or protected pattern did not parse.
    #[error("bad pattern `{pattern}`: {message}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// What the glob parser said.
        message: String,
    },
    /// A root could not be used.
    #[error("bad sandbox root `{root}`: {message}", root = .root.display())]
    BadRoot {
        /// The root as given.
        root: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// An I/O error while resolving or opening.
    #[error("cannot {op} `{path}`: {source}", path = .path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl SandboxError {
    /// A stable machine-readable code for this refusal.
    pub fn code(&self) -> &'static str {
        match self {
            SandboxError::Empty => "empty",
            SandboxError::Nul { .. } => "nul",
            SandboxError::TooLong { .. } => "too_long",
            SandboxError::Tilde { .. } => "tilde",
            SandboxError::OutsideRoots { .. } => "outside_roots",
            SandboxError::ReadOnlyRoot { .. } => "read_only_root",
            SandboxError::Protected { .. } => "protected_path",
            SandboxError::HardLink { .. } => "hard_link",
            SandboxError::Sensitive { .. } => "sensitive_path",
            SandboxError::SpecialFile { .. } => "special_file",
            SandboxError::OtherFilesystem { .. } => "other_filesystem",
            SandboxError::Unresolvable { .. } => "unresolvable",
            SandboxError::SymlinkLoop { .. } => "symlink_loop",
            SandboxError::MagicLink { .. } => "magic_link",
            SandboxError::Changed { .. } => "changed",
            SandboxError::GlobEscape { .. } => "glob_escape",
            SandboxError::BadPattern { .. } => "bad_pattern",
            SandboxError::BadRoot { .. } => "bad_root",
            SandboxError::Io { .. } => "io",
        }
    }

    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
        source: impl Into<std::io::Error>,
    ) -> Self {
        SandboxError::Io {
            op,
            path: path.into(),
            source: source.into(),
        }
    }
}
