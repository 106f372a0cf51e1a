//! Roots, the builder and the physical path check.

use std::collections::{HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, StatxFlags};
use rustix::io::Errno;

use crate::config::SandboxConfig;
use crate::content::{ContentSniffer, KeyBlockSniffer, SniffScope, plainly_source};
use crate::error::SandboxError;
use crate::head::{Head, SNIFF_BYTES, head_of_fd, read_head};
use crate::lazy::OnFirstUse;
use crate::mounts::{Crossing, scratch_crossing};
use crate::protected::{DEFAULT_PROTECTED, Protected};
use crate::sensitive::{Sensitive, home_forms};
use crate::stores::Located;

/// How many symlinks one resolution may follow, as Linux's `MAXSYMLINKS`.
const MAX_SYMLINKS: u32 = 40;
/// `PATH_MAX`, including the terminating NUL.
const PATH_MAX: usize = 4096;
/// `NAME_MAX`.
const NAME_MAX: usize = 255;

/// What a root allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reads and writes.
    ReadWrite,
    /// Reads only; every write below it is refused.
    ReadOnly,
}

/// What the caller means to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read a file (or its metadata).
    Read,
    /// Create or overwrite a file, or create a directory.
    Write,
    /// List a directory.
    List,
    /// Use a directory as a working directory.
    ExecuteDir,
}

impl Op {
    /// The lowercase name used in messages and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::List => "list",
            Op::ExecuteDir => "execute-dir",
        }
    }
}

/// How the race-free opens resolve a path beneath a root's directory fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResolveMode {
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)` when the kernel
    /// has it, else [`ResolveMode::Walk`] (probed once at build time).
    Auto,
    /// Always `openat2`; fails if the kernel lacks it.
    Openat2,
    /// A component-by-component `openat(O_NOFOLLOW)` walk from the root fd.
    Walk,
}

#[derive(Debug)]
struct RootInner {
    path: PathBuf,
    access: Access,
    fd: OwnedFd,
    mount: Option<MountKey>,
}

/// One allowed directory: its canonical path, its access and an open directory fd.
#[derive(Debug, Clone)]
pub struct Root {
    inner: Arc<RootInner>,
}

impl Root {
    /// The canonical (symlink-free, absolute) path of the root.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Whether the root is writable.
    pub fn access(&self) -> Access {
        self.inner.access
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.inner.fd
    }

    pub(crate) fn mount(&self) -> Option<MountKey> {
        self.inner.mount
    }
}

/// A path the sandbox accepted: where it really leads and the root it is in.
#[derive(Debug, Clone)]
pub struct SandboxPath {
    pub(crate) path: PathBuf,
    pub(crate) root: Root,
    pub(crate) exists: bool,
    /// The scratch mount below the root the path crosses into, if any (see `mounts.rs`).
    pub(crate) crossing: Option<Crossing>,
}

impl SandboxPath {
    /// The resolved physical path (absolute, no symlinks, no `.` or `..`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root that contains it; for `/dev/null` (allowed for reading and writing wherever the
    /// roots are) a pseudo-root `/dev` that is not among [`Sandbox::roots`].
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Whether the path existed when it was checked.
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// The path relative to its root (empty for the root itself).
    pub fn relative(&self) -> &Path {
        self.path
            .strip_prefix(self.root.path())
            .unwrap_or(Path::new(""))
    }
}

/// Builds a [`Sandbox`]; see [`Sandbox::builder`].
#[derive(Debug)]
pub struct SandboxBuilder {
    cwd: PathBuf,
    roots: Vec<(PathBuf, Access)>,
    protected: Vec<String>,
    sensitive: Vec<String>,
    home: Option<PathBuf>,
    mode: ResolveMode,
    sniffer: Option<Arc<dyn ContentSniffer>>,
    env: Option<HashMap<String, OsString>>,
}

/// Directories that are never a read-write root: as one, every system file would be "inside
/// the project" (a hook session whose cwd is `/` must not make `/etc/passwd` writable).
/// Directories below them (`/usr/local/src/app`, `/var/www/site`) can be roots.
/// Merged-`/usr` systems link `/bin` to `/usr/bin`: roots are compared canonically, so both
/// spellings are listed.
pub(crate) const SYSTEM_DIRS: &[&str] = &[
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/local",
    "/usr/local/bin",
    "/usr/local/lib",
    "/usr/local/sbin",
    "/usr/sbin",
    "/usr/share",
    "/Users",
    "/var",
];

impl SandboxBuilder {
    /// The home directory `~/` sensitive patterns are anchored at (default: `$HOME`, else the
    /// user's entry in the password database; never the cwd). It must be absolute.
    pub fn home(mut self, path: impl Into<PathBuf>) -> Self {
        self.home = Some(path.into());
        self
    }

    /// EXTENDS the sensitive list ([`DEFAULT_SENSITIVE`](crate::DEFAULT_SENSITIVE)) with one
    /// pattern; the defaults cannot be removed.
    pub fn sensitive(mut self, pattern: &str) -> Self {
        self.sensitive.push(pattern.to_owned());
        self
    }

    /// Adds a root. Relative roots resolve against the builder's cwd.
    pub fn root(mut self, path: impl Into<PathBuf>, access: Access) -> Self {
        self.roots.push((path.into(), access));
        self
    }

    /// EXTENDS the protected list (which starts as [`DEFAULT_PROTECTED`]) with one pattern.
    pub fn protected(mut self, pattern: &str) -> Self {
        self.protected.push(pattern.to_owned());
        self
    }

    /// Empties the protected list, dropping the defaults; later [`protected`](Self::protected)
    /// calls add to the empty list.
    pub fn clear_protected(mut self) -> Self {
        self.protected.clear();
        self
    }

    /// The detectors a file's content is sniffed with before a read is allowed (default:
    /// [`KeyBlockSniffer`], private key blocks only; agent-core wires in the redaction's).
    pub fn content_sniffer(mut self, sniffer: Arc<dyn ContentSniffer>) -> Self {
        self.sniffer = Some(sniffer);
        self
    }

    /// The environment whose variables locate credential stores ([`RELOCATIONS`](crate::RELOCATIONS),
    /// XDG base directories; default: this process's, which a hook inherits from its agent).
    pub fn env<K: Into<String>, V: Into<OsString>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.env = Some(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        );
        self
    }

    /// Chooses how the race-free opens resolve paths (default [`ResolveMode::Auto`]).
    pub fn resolve_mode(mut self, mode: ResolveMode) -> Self {
        self.mode = mode;
        self
    }

    /// Canonicalises the cwd and roots, opens each root's directory fd and compiles the
    /// protected patterns. With no root added, the cwd is the one writable root.
    pub fn build(self) -> Result<Sandbox, SandboxError> {
        let cwd = std::fs::canonicalize(&self.cwd).map_err(|err| SandboxError::BadRoot {
            root: self.cwd.clone(),
            message: format!("the working directory cannot be resolved: {err}"),
        })?;
        let mut wanted = self.roots;
        if wanted.is_empty() {
            wanted.push((cwd.clone(), Access::ReadWrite));
        }
        let mut roots = Vec::with_capacity(wanted.len());
        for (path, access) in wanted {
            let joined = cwd.join(&path);
            let canonical =
                std::fs::canonicalize(&joined).map_err(|err| SandboxError::BadRoot {
                    root: path.clone(),
                    message: format!("it cannot be resolved: {err}"),
                })?;
            let fd = rustix::fs::open(
                &canonical,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|err| SandboxError::BadRoot {
                root: path.clone(),
                message: format!("it is not an openable directory: {err}"),
            })?;
            if access == Access::ReadWrite
                && let Some(dir) = SYSTEM_DIRS.iter().find(|d| canonical == Path::new(d))
            {
                return Err(SandboxError::BadRoot {
                    root: path.clone(),
                    message: format!(
                        "a read-write root at `{dir}` would let the agent change the system; make it read-only or give the project directory"
                    ),
                });
            }
            let mount = fd_mount(&fd);
            roots.push(Root {
                inner: Arc::new(RootInner {
                    path: canonical,
                    access,
                    fd,
                    mount,
                }),
            });
        }
        Protected::validate(&self.protected)?;
        if let Some(home) = self.home.as_ref().filter(|h| !h.is_absolute()) {
            return Err(SandboxError::BadRoot {
                root: home.clone(),
                message: "the home directory must be an absolute path".to_owned(),
            });
        }
        let home = self.home.or_else(std::env::home_dir);
        let homes = home_forms(home.as_deref());
        Sensitive::validate(&self.sensitive, &homes)?;
        let env = self.env;
        let lookup = |var: &str| match &env {
            Some(map) => map.get(var).cloned(),
            None => std::env::var_os(var),
        };
        let located: Vec<Located> = crate::stores::locate(&lookup, &cwd, home.as_deref())
            .into_iter()
            .flat_map(physical_forms)
            .collect();
        // Resolved with the protected list, when the first write is judged: a call that
        // writes nothing (most hook calls) pays no `realpath` per PATH entry.
        let path_var = lookup("PATH");
        let homes_for_protected = homes.clone();
        let git_configs = crate::stores::git_config_files(&lookup, home.as_deref());
        let use_openat2 = match self.mode {
            ResolveMode::Walk => false,
            ResolveMode::Openat2 => true,
            ResolveMode::Auto => probe_openat2(roots.first()),
        };
        Ok(Sandbox {
            cwd,
            roots,
            protected: OnFirstUse::new(
                (self.protected, homes_for_protected, path_var, git_configs),
                |(patterns, homes, path_var, git_configs)| {
                    Protected::compile_for(
                        patterns,
                        homes,
                        &path_dirs(path_var.as_deref()),
                        git_configs,
                    )
                },
            ),
            sensitive: OnFirstUse::new((self.sensitive, homes, located), compile_sensitive),
            use_openat2,
            dev_null: dev_root(),
            sniffer: self.sniffer.unwrap_or_else(|| Arc::new(KeyBlockSniffer)),
        })
    }
}

/// A located store as given and, when it differs, as the kernel resolves it (the judgement
/// compares physical paths).
fn physical_forms(located: Located) -> Vec<Located> {
    let real = std::fs::canonicalize(&located.path).ok().or_else(|| {
        let parent = std::fs::canonicalize(located.path.parent()?).ok()?;
        Some(parent.join(located.path.file_name()?))
    });
    match real {
        Some(real) if real != located.path => vec![
            Located {
                path: real,
                ..located.clone()
            },
            located,
        ],
        _ => vec![located],
    }
}

pub(crate) const DEV_NULL: &str = "/dev/null";

fn dev_root() -> Option<Root> {
    let fd = open_dir_path(Path::new("/dev")).ok()?;
    let mount = fd_mount(&fd);
    Some(Root {
        inner: Arc::new(RootInner {
            path: PathBuf::from("/dev"),
            access: Access::ReadWrite,
            fd,
            mount,
        }),
    })
}

fn probe_openat2(root: Option<&Root>) -> bool {
    let Some(root) = root else { return false };
    // ENOSYS (old kernel) or EPERM (a seccomp filter): walk instead.
    rustix::fs::openat2(
        root.fd(),
        ".",
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH,
    )
    .is_ok()
}

/// What the sensitive table compiles from: the policy's patterns, the home forms, the stores
/// the environment moved.
type SensitiveInput = (Vec<String>, Vec<PathBuf>, Vec<Located>);

/// What the protected list compiles from: the patterns, the home forms, `PATH`, the git
/// configuration files.
type ProtectedInput = (Vec<String>, Vec<PathBuf>, Option<OsString>, Vec<PathBuf>);

/// The `PATH` directories, resolved. Relative entries (`.`, `node_modules/.bin`) are skipped:
/// they would make the whole project a PATH directory.
fn path_dirs(path: Option<&std::ffi::OsStr>) -> Vec<PathBuf> {
    path.map(|path| {
        std::env::split_paths(path)
            .filter(|d| d.is_absolute())
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .filter(|d| d != Path::new("/"))
            .collect()
    })
    .unwrap_or_default()
}

/// The sensitive table for `input`: the one compiled last in this process when it was
/// compiled from the same input (compiling is a pure function of it), else a new one. A
/// process builds its sandboxes from the same policy and environment again and again (a
/// resident hook guard's judges, forked after judging a warm-up call; a runtime's subagents),
/// and the table is most of what a sandbox's first check costs.
fn compile_sensitive(input: &SensitiveInput) -> Result<Arc<Sensitive>, SandboxError> {
    static LAST: std::sync::Mutex<Option<(SensitiveInput, Arc<Sensitive>)>> =
        std::sync::Mutex::new(None);
    if let Ok(last) = LAST.lock()
        && let Some((seen, table)) = last.as_ref()
        && seen == input
    {
        return Ok(Arc::clone(table));
    }
    let (extra, homes, located) = input;
    let table = Arc::new(Sensitive::compile_located(extra, homes, located.clone())?);
    if let Ok(mut last) = LAST.lock() {
        *last = Some((input.clone(), Arc::clone(&table)));
    }
    Ok(table)
}

/// A set of roots with a protected list; checks paths and opens files beneath the roots.
///
/// `Send + Sync`; share it in an `Arc`.
#[derive(Debug)]
pub struct Sandbox {
    cwd: PathBuf,
    roots: Vec<Root>,
    /// Compiled when the first write is judged (see `lazy.rs`).
    protected: OnFirstUse<ProtectedInput, Protected>,
    /// Compiled when the first path is judged.
    sensitive: OnFirstUse<SensitiveInput, Arc<Sensitive>>,
    pub(crate) use_openat2: bool,
    /// `/dev`, to open `/dev/null` beneath; not a root.
    dev_null: Option<Root>,
    /// Judges a file's content before a read (see `content.rs`).
    sniffer: Arc<dyn ContentSniffer>,
}

/// The outcome of resolving a path physically.
struct Resolved {
    path: PathBuf,
    exists: bool,
    /// Type and link count of the final component when it exists (there is no final symlink
    /// left after resolution).
    meta: Option<(FileType, u64)>,
    /// The mount the object is on, or for a missing path the mount of its deepest existing
    /// ancestor; `None` when the kernel could not say (the fast path leaves it to
    /// `RESOLVE_NO_XDEV`).
    mount: Option<MountKey>,
    /// The names the path had on the way: after each symlink met, the symlink's path joined with
    /// what remained to resolve (lexical).
    views: Vec<PathBuf>,
}

impl Sandbox {
    /// Starts a builder; relative paths and roots resolve against `cwd`.
    pub fn builder(cwd: impl Into<PathBuf>) -> SandboxBuilder {
        SandboxBuilder {
            cwd: cwd.into(),
            roots: Vec::new(),
            protected: DEFAULT_PROTECTED.iter().map(|s| (*s).to_owned()).collect(),
            sensitive: Vec::new(),
            home: None,
            mode: ResolveMode::Auto,
            sniffer: None,
            env: None,
        }
    }

    /// Builds a sandbox from the policy's `[sandbox]` table.
    pub fn from_config(config: &SandboxConfig, cwd: &Path) -> Result<Sandbox, SandboxError> {
        config.builder(cwd).build()
    }

    /// The canonical working directory relative paths resolve against.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The roots, canonical, in the order they were added.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// Whether the race-free opens use `openat2` (else the `O_NOFOLLOW` walk).
    pub fn uses_openat2(&self) -> bool {
        self.use_openat2
    }

    /// What `path` holds when it is a credential store or key (see
    /// [`DEFAULT_SENSITIVE`](crate::DEFAULT_SENSITIVE)), else `None`.
    ///
    /// The path is matched as given (joined to the cwd when relative, not resolved): pass a
    /// resolved path, e.g. [`SandboxPath::path`]; [`check`](Sandbox::check) matches both the given
    /// and the physical path. The filesystem is touched only after a pattern matched (a
    /// directory never matches a file pattern; a `.pem` is judged by its content).
    pub fn sensitive(&self, path: &Path) -> Option<&'static str> {
        self.sensitive_match(&self.absolute(path))
    }

    /// What sensitive location lies at or below the directory `dir`, for a reader that
    /// descends a whole tree (`grep -r`, `tar c`, `cp -r`): `/`, `/etc` and the home directory
    /// hold credential stores, a project directory does not. Only the table's anchored entries
    /// (`~/...`, `/...`) count, since unanchored names (`.env`) may be in any project. Like
    /// [`sensitive`](Sandbox::sensitive) the path is matched as given: pass a resolved one.
    /// `hidden` says whether the reader descends into dot-names: ripgrep's defaults skip them,
    /// so `~` holds no reachable `~/.ssh` for it, while `grep -r` reads it.
    pub fn sensitive_below(&self, dir: &Path, hidden: bool) -> Option<&'static str> {
        match self.sensitive.get() {
            Ok(table) => table.below(&self.absolute(dir), hidden),
            Err(_) => Some(crate::sensitive::UNCOMPILED),
        }
    }

    /// The sensitive table's verdict on an absolute path; every path when it failed to compile.
    fn sensitive_match(&self, absolute: &Path) -> Option<&'static str> {
        match self.sensitive.get() {
            Ok(table) => table.matching(absolute),
            Err(_) => Some(crate::sensitive::UNCOMPILED),
        }
    }

    /// Every name `path` has on its way to the file, without judging any: where it physically
    /// leads first (symlinks followed, `..` after what precedes it, a missing tail appended),
    /// then each name met on the way (a symlink's path joined with what remained). For callers
    /// that match their own path rules (perm-rules' globs) against every name, so a symlink
    /// cannot carry a path past a rule that names its target.
    pub fn names(&self, path: impl AsRef<Path>) -> Result<Vec<PathBuf>, SandboxError> {
        let path = path.as_ref();
        validate(path)?;
        let absolute = self.absolute(path);
        let resolved = match self.fast_resolve(&absolute) {
            Some(resolved) => resolved,
            None => resolve(&absolute, path, self.containing_root(&absolute))?,
        };
        let mut names = vec![resolved.path];
        for view in resolved.views {
            if !names.contains(&view) {
                names.push(view);
            }
        }
        Ok(names)
    }

    /// Decides whether `op` on `path` is allowed, resolving the path physically.
    ///
    /// Returns where the path really leads, or why it is refused. A sensitive path (as given or
    /// physically) is refused for every op, inside the roots or not.
    pub fn check(&self, path: impl AsRef<Path>, op: Op) -> Result<SandboxPath, SandboxError> {
        let path = path.as_ref();
        validate(path)?;
        // `.` and a trailing `/` dropped, `..` kept: the path as given, for the sensitive match.
        let absolute = self.absolute(path);
        if let Some(what) = self.sensitive_match(&absolute) {
            return Err(SandboxError::Sensitive {
                path: absolute,
                what: what.to_owned(),
            });
        }
        let resolved = self.fast_resolve(&absolute).map_or_else(
            || {
                // A root's path is canonical, so resolution may start there instead of `/`.
                let start = self.containing_root(&absolute);
                resolve(&absolute, path, start)
            },
            Ok,
        )?;
        if resolved.path != absolute
            && let Some(what) = self.sensitive_match(&resolved.path)
        {
            return Err(SandboxError::Sensitive {
                path: resolved.path,
                what: what.to_owned(),
            });
        }
        // A hard link of a store is the store, whatever it is called.
        if let Some((FileType::RegularFile, nlink)) = resolved.meta
            && nlink > 1
        {
            let found = match self.sensitive.get() {
                Ok(table) => table.identity(&resolved.path),
                Err(_) => Some(crate::sensitive::UNCOMPILED),
            };
            if let Some(what) = found {
                return Err(SandboxError::Sensitive {
                    path: resolved.path,
                    what: format!("{what} (a hard link of it)"),
                });
            }
        }
        let regular_read =
            op == Op::Read && matches!(resolved.meta, Some((FileType::RegularFile, _)));
        let Some(root) = self.containing_root(&resolved.path) else {
            // Outside every root a read is a person's call (ask), but never one that hands
            // over a secret: a key under an ordinary name is refused as what it is.
            if regular_read {
                self.sniff(&resolved.path, None)?;
            }
            // `/dev/null` reads nothing and swallows writes: allowed for reading and writing
            // wherever the roots are, opened beneath `/dev` (never listed as a root, so the
            // confinement compiled from `roots()` does not grow).
            if let Some(dev) = &self.dev_null
                && resolved.path == Path::new(DEV_NULL)
                && matches!(op, Op::Read | Op::Write)
                && matches!(resolved.meta, Some((FileType::CharacterDevice, _)))
            {
                return Ok(SandboxPath {
                    path: resolved.path,
                    root: dev.clone(),
                    exists: true,
                    crossing: None,
                });
            }
            return Err(SandboxError::OutsideRoots {
                path: path.to_owned(),
                resolved: resolved.path,
                roots: self.roots_display(),
            });
        };
        // Another mount below the root is a window onto somewhere else unless it is a fresh
        // scratch filesystem (a tmpfs `target/`); the opens re-check it by fd.
        let crossing = match (resolved.mount, root.mount()) {
            (Some(mount), Some(root_mount)) if mount != root_mount => {
                match scratch_crossing(mount, root_mount, &resolved.path, root.path()) {
                    Ok(crossing) => Some(crossing),
                    Err(why) => {
                        return Err(SandboxError::OtherFilesystem {
                            resolved: resolved.path,
                            root: root.path().to_owned(),
                            why,
                        });
                    }
                }
            }
            _ => None,
        };
        if let Some((file_type, _)) = resolved.meta
            && !matches!(file_type, FileType::RegularFile | FileType::Directory)
            && resolved.path != Path::new(DEV_NULL)
        {
            return Err(SandboxError::SpecialFile {
                resolved: resolved.path,
                kind: file_type_name(file_type),
            });
        }
        // A read-only root is outside the project (dotfiles, toolchains): everything in it is
        // sniffed; in the project, what is not plainly source.
        if regular_read && (root.access() == Access::ReadOnly || !plainly_source(&resolved.path)) {
            self.sniff(&resolved.path, Some((root, crossing.as_ref())))?;
        }
        if op == Op::Write {
            if root.access() == Access::ReadOnly {
                return Err(SandboxError::ReadOnlyRoot {
                    resolved: resolved.path,
                    root: root.path().to_owned(),
                });
            }
            let mut views = resolved.views.clone();
            views.push(absolute);
            let verdict = match self.protected.get() {
                Ok(protected) => protected.judge(&resolved.path, &views, root.path()),
                Err(err) => Some(format!(
                    "every file (the protected list failed to compile: {err})"
                )),
            };
            if let Some(pattern) = verdict {
                return Err(SandboxError::Protected {
                    resolved: resolved.path.clone(),
                    root: root.path().to_owned(),
                    pattern,
                });
            }
            if let Some((FileType::RegularFile, nlink)) = resolved.meta
                && nlink > 1
            {
                return Err(SandboxError::HardLink {
                    resolved: resolved.path,
                    nlink,
                });
            }
        }
        Ok(SandboxPath {
            path: resolved.path,
            root: root.clone(),
            exists: resolved.exists,
            crossing,
        })
    }

    /// Refuses `physical` (a regular file, resolved) when its head holds a secret. A file the
    /// guard may not read is no leak (the reader cannot read it either); any other failure to
    /// read it is a refusal (fail closed).
    /// Inside a root the file is opened beneath the root's fd as the tools open it (no symlink,
    /// no mount crossed but the judged scratch mount, no PATH_MAX limit).
    fn sniff(
        &self,
        physical: &Path,
        root: Option<(&Root, Option<&Crossing>)>,
    ) -> Result<(), SandboxError> {
        let scope = match root.map(|(root, _)| root.access()) {
            Some(Access::ReadWrite) => SniffScope::Project,
            Some(Access::ReadOnly) | None => SniffScope::Outside,
        };
        let head = match root {
            Some((root, crossing)) => {
                let checked = SandboxPath {
                    path: physical.to_owned(),
                    root: root.clone(),
                    exists: true,
                    crossing: crossing.cloned(),
                };
                let fd = self.open_beneath(
                    &checked,
                    OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK,
                    Mode::empty(),
                );
                match fd {
                    Ok(fd) => head_of_fd(&fd, SNIFF_BYTES),
                    Err(SandboxError::Io { source, .. }) => Err(source),
                    Err(err) => return Err(err),
                }
            }
            None => read_head(physical, SNIFF_BYTES),
        };
        match head {
            Ok(Head::Bytes(head)) => match self.sniffer.secret_in(&head, scope) {
                Some(detector) => Err(SandboxError::Sensitive {
                    path: physical.to_owned(),
                    what: format!("a file holding a secret (the `{detector}` detector found one)"),
                }),
                None => Ok(()),
            },
            Ok(Head::Missing) => Ok(()),
            // Swapped for something else since it was resolved.
            Ok(Head::NotRegular(kind)) => Err(SandboxError::SpecialFile {
                resolved: physical.to_owned(),
                kind: file_type_name(kind),
            }),
            Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
            Err(err) => Err(SandboxError::io("read the head of", physical, err)),
        }
    }

    /// `path` joined to the cwd with `.`, `//` and a trailing `/` dropped (`..` kept).
    fn absolute(&self, path: &Path) -> PathBuf {
        let bytes = path.as_os_str().as_bytes();
        let clean = !bytes.ends_with(b"/")
            && !bytes.starts_with(b"./")
            && !bytes.ends_with(b"/.")
            && bytes != b"."
            && !bytes.windows(2).any(|w| w == b"//")
            && !bytes.windows(3).any(|w| w == b"/./");
        if clean {
            self.cwd.join(path)
        } else {
            self.cwd.join(path).components().collect()
        }
    }

    /// The most specific root containing `resolved`, whole components compared.
    fn containing_root(&self, resolved: &Path) -> Option<&Root> {
        self.roots
            .iter()
            .filter(|root| resolved.starts_with(root.path()))
            .max_by_key(|root| root.path().as_os_str().len())
    }

    pub(crate) fn roots_display(&self) -> String {
        self.roots
            .iter()
            .map(|root| format!("`{}`", root.path().display()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One `openat2(RESOLVE_NO_SYMLINKS)` beneath the root the path lexically starts with: when
    /// it succeeds, the kernel has proved the path holds no symlink and no `..` escape, so the
    /// lexical path is the physical one. Anything else goes the slow, component-wise way.
    /// `absolute` comes from [`Sandbox::absolute`]: no `.`, `//` or trailing `/` left.
    fn fast_resolve(&self, absolute: &Path) -> Option<Resolved> {
        if !self.use_openat2 {
            return None;
        }
        if absolute
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return None;
        }
        let root = self.containing_root(absolute)?;
        let relative = absolute.strip_prefix(root.path()).ok()?;
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        // NO_XDEV: a mount below the root (even a bind mount of the same filesystem) makes the
        // kernel refuse, and the slow path then says which filesystem it is.
        let flags = ResolveFlags::BENEATH
            | ResolveFlags::NO_SYMLINKS
            | ResolveFlags::NO_MAGICLINKS
            | ResolveFlags::NO_XDEV;
        let fd = match rustix::fs::openat2(
            root.fd(),
            relative,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            flags,
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                // A symlink-free existing parent and a missing last name (a dangling symlink
                // would have been ELOOP): the lexical path is the physical one.
                let parent = relative
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                rustix::fs::openat2(
                    root.fd(),
                    parent,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                    flags,
                )
                .ok()?;
                return Some(Resolved {
                    path: absolute.to_owned(),
                    exists: false,
                    meta: None,
                    mount: None,
                    views: Vec::new(),
                });
            }
            Err(_) => return None,
        };
        let stat = rustix::fs::fstat(&fd).ok()?;
        Some(Resolved {
            path: absolute.to_owned(),
            exists: true,
            meta: Some((FileType::from_raw_mode(stat.st_mode), stat.st_nlink)),
            mount: None,
            views: Vec::new(),
        })
    }
}

pub(crate) fn file_type_name(file_type: FileType) -> &'static str {
    match file_type {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "a file of unknown type",
    }
}

fn lossy(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text.len() > 80 {
        let cut: String = text.chars().take(60).collect();
        format!("{cut}...")
    } else {
        text.into_owned()
    }
}

/// The typed refusals that need no filesystem access.
fn validate(path: &Path) -> Result<(), SandboxError> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() {
        return Err(SandboxError::Empty);
    }
    if bytes.contains(&0) {
        return Err(SandboxError::Nul {
            path: lossy(path).replace('\0', "\\0"),
        });
    }
    if bytes.len() >= PATH_MAX {
        return Err(SandboxError::TooLong {
            path: lossy(path),
            what: format!("{} bytes, the limit is {}", bytes.len(), PATH_MAX - 1),
        });
    }
    if let Some(name) = bytes
        .split(|b| *b == b'/')
        .find(|name| name.len() > NAME_MAX)
    {
        return Err(SandboxError::TooLong {
            path: lossy(path),
            what: format!("a name of {} bytes, the limit is {NAME_MAX}", name.len()),
        });
    }
    if bytes.first() == Some(&b'~') {
        return Err(SandboxError::Tilde {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// `/proc/<anything>/<anything>...` symlinks are procfs magic links (`root`, `cwd`, `exe`,
/// `fd/N`, `map_files/*`, `ns/*`); `/proc/self` and `/proc/mounts` are plain ones.
fn is_magic_link(candidate: &Path) -> bool {
    let mut components = candidate.components();
    components.next() == Some(Component::RootDir)
        && components.next() == Some(Component::Normal(OsStr::new("proc")))
        && components.count() >= 2
}

/// Which mount an object is on: the mount id when the kernel reports it (it tells bind mounts
/// of one filesystem apart), and the device.
pub(crate) type MountKey = (u64, u32, u32);

pub(crate) fn mount_key(stx: &rustix::fs::Statx) -> MountKey {
    let mnt_id = if StatxFlags::from_bits_retain(stx.stx_mask).contains(StatxFlags::MNT_ID) {
        stx.stx_mnt_id
    } else {
        0
    };
    (mnt_id, stx.stx_dev_major, stx.stx_dev_minor)
}

const STATX_MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::MODE)
    .union(StatxFlags::NLINK)
    .union(StatxFlags::MNT_ID);

/// The mount key of an open directory.
pub(crate) fn fd_mount(fd: &OwnedFd) -> Option<MountKey> {
    rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, STATX_MASK)
        .ok()
        .map(|stx| mount_key(&stx))
}

fn open_dir_path(path: &Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Resolves `absolute` as the kernel would, component by component, following symlinks.
///
/// The walk holds a directory fd per resolved component and looks each name up relative to its
/// parent's fd, so a path longer than `PATH_MAX` once joined to the cwd still resolves, and each
/// object's mount is known (`statx`).
fn resolve(absolute: &Path, given: &Path, start: Option<&Root>) -> Result<Resolved, SandboxError> {
    let io = |op: &'static str| move |err: std::io::Error| SandboxError::io(op, given, err);
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let (mut resolved, rest, base) =
        match start.and_then(|root| Some((root, absolute.strip_prefix(root.path()).ok()?))) {
            Some((root, rest)) => (
                root.path().to_owned(),
                rest,
                rustix::io::fcntl_dupfd_cloexec(root.fd(), 0)
                    .map_err(|err| io("resolve")(err.into()))?,
            ),
            None => (
                PathBuf::from("/"),
                absolute,
                open_dir_path(Path::new("/")).map_err(io("resolve"))?,
            ),
        };
    push_front_components(&mut pending, rest);
    let mut base_mount = fd_mount(&base);
    let mut base = base;
    // One entry per component of `resolved` below `base`: its fd and mount.
    let mut stack: Vec<(OwnedFd, Option<MountKey>)> = Vec::new();
    let mut hops = 0u32;
    let mut views = Vec::new();
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            if stack.pop().is_none() {
                resolved.pop();
                base = open_dir_path(&resolved).map_err(io("resolve"))?;
                base_mount = fd_mount(&base);
            } else {
                resolved.pop();
            }
            continue;
        }
        let dir = stack.last().map_or(&base, |(fd, _)| fd);
        let stx =
            match rustix::fs::statx(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW, STATX_MASK) {
                Ok(stx) => stx,
                Err(Errno::NOENT) => {
                    // Judged by the deepest existing ancestor (`resolved`, physical) plus the rest.
                    // A `..` after a missing name cannot be resolved physically (`mkdir -p` then
                    // `open` would go through whatever is created there), so it is refused.
                    pending.push_front(name);
                    if pending.iter().any(|n| n == "..") {
                        return Err(SandboxError::Unresolvable {
                            path: given.to_owned(),
                            missing: resolved.join(pending.front().map_or(OsStr::new(""), |n| n)),
                        });
                    }
                    let mount = stack.last().map_or(base_mount, |(_, m)| *m);
                    resolved.extend(pending);
                    return Ok(Resolved {
                        path: resolved,
                        exists: false,
                        meta: None,
                        mount,
                        views,
                    });
                }
                Err(Errno::LOOP) => {
                    return Err(SandboxError::SymlinkLoop {
                        path: given.to_owned(),
                    });
                }
                Err(err) => return Err(io("resolve")(err.into())),
            };
        let file_type = FileType::from_raw_mode(u32::from(stx.stx_mode));
        let candidate = resolved.join(&name);
        if file_type == FileType::Symlink {
            if is_magic_link(&candidate) {
                return Err(SandboxError::MagicLink {
                    path: given.to_owned(),
                    link: candidate,
                });
            }
            hops += 1;
            if hops > MAX_SYMLINKS {
                return Err(SandboxError::SymlinkLoop {
                    path: given.to_owned(),
                });
            }
            let target = rustix::fs::readlinkat(dir, name.as_os_str(), Vec::new())
                .map_err(|err| SandboxError::io("read the symlink", &candidate, err))?;
            let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
            if target.as_os_str().is_empty() {
                return Err(SandboxError::io(
                    "follow the symlink",
                    &candidate,
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                ));
            }
            let mut view = candidate;
            view.extend(pending.iter());
            views.push(view);
            if target.is_absolute() {
                resolved = PathBuf::from("/");
                stack.clear();
                base = open_dir_path(&resolved).map_err(io("resolve"))?;
                base_mount = fd_mount(&base);
            }
            push_front_components(&mut pending, &target);
            continue;
        }
        if file_type != FileType::Directory && !pending.is_empty() {
            return Err(SandboxError::io(
                "resolve",
                given,
                std::io::Error::from_raw_os_error(Errno::NOTDIR.raw_os_error()),
            ));
        }
        let mount = Some(mount_key(&stx));
        if pending.is_empty() {
            resolved = candidate;
            return Ok(Resolved {
                path: resolved,
                exists: true,
                meta: Some((file_type, u64::from(stx.stx_nlink))),
                mount,
                views,
            });
        }
        let fd = rustix::fs::openat(
            dir,
            name.as_os_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| io("resolve")(err.into()))?;
        stack.push((fd, mount));
        resolved = candidate;
    }
    // Only reached when the path ends at the start or after a `..`: describe `resolved`.
    let dir = stack.last().map_or(&base, |(fd, _)| fd);
    let stx = rustix::fs::statx(dir, "", AtFlags::EMPTY_PATH, STATX_MASK)
        .map_err(|err| io("resolve")(err.into()))?;
    Ok(Resolved {
        path: resolved,
        exists: true,
        meta: Some((
            FileType::from_raw_mode(u32::from(stx.stx_mode)),
            u64::from(stx.stx_nlink),
        )),
        mount: Some(mount_key(&stx)),
        views,
    })
}

/// Queues `path`'s names (and `..`) in front of what is pending; `.` and `/` vanish.
fn push_front_components(pending: &mut VecDeque<OsString>, path: &Path) {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    for name in names.into_iter().rev() {
        pending.push_front(name);
    }
}
