//! Reading the head of a file without ever blocking on what it is.
//!
//! Every judgement that looks at content (a `.pem` that may hold a key, a `.git` pointer file,
//! a repository's config, the secret sniff) goes through [`read_head`]. `File::open` on a FIFO
//! blocks until a writer appears, which is never for a FIFO the agent planted as `x.pem` or
//! `sub/.git`; a hook that never answers is a hook whose client runs the call. So: the type is
//! looked at first (`stat`, no open), only a regular file is opened, the open is `O_NONBLOCK |
//! O_NOCTTY`, and the fd's type is checked again (the name may have been swapped for a FIFO
//! between the `stat` and the `open`). A slow mount can still stall a read: the hook's
//! deadline (agent-guard) answers for that.

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

/// How many leading bytes content judgements read.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// What [`read_head`] found at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// Nothing is there.
    Missing,
    /// Something that is not a regular file (a directory, FIFO, socket, device): not opened.
    NotRegular(FileType),
    /// The first bytes of a regular file (at most the limit asked for).
    Bytes(Vec<u8>),
}

/// The first `limit` bytes of `path` when it is a regular file (symlinks followed), without
/// opening anything else and without blocking on a FIFO or a device.
pub fn read_head(path: &Path, limit: usize) -> std::io::Result<Head> {
    let stat = match rustix::fs::stat(path) {
        Ok(stat) => stat,
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok(Head::Missing),
        Err(err) => return Err(err.into()),
    };
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Ok(Head::NotRegular(kind));
    }
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    head_of_fd(&fd, limit)
}

/// The first `limit` bytes of an fd opened `O_NONBLOCK`, when it is a regular file.
pub(crate) fn head_of_fd(fd: &OwnedFd, limit: usize) -> std::io::Result<Head> {
    let stat = rustix::fs::fstat(fd)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Ok(Head::NotRegular(kind));
    }
    // Sized by the file, not the limit (no 64 KiB memset for a 1 KiB file); procfs reports 0
    // for files that are not empty, so 0 reads up to the limit.
    let size = usize::try_from(stat.st_size).unwrap_or(usize::MAX);
    let want = if size == 0 {
        limit
    } else {
        limit.min(size.saturating_add(1))
    };
    let mut out = vec![0u8; want];
    let mut filled = 0usize;
    while let Some(rest) = out.get_mut(filled..).filter(|r| !r.is_empty()) {
        match rustix::io::read(fd, rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(Errno::INTR) => {}
            Err(err) => return Err(err.into()),
        }
    }
    out.truncate(filled);
    Ok(Head::Bytes(out))
}

/// The whole text of a small regular file (at most `limit` bytes, lossy UTF-8), or `None` when
/// it is missing, not a regular file or unreadable: for configuration the guard follows (a
/// `gitdir:` pointer, a git config), where a FIFO must read as "not there", never block.
pub fn read_small_text(path: &Path, limit: usize) -> Option<String> {
    match read_head(path, limit) {
        Ok(Head::Bytes(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn a_fifo_is_reported_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.pem");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Before, `File::open` waited for a writer forever; run it where a hang fails the test.
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || tx.send(read_head(&path, 16).unwrap()).unwrap());
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("read_head blocked on a FIFO");
        assert_eq!(got, Head::NotRegular(FileType::Fifo));
        assert_eq!(read_small_text(&fifo, 16), None);
    }

    #[test]
    fn regular_files_are_read_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read_head(&file, 4).unwrap(), Head::Bytes(b"0123".to_vec()));
        assert_eq!(
            read_head(&file, 100).unwrap(),
            Head::Bytes(b"0123456789".to_vec())
        );
        assert_eq!(read_head(&dir.path().join("no"), 4).unwrap(), Head::Missing);
        assert_eq!(
            read_head(dir.path(), 4).unwrap(),
            Head::NotRegular(FileType::Directory)
        );
    }
}
