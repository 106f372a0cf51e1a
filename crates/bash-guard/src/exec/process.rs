//! The process a run waits for: one tokio spawned (the shell, or an executed trampoline), or a
//! trampoline this process forked (see [`crate::StartedTrampoline::fork`]), which tokio does not
//! know and which is waited for through a pidfd instead.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use rustix::process::{Pid, Signal, WaitOptions};
use tokio::io::AsyncRead;
use tokio::io::unix::AsyncFd;

/// A child's standard output or error, read by the run.
pub(crate) type Output = Box<dyn AsyncRead + Unpin + Send>;

/// A run's child process; dropping it kills a child that was not waited for.
#[derive(Debug)]
pub(crate) enum Process {
    Spawned(tokio::process::Child),
    Forked(Forked),
}

impl Process {
    /// The child's pid, while it was not waited for.
    pub(crate) fn id(&self) -> Option<u32> {
        match self {
            Process::Spawned(child) => child.id(),
            Process::Forked(forked) => forked
                .status
                .is_none()
                .then(|| forked.pid.as_raw_nonzero().get().unsigned_abs()),
        }
    }

    /// The child's standard output and error (each once).
    pub(crate) fn take_output(&mut self) -> io::Result<(Option<Output>, Option<Output>)> {
        match self {
            Process::Spawned(child) => Ok((
                child.stdout.take().map(|s| Box::new(s) as Output),
                child.stderr.take().map(|s| Box::new(s) as Output),
            )),
            Process::Forked(forked) => {
                let pipe = |fd: Option<OwnedFd>| -> io::Result<Option<Output>> {
                    fd.map(|fd| {
                        tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
                            .map(|r| Box::new(r) as Output)
                    })
                    .transpose()
                };
                Ok((pipe(forked.stdout.take())?, pipe(forked.stderr.take())?))
            }
        }
    }

    /// Waits for the child's exit (cancel-safe: a wait given up reaps nothing).
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Process::Spawned(child) => child.wait().await,
            Process::Forked(forked) => forked.wait().await,
        }
    }
}

/// A child forked by this process, its pidfd, and its ends of the child's output pipes.
#[derive(Debug)]
pub(crate) struct Forked {
    pid: Pid,
    /// Readable once the child has exited; registered with the runtime at the first wait (the
    /// fork comes before any runtime exists).
    pidfd: Option<OwnedFd>,
    registered: Option<AsyncFd<OwnedFd>>,
    status: Option<ExitStatus>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
}

impl Forked {
    /// The forked child `pid`, with our ends of its output pipes. Opens its pidfd; on an error
    /// (a kernel without pidfds) the child is killed.
    pub(crate) fn new(pid: Pid, stdout: OwnedFd, stderr: OwnedFd) -> io::Result<Forked> {
        let mut forked = Forked {
            pid,
            pidfd: None,
            registered: None,
            status: None,
            stdout: Some(stdout),
            stderr: Some(stderr),
        };
        // On an error `forked` drops here, which kills and reaps the child.
        forked.pidfd = Some(rustix::process::pidfd_open(
            pid,
            rustix::process::PidfdFlags::empty(),
        )?);
        Ok(forked)
    }

    async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        if let Some(fd) = self.pidfd.take() {
            self.registered = Some(super::sys::register_pidfd(fd)?);
        }
        let Some(pidfd) = &self.registered else {
            return Err(io::Error::other("the child has no pidfd"));
        };
        loop {
            let mut ready = pidfd.readable().await?;
            if let Some(status) = reap(self.pid)? {
                self.status = Some(status);
                return Ok(status);
            }
            ready.clear_ready();
        }
    }
}

/// Reaps `pid` if it has exited.
fn reap(pid: Pid) -> io::Result<Option<ExitStatus>> {
    loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::NOHANG) {
            Ok(Some((_, status))) => return Ok(Some(ExitStatus::from_raw(status.as_raw()))),
            Ok(None) => return Ok(None),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

impl Drop for Forked {
    /// Kills a child that was not waited for (like tokio's `kill_on_drop`) and reaps it if it is
    /// already gone; one still exiting stays a zombie until this process exits.
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        // Through the pidfd when there is one: the pid cannot have been reused for another
        // process while we hold it.
        let fd = self
            .registered
            .as_ref()
            .map(|a| std::os::fd::AsFd::as_fd(a.get_ref()))
            .or(self.pidfd.as_ref().map(std::os::fd::AsFd::as_fd));
        let _ = match fd {
            Some(fd) => rustix::process::pidfd_send_signal(fd, Signal::KILL),
            None => rustix::process::kill_process(self.pid, Signal::KILL),
        };
        let _ = reap(self.pid);
    }
}
