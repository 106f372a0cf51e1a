//! The narrow interface through which the analyzer asks the filesystem sandbox about paths.

use std::path::Path;

/// How a command uses a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathAccess {
    /// The command reads the file or lists the directory.
    Read,
    /// The command creates, changes or removes it.
    Write,
}

/// What the sandbox says about one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathVerdict {
    /// Inside a root that permits this access.
    Inside,
    /// Exactly one of the roots (a recursive delete of it destroys the project).
    Root,
    /// Not under any root.
    OutsideRoots,
    /// A credential store or secret (`~/.ssh`, `/etc/shadow`, ...): never read or written.
    Sensitive,
    /// Refused for another reason (read-only root, protected file, unresolvable path, ...).
    Denied {
        /// The sandbox's stable reason code.
        code: String,
        /// Its message.
        message: String,
    },
}

/// Judges the paths a command reads and writes. `agent-core` and the CLI implement it over
/// `fs-sandbox`; tests implement it over a temporary directory.
pub trait PathJudge: Send + Sync {
    /// Judges `path` (as written in the command, after quote removal and `~` expansion),
    /// relative to `cwd` when it is relative.
    fn judge(&self, path: &str, access: PathAccess, cwd: &Path) -> PathVerdict;

    /// A value that changes whenever this judge's answers may change (its roots, protected
    /// paths, ...). Verdict caches key on it, so a cached verdict is never reused under a
    /// different policy.
    fn fingerprint(&self) -> u64 {
        0
    }

    /// Why `target`, a destination named on a network client's command line (a URL of any
    /// scheme, `host`, `user@host`, `host:port`, `user@host:path`), is not the public web
    /// (loopback, private, link-local or cloud metadata, internal names, in any spelling), or
    /// `None` when it is public or not a destination. Network use is judged by where it really
    /// goes; the default knows no addresses and says `None`, so the network finding stands.
    fn destination(&self, target: &str) -> Option<String> {
        let _ = target;
        None
    }

    /// What credential store lies below the directory `path` (as written, relative to `cwd`),
    /// for a command that reads every file of a tree, hidden ones included (`grep -r`,
    /// `cp -r`, `rsync -a`): `/`, `/etc` and a home directory hold one, a project does not.
    /// The default knows none; the analyzer still refuses `/` and the home directory itself.
    fn secrets_below(&self, path: &str, cwd: &Path) -> Option<String> {
        let _ = (path, cwd);
        None
    }
}
