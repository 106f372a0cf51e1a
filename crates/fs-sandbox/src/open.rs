//! Race-free file access beneath a root's directory fd.
//!
//! Every operation first [`check`](Sandbox::check)s the path, which resolves it physically, and
//! then opens the *resolved* path relative to the fd of the root that contains it, refusing to
//! follow any symlink on the way (`RESOLVE_NO_SYMLINKS`, or `O_NOFOLLOW` on each component).
//! A symlink or `..` swapped in after the check therefore makes the open fail (code `changed`)
//! instead of escaping. This is also how absolute symlinks that point elsewhere inside the roots
//! are handled: `RESOLVE_BENEATH` alone would refuse them, so the check follows them and the
//! open walks the symlink-free result beneath the root that contains it.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::error::SandboxError;
use crate::sandbox::{DEV_NULL, MountKey, Op, Sandbox, SandboxPath, fd_mount, file_type_name};

/// How [`Sandbox::open_write`] treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteMode {
    /// Create a new file; fail if one exists (`O_CREAT | O_EXCL`).
    Create,
    /// Create the file or empty an existing one.
    Truncate,
    /// Create the file or append to an existing one.
    Append,
}

/// What kind of entry a directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink (not followed).
    Symlink,
    /// Anything else (fifo, socket, device).
    Other,
}

/// One entry of [`Sandbox::read_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The entry's name.
    pub name: OsString,
    /// The listed directory's resolved path joined with the name.
    pub path: PathBuf,
    /// Its kind, without following a symlink.
    pub kind: EntryKind,
}

/// `0o666` before the umask, as `std::fs::File::create`.
const FILE_MODE: u32 = 0o666;
const DIR_MODE: u32 = 0o777;

impl Sandbox {
    /// Opens a file for reading, race-free.
    ///
    /// Opened `O_NONBLOCK` and refused unless the fd is a regular file or a directory, so a FIFO
    /// swapped in after the check never blocks and a device is never read.
    pub fn open_read(&self, path: impl AsRef<Path>) -> Result<File, SandboxError> {
        let checked = self.check(path, Op::Read)?;
        let fd = self.open_beneath(
            &checked,
            OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
        )?;
        let file_type = fd_type(&fd, &checked)?;
        if !matches!(file_type, FileType::RegularFile | FileType::Directory)
            && !is_dev_null(&fd, &checked)
        {
            return Err(special(&checked, file_type));
        }
        blocking(&fd, &checked)?;
        Ok(File::from(fd))
    }

    /// Opens a file for writing, race-free; refuses read-only roots, protected paths and files
    /// with more than one hard link (checked on the opened fd, before any byte is changed).
    pub fn open_write(
        &self,
        path: impl AsRef<Path>,
        mode: WriteMode,
    ) -> Result<File, SandboxError> {
        let checked = self.check(path, Op::Write)?;
        // No O_TRUNC: truncation waits until the fd is known to be a single-link file.
        let flags = match mode {
            WriteMode::Create => OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            WriteMode::Truncate => OFlags::WRONLY | OFlags::CREATE,
            WriteMode::Append => OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND,
        } | OFlags::NOCTTY
            | OFlags::NONBLOCK;
        let fd = self.open_beneath(&checked, flags, Mode::from_raw_mode(FILE_MODE))?;
        let stat =
            rustix::fs::fstat(&fd).map_err(|err| SandboxError::io("stat", checked.path(), err))?;
        let file_type = FileType::from_raw_mode(stat.st_mode);
        if file_type != FileType::RegularFile && !is_dev_null(&fd, &checked) {
            return Err(special(&checked, file_type));
        }
        blocking(&fd, &checked)?;
        let nlink = stat.st_nlink;
        if nlink > 1 {
            return Err(SandboxError::HardLink {
                resolved: checked.path,
                nlink,
            });
        }
        if mode == WriteMode::Truncate {
            rustix::fs::ftruncate(&fd, 0)
                .map_err(|err| SandboxError::io("truncate", checked.path(), err))?;
        }
        Ok(File::from(fd))
    }

    /// Creates a directory and its missing parents, race-free.
    pub fn create_dir_all(&self, path: impl AsRef<Path>) -> Result<(), SandboxError> {
        let checked = self.check(path, Op::Write)?;
        // Each directory must be on the mount the check judged: the root's, and from the
        // scratch mount's point down, that mount's.
        let root_mount = checked.root.mount();
        let point_depth = checked.crossing.as_ref().and_then(|crossing| {
            Some(names(crossing.point.strip_prefix(checked.root.path()).ok()?).len())
        });
        let mut dir: Option<OwnedFd> = None;
        for (depth, name) in (1..).zip(names(checked.relative())) {
            let parent = dir.as_ref().map_or(checked.root.fd().as_fd(), AsFd::as_fd);
            match rustix::fs::mkdirat(parent, &name, Mode::from_raw_mode(DIR_MODE)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(err) => {
                    return Err(SandboxError::io(
                        "create the directory",
                        checked.path(),
                        err,
                    ));
                }
            }
            let next = rustix::fs::openat(
                parent,
                &name,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|err| changed_or_io(err, &checked, "open the directory"))?;
            let expected = match (&checked.crossing, point_depth) {
                (Some(crossing), Some(point)) if depth >= point => Some(crossing.key),
                _ => root_mount,
            };
            if expected.is_some() && fd_mount(&next) != expected {
                return Err(SandboxError::Changed {
                    resolved: checked.path.clone(),
                });
            }
            dir = Some(next);
        }
        Ok(())
    }

    /// Lists a directory, race-free; entries are not followed.
    pub fn read_dir(&self, path: impl AsRef<Path>) -> Result<Vec<DirEntryInfo>, SandboxError> {
        let checked = self.check(path, Op::List)?;
        let fd = self.open_beneath(&checked, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        let dir = rustix::fs::Dir::read_from(&fd)
            .map_err(|err| SandboxError::io("list", checked.path(), err))?;
        let mut entries = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|err| SandboxError::io("list", checked.path(), err))?;
            let name = OsString::from(std::ffi::OsStr::from_bytes(entry.file_name().to_bytes()));
            if name == "." || name == ".." {
                continue;
            }
            let file_type = match entry.file_type() {
                FileType::Unknown => rustix::fs::statat(&fd, &name, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|stat| FileType::from_raw_mode(stat.st_mode))
                    .unwrap_or(FileType::Unknown),
                known => known,
            };
            let kind = match file_type {
                FileType::RegularFile => EntryKind::File,
                FileType::Directory => EntryKind::Dir,
                FileType::Symlink => EntryKind::Symlink,
                _ => EntryKind::Other,
            };
            entries.push(DirEntryInfo {
                path: checked.path().join(&name),
                name,
                kind,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Metadata of the resolved path (a final symlink is followed, as `std::fs::metadata`).
    pub fn metadata(&self, path: impl AsRef<Path>) -> Result<std::fs::Metadata, SandboxError> {
        let checked = self.check(path, Op::Read)?;
        let fd = self.open_beneath(&checked, OFlags::PATH, Mode::empty())?;
        File::from(fd)
            .metadata()
            .map_err(|err| SandboxError::io("stat", checked.path(), err))
    }

    /// Opens the checked, symlink-free path beneath its root's fd without following any symlink.
    /// A path into a scratch mount below the root is opened in two steps: the mount point
    /// beneath the root (no mount crossed on the way, the last name crossed into a mount that
    /// must be the judged one, by mount id and device), then the rest beneath that mount.
    pub(crate) fn open_beneath(
        &self,
        checked: &SandboxPath,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, SandboxError> {
        let flags = flags | OFlags::CLOEXEC;
        let root = checked.root();
        let Some(crossing) = &checked.crossing else {
            return self.open_below(
                root.fd().as_fd(),
                root.mount(),
                checked.relative(),
                checked,
                flags,
                mode,
            );
        };
        let changed = || SandboxError::Changed {
            resolved: checked.path.clone(),
        };
        let point = crossing
            .point
            .strip_prefix(root.path())
            .map_err(|_| changed())?;
        let rest = checked
            .path
            .strip_prefix(&crossing.point)
            .map_err(|_| changed())?;
        let (Some(name), Some(parent)) = (point.file_name(), point.parent()) else {
            return Err(changed());
        };
        let parent = self.open_below(
            root.fd().as_fd(),
            root.mount(),
            parent,
            checked,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mounted = rustix::fs::openat(
            &parent,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| changed_or_io(err, checked, "open"))?;
        if fd_mount(&mounted) != Some(crossing.key) {
            return Err(changed());
        }
        self.open_below(
            mounted.as_fd(),
            Some(crossing.key),
            rest,
            checked,
            flags,
            mode,
        )
    }

    /// Opens `relative` (symlink-free, no `..`) beneath `base`, which is on `base_mount`,
    /// crossing no mount and following no symlink.
    fn open_below(
        &self,
        base: BorrowedFd<'_>,
        base_mount: Option<MountKey>,
        relative: &Path,
        checked: &SandboxPath,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, SandboxError> {
        // A relative path longer than PATH_MAX cannot go to one syscall: walk it instead.
        if self.use_openat2 && relative.as_os_str().len() < PATH_MAX {
            let target = if relative.as_os_str().is_empty() {
                Path::new(".")
            } else {
                relative
            };
            rustix::fs::openat2(
                base,
                target,
                flags,
                mode,
                ResolveFlags::BENEATH
                    | ResolveFlags::NO_MAGICLINKS
                    | ResolveFlags::NO_SYMLINKS
                    | ResolveFlags::NO_XDEV,
            )
            .map_err(|err| changed_or_io(err, checked, "open"))
        } else {
            walk_open(base, base_mount, relative, checked, flags, mode)
        }
    }
}

/// The `O_NOFOLLOW` walk: each directory opened `O_PATH | O_DIRECTORY | O_NOFOLLOW` from the
/// previous one, the last name opened with `O_NOFOLLOW`. `relative` is symlink-free and holds no
/// `..`, so the walk can neither follow a link nor climb above `base`.
fn walk_open(
    base: BorrowedFd<'_>,
    base_mount: Option<MountKey>,
    relative: &Path,
    checked: &SandboxPath,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, SandboxError> {
    let all = names(relative);
    let Some((last, parents)) = all.split_last() else {
        return rustix::fs::openat(base, ".", flags, mode)
            .map_err(|err| changed_or_io(err, checked, "open"));
    };
    let mut dir: Option<OwnedFd> = None;
    for name in parents {
        let parent = dir.as_ref().map_or(base, AsFd::as_fd);
        let next = rustix::fs::openat(
            parent,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| changed_or_io(err, checked, "open"))?;
        dir = Some(next);
    }
    let parent = dir.as_ref().map_or(base, AsFd::as_fd);
    let fd = rustix::fs::openat(parent, last, flags | OFlags::NOFOLLOW, mode)
        .map_err(|err| changed_or_io(err, checked, "open"))?;
    if flags.contains(OFlags::PATH) {
        // O_PATH | O_NOFOLLOW hands back the symlink itself instead of failing.
        let stat =
            rustix::fs::fstat(&fd).map_err(|err| SandboxError::io("stat", checked.path(), err))?;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
            return Err(SandboxError::Changed {
                resolved: checked.path.clone(),
            });
        }
    }
    // The walk has no RESOLVE_NO_XDEV; a mount that appeared after the check lands the fd on
    // another mount than the base's.
    if let (Some(base_mount), Some(mount)) = (base_mount, fd_mount(&fd))
        && mount != base_mount
    {
        return Err(SandboxError::Changed {
            resolved: checked.path.clone(),
        });
    }
    Ok(fd)
}

/// `PATH_MAX`, including the terminating NUL.
const PATH_MAX: usize = 4096;

fn fd_type(fd: &OwnedFd, checked: &SandboxPath) -> Result<FileType, SandboxError> {
    rustix::fs::fstat(fd)
        .map(|stat| FileType::from_raw_mode(stat.st_mode))
        .map_err(|err| SandboxError::io("stat", checked.path(), err))
}

/// The fd is the null device (character device 1:3) and the checked path is `/dev/null`.
fn is_dev_null(fd: &OwnedFd, checked: &SandboxPath) -> bool {
    checked.path() == Path::new(DEV_NULL)
        && rustix::fs::fstat(fd).is_ok_and(|stat| {
            FileType::from_raw_mode(stat.st_mode) == FileType::CharacterDevice
                && stat.st_rdev == rustix::fs::makedev(1, 3)
        })
}

fn special(checked: &SandboxPath, file_type: FileType) -> SandboxError {
    SandboxError::SpecialFile {
        resolved: checked.path.clone(),
        kind: file_type_name(file_type),
    }
}

/// Clears the `O_NONBLOCK` the open used, so the caller gets an ordinary blocking file.
fn blocking(fd: &OwnedFd, checked: &SandboxPath) -> Result<(), SandboxError> {
    let flags = rustix::fs::fcntl_getfl(fd)
        .map_err(|err| SandboxError::io("read the flags of", checked.path(), err))?;
    rustix::fs::fcntl_setfl(fd, flags - OFlags::NONBLOCK)
        .map_err(|err| SandboxError::io("set the flags of", checked.path(), err))
}

fn names(relative: &Path) -> Vec<OsString> {
    relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_owned()),
            _ => None,
        })
        .collect()
}

/// A symlink where the check saw none (`ELOOP`) or an escape (`EXDEV`) means the tree changed
/// under us.
fn changed_or_io(err: Errno, checked: &SandboxPath, op: &'static str) -> SandboxError {
    match err {
        Errno::LOOP | Errno::XDEV => SandboxError::Changed {
            resolved: checked.path.clone(),
        },
        other => SandboxError::io(op, checked.path(), other),
    }
}
