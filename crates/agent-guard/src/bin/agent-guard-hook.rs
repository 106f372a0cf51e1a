//! `agent-guard-hook`: the small entry `agent-guard init` installs as the clients' hook
//! command. Same arguments and answers as `agent-guard claude-hook|codex-hook|gemini-hook`.
//!
//! A hook process per tool call paid for loading and relocating the 24 MB CLI and building its
//! guard every time. This entry hands the call to the user's resident guard
//! (`agent-guard __hook-server`, started on first use, listening on a socket in the private
//! `~/.agent-guard/run`), which forks an already warm judge that takes this process's stdin,
//! stdout, stderr and working directory and runs the very same hook code; the entry exits with
//! the judge's status. Whenever the resident guard cannot take the call before anything was
//! handed over (none running, a socket that is not provably the user's own server of this very
//! executable, an old or busy server), the entry becomes `agent-guard` itself (`exec`), so a
//! call is always judged by the same code. A judge that ends without a status is a refusal
//! (exit 2), never an allow.

// std's start-up (a read of /proc/self/maps for the main thread's stack guard, an alternate
// signal stack, its handlers) was an eighth of this entry's own time: the entry starts at C's
// `main` and does the two parts of it that matter here itself (see `c_main`).
#![cfg_attr(not(test), no_main)]
// Under `cargo test` the harness is the program: the entry's functions are not called there.
#![cfg_attr(test, allow(dead_code))]

#[path = "../resident/wire.rs"]
#[allow(dead_code)] // the server's half of the wire is not used here
mod wire;

use std::ffi::OsString;
use std::io::{IoSlice, Read as _, Write as _};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, BorrowedFd};
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long the server may take to say it is ready before the entry judges in-process. A
/// healthy server has said it before the entry reads (its judge accepts as the entry
/// connects); the judge's deadline starts after this wait, so it stays short.
const READY_WAIT: Duration = Duration::from_millis(250);

/// The variable that turns the resident guard off (the entry then always becomes the CLI).
const OFF_VAR: &str = "AGENT_GUARD_RESIDENT";

/// The CLI this entry belongs to: `agent-guard` beside it (same package, same build).
const CLI: &str = "agent-guard";

/// What the status wait may take at most. The judge answers before its client's timeout on
/// its own (the same deadline as in-process); this only bounds a judge that vanished without
/// closing its end.
const STATUS_WAIT: Duration = Duration::from_secs(15 * 60);

enum Outcome {
    /// The judge's exit status.
    Judged(u8),
    /// Nothing was handed over: judge in-process.
    Fallback,
    /// Handed over, then lost: refuse with this reason.
    Lost(String),
}

/// The process's entry, called by the C runtime (std reads the arguments and the environment
/// on its own, from the C runtime's initialisation).
#[cfg(not(test))]
#[allow(unsafe_code)] // an exported symbol: the C runtime calls it as `main`
#[unsafe(export_name = "main")]
extern "C" fn c_main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    if !std_start() {
        return libc::c_int::from(refuse(
            "cannot open /dev/null for a closed standard descriptor; the call is refused",
        ));
    }
    libc::c_int::from(entry())
}

/// What std's start-up does that this entry needs: a write to a closed pipe is an error, not
/// a signal that kills the entry (a death by signal lets the call run in Claude Code and
/// Codex), and descriptors 0-2 are open, so that nothing this entry opens (the socket) takes
/// the place of the stdout it hands over.
#[allow(unsafe_code)]
fn std_start() -> bool {
    // SAFETY: this process has one thread; `signal` with `SIG_IGN` installs no handler code,
    // `fcntl(F_GETFD)` only asks about a descriptor, and `open` makes a new one.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        for fd in 0..3 {
            if libc::fcntl(fd, libc::F_GETFD) == -1
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
                && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) != fd
            {
                return false;
            }
        }
    }
    true
}

fn entry() -> u8 {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let cli = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(CLI),
        Err(e) => return refuse(&format!("cannot find the agent-guard executable: {e}")),
    };
    let resident_allowed = std::env::var_os(OFF_VAR).is_none_or(|v| v != "0")
        && args
            .first()
            .is_some_and(|a| wire::HOOK_SUBCOMMANDS.iter().any(|h| a == *h));
    if resident_allowed {
        match through_resident(&cli, &args) {
            Outcome::Judged(code) => return code,
            Outcome::Lost(reason) => return refuse(&reason),
            Outcome::Fallback => {}
        }
    }
    // Become the CLI: the same process, stdin untouched.
    let err = Command::new(&cli).args(&args).exec();
    refuse(&format!(
        "cannot run {}: {err}; the call is refused (reinstall with agent-guard init)",
        cli.display()
    ))
}

/// Exit 2 with a reason on stderr: all three clients read it as a refusal.
fn refuse(reason: &str) -> u8 {
    let _ = writeln!(std::io::stderr(), "agent-guard: {reason}");
    2
}

fn through_resident(cli: &Path, args: &[OsString]) -> Outcome {
    let Some(home) = wire::home() else {
        return Outcome::Fallback;
    };
    let Ok(binary) = std::fs::metadata(cli) else {
        return Outcome::Fallback;
    };
    let Some(socket) = wire::socket_path(&home, &binary) else {
        return Outcome::Fallback;
    };
    let uid = rustix::process::getuid().as_raw();
    let Some(dir) = socket.parent() else {
        return Outcome::Fallback;
    };
    let stream = match UnixStream::connect(&socket) {
        Ok(stream) => stream,
        Err(e) => {
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) {
                start_server(cli, &socket, dir, uid);
            }
            return Outcome::Fallback;
        }
    };
    // Only the user's own server of this very executable is handed a call: the directory is
    // private, and the peer is a process of this user running this executable.
    if !wire::is_private_dir(dir, uid) || !wire::parent_is_safe(dir, uid) {
        return Outcome::Fallback;
    }
    let Ok(peer) = rustix::net::sockopt::socket_peercred(&stream) else {
        return Outcome::Fallback;
    };
    let peer_exe = std::fs::metadata(format!("/proc/{}/exe", peer.pid.as_raw_nonzero()));
    if peer.uid.as_raw() != uid
        || !peer_exe.is_ok_and(|m| m.dev() == binary.dev() && m.ino() == binary.ino())
        || !same_world(peer.pid.as_raw_nonzero().get())
    {
        return Outcome::Fallback;
    }
    if stream.set_read_timeout(Some(READY_WAIT)).is_err() {
        return Outcome::Fallback;
    }
    let mut ready = [0u8; 1];
    if (&stream).read_exact(&mut ready).is_err() || ready[0] != wire::READY {
        return Outcome::Fallback;
    }
    let Ok(cwd) = std::fs::File::open(".") else {
        return Outcome::Fallback;
    };
    let request = wire::Request {
        args: args.to_vec(),
        env: std::env::vars_os()
            .map(|(k, v)| {
                let mut entry = k;
                entry.push("=");
                entry.push(v);
                entry
            })
            .collect(),
        umask: current_umask(),
    };
    let body = request.encode();
    if body.len() > wire::MAX_BODY {
        return Outcome::Fallback;
    }
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    let fds: [BorrowedFd<'_>; wire::FDS] =
        [stdin.as_fd(), stdout.as_fd(), stderr.as_fd(), cwd.as_fd()];
    let header = wire::header(body.len());
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(wire::FDS))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    if !control.push(rustix::net::SendAncillaryMessage::ScmRights(&fds)) {
        return Outcome::Fallback;
    }
    match rustix::net::sendmsg(
        &stream,
        &[IoSlice::new(&header)],
        &mut control,
        rustix::net::SendFlags::NOSIGNAL,
    ) {
        Ok(n) if n == header.len() => {}
        // The descriptors may have gone with a partial header; the server refuses a short
        // request without reading them, and says so (NOT_STARTED) or closes.
        _ => return finish(&stream),
    }
    if (&stream).write_all(&body).is_err() {
        return finish(&stream);
    }
    finish(&stream)
}

/// Whether the server `pid` sees the filesystem and the processes as this process does: the
/// same mount, pid and user namespaces and the same root. A judge resolves paths in the
/// server's world; a hook from a container or a sandbox is judged in its own process.
fn same_world(pid: i32) -> bool {
    let ns = |who: &str, kind: &str| std::fs::read_link(format!("/proc/{who}/ns/{kind}")).ok();
    let root = |who: &str| {
        std::fs::metadata(format!("/proc/{who}/root"))
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    let peer = pid.to_string();
    ["mnt", "pid", "user"]
        .iter()
        .all(|kind| ns("self", kind).is_some_and(|own| ns(&peer, kind) == Some(own)))
        && root("self").is_some_and(|own| root(&peer) == Some(own))
}

/// Waits for the judge's status (or the server's word that none started).
fn finish(stream: &UnixStream) -> Outcome {
    let _ = stream.set_read_timeout(Some(STATUS_WAIT));
    let mut status = [0u8; 2];
    match (&*stream).read_exact(&mut status) {
        Ok(()) if status[0] == wire::EXITED => Outcome::Judged(status[1]),
        Ok(()) if status[0] == wire::NOT_STARTED => Outcome::Fallback,
        _ => Outcome::Lost(
            "the resident guard stopped before answering; the call is blocked (retry; \
             AGENT_GUARD_RESIDENT=0 judges every call in its own process)"
                .to_owned(),
        ),
    }
}

/// The umask, read the only way there is (set and restore; this process is single-threaded).
fn current_umask() -> u32 {
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    rustix::process::umask(old);
    old.as_raw_mode()
}

/// Starts the user's resident guard for the calls that follow (this one is judged in-process).
/// A server that finds another one running exits at once.
fn start_server(cli: &Path, socket: &Path, dir: &Path, uid: u32) {
    if !ensure_private_dir(dir, uid) {
        return;
    }
    let _ = Command::new(cli)
        .arg("__hook-server")
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a client that kills the hook's group when it is done leaves
        // the server alone.
        .process_group(0)
        .env_remove("LD_PRELOAD")
        .env_remove("LD_LIBRARY_PATH")
        .current_dir("/")
        .spawn();
}

/// `~/.agent-guard` (0700 when made here) and its private `run` directory.
fn ensure_private_dir(dir: &Path, uid: u32) -> bool {
    use std::os::unix::fs::DirBuilderExt as _;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true).mode(0o700);
    let _ = builder.create(dir);
    wire::is_private_dir(dir, uid) && wire::parent_is_safe(dir, uid)
}
