//! The only `unsafe` of bash-guard: the three system calls the trampoline needs that have no safe
//! wrapper, called only in a process that is single-threaded (the trampoline, `exec`ed fresh or
//! forked, starts no thread; a caller's fork is refused unless it has one thread), and the
//! registration of a forked trampoline's pidfd with tokio.
#![allow(unsafe_code)]

use std::io;

use rustix::process::Pid;
use rustix::thread::UnshareFlags;

/// Which side of a [`fork`] this is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Forked {
    /// The parent, with the child's pid.
    Parent(Pid),
    /// The child.
    Child,
}

/// Number of threads of this process, from `/proc/self/stat` (field 20).
pub(crate) fn thread_count() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after its `)` are fixed.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(17)?.parse().ok()
}

/// `fork(2)`, refused unless this process has exactly one thread.
///
/// Only the calling thread survives in the child; with other threads a lock one of them held
/// (the allocator's, stdio's) would stay locked for ever in the child.
pub(crate) fn fork() -> io::Result<Forked> {
    if thread_count() != Some(1) {
        return Err(io::Error::other(
            "fork refused: the process is not single-threaded",
        ));
    }
    // SAFETY: the process has a single thread (checked above, and no thread can start in between:
    // only this thread could start one), so the child's copy of every lock is unlocked and
    // every Rust invariant of the address space holds in the child as in the parent.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        n => Pid::from_raw(n)
            .map(Forked::Parent)
            .ok_or_else(|| io::Error::other("fork returned an invalid pid")),
    }
}

/// `unshare(2)` for new namespaces only. File-descriptor-table and fs-attribute flags are refused:
/// those are what makes `unshare` unsafe for a multi-threaded process (another thread could
/// observe descriptors that are no longer shared).
pub(crate) fn unshare_namespaces(flags: UnshareFlags) -> io::Result<()> {
    let namespaces = UnshareFlags::NEWNS
        | UnshareFlags::NEWPID
        | UnshareFlags::NEWNET
        | UnshareFlags::NEWIPC
        | UnshareFlags::NEWUTS
        | UnshareFlags::NEWUSER
        | UnshareFlags::NEWCGROUP;
    if !namespaces.contains(flags) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: `flags` holds namespace flags only (checked above): no descriptor table or fs
    // attributes stop being shared, so no thread can observe a descriptor it does not own.
    unsafe { rustix::thread::unshare_unsafe(flags) }.map_err(io::Error::from)
}

/// Marks every descriptor from 3 up close-on-exec (`close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`), so
/// the command starts with standard input, output and error only: a descriptor the caller's
/// caller left open (`7>/elsewhere/file`) would otherwise be a way around every root.
///
/// Marking, not closing: descriptors this process owns (Rust's `OwnedFd`s) stay valid until the
/// `exec`, and the `exec` closes them all at once.
pub(crate) fn cloexec_from_3() -> io::Result<()> {
    // SAFETY: CLOSE_RANGE_CLOEXEC only sets the close-on-exec flag; no descriptor is closed or
    // reused, so no `OwnedFd`/`BorrowedFd` of this process is invalidated. Every argument is a
    // plain integer.
    let rc = unsafe { libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as i32) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `pidfd` registered with the running tokio runtime, readable once its process has exited.
pub(crate) fn register_pidfd(
    pidfd: std::os::fd::OwnedFd,
) -> io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    // SAFETY: the `AsyncFd` takes the `OwnedFd` by value and owns it for as long as it is
    // registered: nothing else can close the descriptor or put another file under its number
    // while the registration lasts.
    unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
            .map_err(|e| e.into_parts().1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_is_refused_in_a_multi_threaded_process() {
        // The test harness runs tests on worker threads: never fork here.
        let _t = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(200)));
        assert!(thread_count().is_some_and(|n| n > 1));
        let err = fork().unwrap_err();
        assert!(err.to_string().contains("single-threaded"), "{err}");
    }

    #[test]
    fn unshare_refuses_non_namespace_flags() {
        let err = unshare_namespaces(UnshareFlags::FILES).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = unshare_namespaces(UnshareFlags::NEWNS | UnshareFlags::FS).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn every_descriptor_from_3_becomes_close_on_exec() {
        use std::os::fd::AsRawFd;
        // A descriptor opened without O_CLOEXEC, as a shell's `7>file` would leave it.
        let file = tempfile::tempfile().unwrap();
        let fd = file.as_raw_fd();
        rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::empty()).unwrap();
        assert!(
            !rustix::io::fcntl_getfd(&file)
                .unwrap()
                .contains(rustix::io::FdFlags::CLOEXEC)
        );
        cloexec_from_3().unwrap();
        assert!(fd >= 3);
        assert!(
            rustix::io::fcntl_getfd(&file)
                .unwrap()
                .contains(rustix::io::FdFlags::CLOEXEC)
        );
    }

    #[test]
    fn thread_count_reads_this_process() {
        assert!(thread_count().is_some_and(|n| n >= 1));
    }
}
