//! Roots, the builder and the physical path check.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::config::SandboxConfig;
use crate::error::SandboxError;
use crate::protected::{DEFAULT_PROTECTED, Protected};
use crate::sensitive::{Sensitive, home_forms};

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
}

/// A path the sandbox accepted: where it really leads and the root it is in.
#[derive(Debug, Clone)]
pub struct SandboxPath {
    pub(crate) path: PathBuf,
    pub(crate) root: Root,
    pub(crate) exists: bool,
}

impl SandboxPath {
    /// The resolved physical path (absolute, no symlinks, no `.` or `..`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root that contains it.
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
}

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
            roots.push(Root {
                inner: Arc::new(RootInner {
                    path: canonical,
                    access,
                    fd,
                }),
            });
        }
        let protected = Protected::compile(&self.protected)?;
        if let Some(home) = self.home.as_ref().filter(|h| !h.is_absolute()) {
            return Err(SandboxError::BadRoot {
                root: home.clone(),
                message: "the home directory must be an absolute path".to_owned(),
            });
        }
        let home = self.home.or_else(std::env::home_dir);
        let sensitive = Sensitive::compile(&self.sensitive, &home_forms(home.as_deref()))?;
        let use_openat2 = match self.mode {
            ResolveMode::Walk => false,
            ResolveMode::Openat2 => true,
            ResolveMode::Auto => probe_openat2(roots.first()),
        };
        Ok(Sandbox {
            cwd,
            roots,
            protected,
            sensitive,
            use_openat2,
        })
    }
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

/// A set of roots with a protected list; checks paths and opens files beneath the roots.
///
/// `Send + Sync`; share it in an `Arc`.
#[derive(Debug)]
pub struct Sandbox {
    cwd: PathBuf,
    roots: Vec<Root>,
    protected: Protected,
    sensitive: Sensitive,
    pub(crate) use_openat2: bool,
}

/// The outcome of resolving a path physically.
struct Resolved {
    path: PathBuf,
    exists: bool,
    /// Metadata of the final component when it exists (not following a final symlink: there is
    /// none left after resolution).
    nlink: Option<(bool, u64)>,
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
        if path.is_absolute() {
            self.sensitive.matching(path)
        } else {
            self.sensitive.matching(&self.cwd.join(path))
        }
    }

    /// Decides whether `op` on `path` is allowed, resolving the path physically.
    ///
    /// Returns where the path really leads, or why it is refused. A sensitive path (as given or
    /// physically) is refused for every op, inside the roots or not.
    pub fn check(&self, path: impl AsRef<Path>, op: Op) -> Result<SandboxPath, SandboxError> {
        let path = path.as_ref();
        validate(path)?;
        // `.` and a trailing `/` dropped, `..` kept: the path as given, for the sensitive match.
        let absolute: PathBuf = self.cwd.join(path).components().collect();
        if let Some(what) = self.sensitive.matching(&absolute) {
            return Err(SandboxError::Sensitive {
                path: absolute,
                what: what.to_owned(),
            });
        }
        let resolved = self.fast_resolve(&absolute).map_or_else(
            || {
                // A root's path is canonical, so resolution may start there instead of `/`.
                let start = self.containing_root(&absolute).map(Root::path);
                resolve(&absolute, path, start)
            },
            Ok,
        )?;
        if resolved.path != absolute
            && let Some(what) = self.sensitive.matching(&resolved.path)
        {
            return Err(SandboxError::Sensitive {
                path: resolved.path,
                what: what.to_owned(),
            });
        }
        let Some(root) = self.containing_root(&resolved.path) else {
            return Err(SandboxError::OutsideRoots {
                path: path.to_owned(),
                resolved: resolved.path,
                roots: self.roots_display(),
            });
        };
        if op == Op::Write {
            if root.access() == Access::ReadOnly {
                return Err(SandboxError::ReadOnlyRoot {
                    resolved: resolved.path,
                    root: root.path().to_owned(),
                });
            }
            let mut views = resolved.views.clone();
            views.push(absolute);
            if let Some(pattern) = self.protected.judge(&resolved.path, &views, root.path()) {
                return Err(SandboxError::Protected {
                    resolved: resolved.path.clone(),
                    root: root.path().to_owned(),
                    pattern,
                });
            }
            if let Some((true, nlink)) = resolved.nlink
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
        })
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
        let flags = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
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
                    path: normalise_lexically(absolute),
                    exists: false,
                    nlink: None,
                    views: Vec::new(),
                });
            }
            Err(_) => return None,
        };
        let stat = rustix::fs::fstat(&fd).ok()?;
        let regular =
            rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile;
        Some(Resolved {
            path: normalise_lexically(absolute),
            exists: true,
            nlink: Some((regular, stat.st_nlink)),
            views: Vec::new(),
        })
    }
}

/// Drops `.` and trailing slashes; `absolute` holds no `..` here.
fn normalise_lexically(absolute: &Path) -> PathBuf {
    absolute.components().collect()
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

/// Resolves `absolute` as the kernel would, component by component, following symlinks.
fn resolve(absolute: &Path, given: &Path, start: Option<&Path>) -> Result<Resolved, SandboxError> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let (mut resolved, rest) =
        match start.and_then(|root| Some((root, absolute.strip_prefix(root).ok()?))) {
            Some((root, rest)) => (root.to_owned(), rest),
            None => (PathBuf::from("/"), absolute),
        };
    push_front_components(&mut pending, rest);
    let mut hops = 0u32;
    let mut last_meta: Option<(bool, u64)> = None;
    let mut views = Vec::new();
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            resolved.pop();
            last_meta = None;
            continue;
        }
        let candidate = resolved.join(&name);
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
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
                let target = std::fs::read_link(&candidate)
                    .map_err(|err| SandboxError::io("read the symlink", &candidate, err))?;
                if target.as_os_str().is_empty() {
                    return Err(SandboxError::io(
                        "follow the symlink",
                        &candidate,
                        std::io::Error::from(std::io::ErrorKind::NotFound),
                    ));
                }
                let mut view = candidate.clone();
                view.extend(pending.iter());
                views.push(view);
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                push_front_components(&mut pending, &target);
                last_meta = None;
            }
            Ok(meta) => {
                if !meta.is_dir() && !pending.is_empty() {
                    return Err(SandboxError::io(
                        "resolve",
                        given,
                        std::io::Error::from_raw_os_error(Errno::NOTDIR.raw_os_error()),
                    ));
                }
                resolved = candidate;
                last_meta = Some((meta.is_file(), meta.nlink()));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                // Judged by the deepest existing ancestor (`resolved`, physical) plus the rest,
                // normalised lexically.
                pending.push_front(name);
                for rest in pending {
                    if rest == ".." {
                        resolved.pop();
                    } else {
                        resolved.push(rest);
                    }
                }
                return Ok(Resolved {
                    path: resolved,
                    exists: false,
                    nlink: None,
                    views,
                });
            }
            Err(err) if err.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
                return Err(SandboxError::SymlinkLoop {
                    path: given.to_owned(),
                });
            }
            Err(err) => return Err(SandboxError::io("resolve", given, err)),
        }
    }
    Ok(Resolved {
        path: resolved,
        exists: true,
        nlink: last_meta,
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
