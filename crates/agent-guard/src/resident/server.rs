//! `agent-guard __hook-server`: the user's resident hook guard (see [`super::wire`]).
//!
//! A pre-forking server. It loads this executable once and judges a few synthetic calls so the
//! tables a hook uses are built, then keeps [`POOL`] judges forked in advance: each warms up
//! again in its own memory (so the pages a judgement writes are its own, not copy-on-write
//! pages of the server, and the code it runs is mapped), then waits on the listening socket.
//! A judge that takes a call tells the server, which forks its replacement, and it becomes
//! the call's process: the entry's stdin, stdout, stderr, working directory, arguments,
//! environment and umask are its own, and it runs the hook subcommand through the same code
//! as `agent-guard claude-hook`, so every answer is the CLI's answer. A judge serves one call
//! and exits; nothing judged is kept, and the server itself never reads an event.
//!
//! Forking is sound only while the server has one thread (a lock held by another thread would
//! stay locked in the child forever): the server waits until it has one thread before each
//! fork and never starts one after its warm-up.
//!
//! It serves the user who started it only (the peer's uid is checked), exits after [`IDLE`]
//! without a call, and within a second when its socket is removed or replaced.

// Fork, the allocator's parameters and the judge's environment: each `unsafe` block says why it is
// sound here.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{IoSliceMut, Read as _, Write as _};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::report::Notes;
use super::wire;

/// A server with no call for this long exits (the next call starts one again).
const IDLE: Duration = Duration::from_secs(10 * 60);
/// How often the server looks at its socket and its idle time.
const TICK: Duration = Duration::from_secs(1);
/// How many judges wait for calls, warm: a client's calls come in bursts (parallel tool calls,
/// a PostToolUse right after its PreToolUse), and a call that finds no idle judge waits for
/// one to be forked and warmed.
const POOL: usize = 2;
/// How long an idle judge waits for a call before it opens the last call's audit database.
const HOLD_AFTER: Duration = Duration::from_millis(5);
/// How long the next idle judge waits for the judge of a call to end (a judgement takes about
/// a millisecond; one waiting for a person's approval is not waited for).
const CALL_SHARE: Duration = Duration::from_millis(50);
/// How long a connected entry may take to send its request.
const REQUEST_WAIT: Duration = Duration::from_secs(2);

/// Hidden arguments of `agent-guard __hook-server`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The socket to listen on (in the private `~/.agent-guard/run`).
    #[arg(long)]
    socket: PathBuf,
}

/// Runs the server until it is idle, its socket is gone, or another server holds the lock.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let uid = rustix::process::getuid().as_raw();
    let dir = args
        .socket
        .parent()
        .context("the socket path has no directory")?;
    let home = wire::home().context("HOME is not an absolute path")?;
    let exe = std::env::current_exe().and_then(std::fs::metadata)?;
    if wire::socket_path(&home, &exe).as_deref() != Some(args.socket.as_path()) {
        bail!(
            "{} is not the socket of this executable",
            args.socket.display()
        );
    }
    if dir != wire::run_dir(&home)
        || !wire::is_private_dir(dir, uid)
        || !wire::parent_is_safe(dir, uid)
    {
        bail!(
            "{} is not the private directory ~/.agent-guard/run of this user",
            dir.display()
        );
    }
    let lock = lock(&args.socket)?;
    let Some(_lock) = lock else {
        // Another server of this executable serves this socket.
        return Ok(ExitCode::SUCCESS);
    };
    remove_stale(dir, &args.socket);
    // One allocator arena for every thread: a judge's judging thread then allocates from the
    // heap its warm-up left, instead of growing a fresh arena page by page (`mprotect` and a
    // fault per page were a sixth of a judgement).
    // SAFETY: `mallopt` only sets allocator parameters; this process has one thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
    crate::cmd::warm_up_hooks(crate::cmd::WarmUp::Everything);
    wait_single_threaded(Duration::from_secs(2))?;
    match std::fs::remove_file(&args.socket) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).context("cannot remove the stale socket"),
    }
    let listener = UnixListener::bind(&args.socket)
        .with_context(|| format!("cannot listen on {}", args.socket.display()))?;
    listener.set_nonblocking(true)?;
    std::fs::set_permissions(&args.socket, std::fs::Permissions::from_mode(0o600))?;
    let ours = std::fs::symlink_metadata(&args.socket)?;
    let mut last_call = Instant::now();
    // The policy file and the audit database calls used last: the next idle judge prepares
    // them while it waits.
    let mut last = Notes::default();
    let mut pool = Vec::with_capacity(POOL);
    for _ in 0..POOL {
        pool.push(Idle::spawn(&listener, uid, &last)?);
    }
    let mut quick_deaths = 0u32;
    loop {
        reap();
        if !still_ours(&args.socket, &ours) || last_call.elapsed() > IDLE {
            if still_ours(&args.socket, &ours) {
                let _ = std::fs::remove_file(&args.socket);
            }
            // Dropping our ends of the idle judges' lines tells them to leave (one may still
            // take a call already queued: a call is never cut off once it was handed over).
            return Ok(ExitCode::SUCCESS);
        }
        let Some((slot, event)) = Idle::wait_any(&mut pool, TICK) else {
            continue;
        };
        let Some(idle) = pool.get(slot) else {
            continue;
        };
        match event {
            Event::TookACall => {
                last_call = Instant::now();
                quick_deaths = 0;
                // The next judge's warm-up would compete for a CPU with this call's judgement:
                // it starts when this judge is done (or has had its share of time).
                idle.wait_for_exit(CALL_SHARE);
                if let Some(notes) = idle.notes() {
                    last.update(notes);
                }
            }
            Event::Died => {
                // A judge that cannot even wait for a call: do not fork one after another.
                quick_deaths += 1;
                if quick_deaths > 3 * POOL as u32 {
                    bail!("the idle judges keep dying before taking a call; not serving");
                }
            }
        }
        let fresh = Idle::spawn(&listener, uid, &last)?;
        if let Some(old) = pool.get_mut(slot) {
            *old = fresh;
        }
    }
}

/// Collects the exit of every judge that ended (their CPU time then counts as this server's
/// children's, which `cargo xtask bench startup` reads).
fn reap() {
    while let Ok(Some(_)) = rustix::process::wait(rustix::process::WaitOptions::NOHANG) {}
}

/// The one judge that waits for the next call, warm: it is forked in advance and has already
/// judged the warm-up calls in its own memory, so the pages a judgement touches are its own
/// before a call arrives.
struct Idle {
    pid: rustix::process::Pid,
    /// The server's end of a line to the judge: a byte when it took a call, end of file when
    /// it ended without one.
    line: UnixStream,
}

enum Event {
    TookACall,
    Died,
}

impl Idle {
    fn spawn(listener: &UnixListener, uid: u32, last: &Notes) -> anyhow::Result<Idle> {
        let (ours, theirs) = UnixStream::pair().context("cannot make the judge's line")?;
        wait_single_threaded(Duration::from_secs(2))?;
        // SAFETY: the process has exactly one thread (waited for just above), so the child
        // inherits no lock held by a thread that does not exist in it; glibc's fork makes
        // malloc usable in the child.
        match unsafe { libc::fork() } {
            0 => {
                drop(ours);
                idle_judge(listener, &theirs, uid, last)
            }
            p if p < 0 => Err(std::io::Error::last_os_error()).context("cannot fork a judge"),
            p => Ok(Idle {
                pid: rustix::process::Pid::from_raw(p)
                    .context("fork returned an impossible process id")?,
                line: ours,
            }),
        }
    }

    /// What the judge that took a call noted (its notes are on the line by the time it has
    /// ended).
    fn notes(&self) -> Option<Notes> {
        self.line.set_nonblocking(true).ok()?;
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = (&self.line).read(&mut chunk) {
            bytes.extend_from_slice(chunk.get(..n)?);
            if bytes.len() > wire::MAX_BODY {
                return None;
            }
        }
        Notes::read(&bytes)
    }

    /// Waits until the judge has ended, at most `limit`.
    fn wait_for_exit(&self, limit: Duration) {
        if let Ok(pidfd) =
            rustix::process::pidfd_open(self.pid, rustix::process::PidfdFlags::empty())
        {
            readable_within(&pidfd, limit);
        }
    }

    /// The first judge of `pool` with news within `tick`: it took a call, or it ended.
    fn wait_any(pool: &mut [Idle], tick: Duration) -> Option<(usize, Event)> {
        let mut fds: Vec<_> = pool
            .iter()
            .map(|idle| rustix::event::PollFd::new(&idle.line, rustix::event::PollFlags::IN))
            .collect();
        if !matches!(rustix::event::poll(&mut fds, Some(&timespec(tick))), Ok(n) if n > 0) {
            return None;
        }
        let slot = fds.iter().position(|fd| !fd.revents().is_empty())?;
        let idle = pool.get(slot)?;
        let mut byte = [0u8; 1];
        Some(match (&idle.line).read(&mut byte) {
            Ok(1) => (slot, Event::TookACall),
            _ => (slot, Event::Died),
        })
    }
}

/// A forked judge: warms up, waits for a call (or for the server to leave), takes it and
/// judges it. Never returns.
fn idle_judge(listener: &UnixListener, line: &UnixStream, uid: u32, last: &Notes) -> ! {
    warm_this_judge(last.policy.as_deref());
    // The call is taken and judged on a thread started now with the judging stack, and its
    // deadline waited for on this one: the hook then starts no thread and hands nothing from
    // one thread to another on the call's path (each hand-off wakes a CPU).
    let (waiter, waits) = std::sync::mpsc::channel::<super::Wait>();
    std::thread::scope(|scope| {
        let judging = std::thread::Builder::new()
            .name("hook".to_owned())
            .stack_size(crate::cmd::HOOK_STACK)
            .spawn_scoped(scope, move || {
                super::report::judging_thread(waiter);
                // The warm-up call on this very thread: its stack pages are then in place.
                crate::cmd::warm_up_hooks(crate::cmd::WarmUp::OneCall);
                // The runtime the call's guard runs on (after the warm-up, which would take
                // it).
                let _ = crate::front::hold_runtime();
                take_call(listener, line, uid, last)
            });
        if judging.is_err() {
            std::process::exit(0);
        }
        // The wait ends the process; so does the judging thread, unless it failed before
        // handing one over.
        if let Ok(wait) = waits.recv() {
            wait();
        }
        super::report::exit(2)
    })
}

/// Waits on the socket for a call (or for the server to leave), takes it and judges it.
fn take_call(listener: &UnixListener, line: &UnixStream, uid: u32, last: &Notes) -> ! {
    // The last call's audit database is opened on it (its schema checked; the call then only
    // confirms it is still that file and schema) `HOLD_AFTER` after this judge is ready,
    // unless a call came first: in a burst the open's CPU would be taken from the calls. An
    // existing file only: a policy that stopped naming it must not see it made again. The
    // open starts SQLite's connection thread, which stays parked on its channel until the
    // call sends it a statement.
    let mut to_hold = last.audit_db.as_deref().filter(|db| db.is_file());
    let hold_at = Instant::now() + HOLD_AFTER;
    // One idle judge is woken per call (`EXCLUSIVE`), not every judge for each call.
    let Ok(waiting) = wait_on(listener, line) else {
        std::process::exit(0);
    };
    let mut events = Vec::with_capacity(2);
    loop {
        let wait = to_hold.map(|_| timespec(hold_at.saturating_duration_since(Instant::now())));
        events.clear();
        if rustix::event::epoll::wait(
            &waiting,
            rustix::buffer::spare_capacity(&mut events),
            wait.as_ref(),
        )
        .is_err()
        {
            std::process::exit(0);
        }
        if events.is_empty() {
            if let Some(db) = to_hold.take() {
                crate::front::hold_audit_db(db);
            }
            continue;
        }
        let woken = |what: u64| events.iter().any(|e| e.data.u64() == what);
        if !woken(CALL) {
            if woken(SERVER_LEFT) {
                // The server left (its end closed) and no call is waiting.
                std::process::exit(0);
            }
            continue;
        }
        let Ok((conn, _)) = listener.accept() else {
            // Another process took it, or it went away: wait again.
            continue;
        };
        let _ = conn.set_nonblocking(false);
        let peer_ok =
            rustix::net::sockopt::socket_peercred(&conn).is_ok_and(|c| c.uid.as_raw() == uid);
        if !peer_ok {
            continue;
        }
        // From here this process is this call's: the server forks the next idle judge.
        let _ = (&*line).write_all(&[1]);
        if let Ok(line) = line.try_clone() {
            super::report::report_on(line);
        }
        serve(conn)
    }
}

/// What woke an idle judge: a connection on the listening socket.
const CALL: u64 = 0;
/// What woke an idle judge: the end of its line to the server.
const SERVER_LEFT: u64 = 1;

/// An epoll set on the listening socket (one waiter woken per connection) and the line to the
/// server (readable when the server left).
fn wait_on(listener: &UnixListener, line: &UnixStream) -> rustix::io::Result<OwnedFd> {
    use rustix::event::epoll;
    let waiting = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    epoll::add(
        &waiting,
        listener,
        epoll::EventData::new_u64(CALL),
        epoll::EventFlags::IN | epoll::EventFlags::EXCLUSIVE,
    )?;
    epoll::add(
        &waiting,
        line,
        epoll::EventData::new_u64(SERVER_LEFT),
        epoll::EventFlags::IN,
    )?;
    Ok(waiting)
}

/// Prepares this judge's memory before a call arrives: freed memory stays with the allocator
/// instead of going back to the system, so the pages the warm-up call (run on the judging
/// thread, see `idle_judge`) writes are this process's own when the call writes them again
/// (not copy-on-write pages of the server, each copied on its first write), and the code it
/// runs is mapped; the hook parser is built and the last call's policy parsed.
fn warm_this_judge(policy: Option<&Path>) {
    // SAFETY: `mallopt` only sets allocator parameters; this process has one thread.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TOP_PAD, 8 << 20);
    }
    crate::prepare_hook_cli();
    // The last call's policy, parsed now: the call's own load reuses the parse when the file
    // is unchanged (it is read again either way). A file that does not parse is the call's
    // error to report, not this warm-up's.
    if let Some(policy) = policy {
        let _ = crate::policy::Policy::load(Some(policy));
    }
}

/// The exclusive lock beside the socket; `None` when another server holds it.
fn lock(socket: &Path) -> anyhow::Result<Option<OwnedFd>> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut name = socket.as_os_str().to_owned();
    name.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(PathBuf::from(name))
        .context("cannot open the server's lock file")?;
    let fd = OwnedFd::from(file);
    match rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(fd)),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(e).context("cannot lock the server's lock file"),
    }
}

/// Removes the sockets and lock files of servers that are gone (an executable since replaced
/// leaves its pair behind): a lock nobody holds is stale. Its socket goes first, then the lock
/// file, both while this server holds that lock, so a server starting for it meanwhile either
/// fails to take the lock or makes a new pair after both are gone.
fn remove_stale(dir: &Path, own: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let lock_path = entry.path();
        let Some(socket) = lock_path
            .to_str()
            .and_then(|p| p.strip_suffix(".lock"))
            .map(PathBuf::from)
        else {
            continue;
        };
        let is_ours = socket == own;
        let is_hook = socket
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("hook-") && n.ends_with(".sock"));
        if is_ours || !is_hook {
            continue;
        }
        if let Ok(Some(held)) = lock(&socket) {
            let _ = std::fs::remove_file(&socket);
            let _ = std::fs::remove_file(&lock_path);
            drop(held);
        }
    }
}

/// Whether the socket path still names the socket this server made.
fn still_ours(socket: &Path, ours: &std::fs::Metadata) -> bool {
    std::fs::symlink_metadata(socket).is_ok_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino())
}

fn readable_within(fd: &impl std::os::fd::AsFd, wait: Duration) -> bool {
    let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
    matches!(rustix::event::poll(&mut fds, Some(&timespec(wait))), Ok(n) if n > 0)
}

/// `wait` as poll's timeout (the waits here are seconds at most).
fn timespec(wait: Duration) -> rustix::event::Timespec {
    rustix::event::Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(1),
        tv_nsec: i64::from(wait.subsec_nanos()),
    }
}

/// The number of threads of this process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(usize::MAX, Iterator::count)
}

/// Waits for threads the warm-up started to end.
fn wait_single_threaded(limit: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    while threads() != 1 {
        if started.elapsed() > limit {
            bail!("threads the warm-up started did not end; not serving");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// One call: say ready, read the request, become its judge. Never returns.
fn serve(conn: UnixStream) -> ! {
    if conn.set_read_timeout(Some(REQUEST_WAIT)).is_err()
        || (&conn).write_all(&[wire::READY]).is_err()
    {
        std::process::exit(0);
    }
    match receive(&conn) {
        Ok((fds, request)) => judge(conn, fds, request),
        Err(_) => {
            // Whatever was received is closed unread; the entry judges in-process.
            let _ = (&conn).write_all(&[wire::NOT_STARTED, 0]);
            std::process::exit(0)
        }
    }
}

/// Reads the header with the four descriptors, then the body.
fn receive(conn: &UnixStream) -> anyhow::Result<([OwnedFd; wire::FDS], wire::Request)> {
    let mut header = [0u8; 8];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(wire::FDS))];
    let mut control = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        conn,
        &mut [IoSliceMut::new(&mut header)],
        &mut control,
        rustix::net::RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::with_capacity(wire::FDS);
    for message in control.drain() {
        if let rustix::net::RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if got.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
        bail!("more descriptors than a request carries");
    }
    let fds: [OwnedFd; wire::FDS] = fds
        .try_into()
        .map_err(|_| anyhow::anyhow!("a request carries exactly {} descriptors", wire::FDS))?;
    let read_so_far = got.bytes;
    if read_so_far < header.len() {
        let (_, rest) = header.split_at_mut(read_so_far);
        (&*conn).read_exact(rest)?;
    }
    let len = wire::parse_header(&header)?;
    let mut body = vec![0u8; len];
    (&*conn).read_exact(&mut body)?;
    let request = wire::Request::decode(&body)?;
    let is_hook = request
        .args
        .first()
        .is_some_and(|a| wire::HOOK_SUBCOMMANDS.iter().any(|h| a == *h));
    if !is_hook {
        bail!("the resident guard runs hook subcommands only");
    }
    Ok((fds, request))
}

/// The forked judge: become the entry's process, then run the hook.
fn judge(conn: UnixStream, fds: [OwnedFd; wire::FDS], request: wire::Request) -> ! {
    let _ = conn.set_read_timeout(None);
    let [stdin, stdout, stderr, cwd] = fds;
    let ok = rustix::stdio::dup2_stdin(&stdin).is_ok()
        && rustix::stdio::dup2_stdout(&stdout).is_ok()
        && rustix::stdio::dup2_stderr(&stderr).is_ok()
        && rustix::process::fchdir(&cwd).is_ok();
    drop((stdin, stdout, stderr, cwd));
    let entry_pid = rustix::net::sockopt::socket_peercred(&conn)
        .ok()
        .and_then(|peer| u32::try_from(peer.pid.as_raw_nonzero().get()).ok());
    let (Some(entry_pid), true) = (entry_pid, ok) else {
        // Nothing was read from stdin, but the entry cannot know that now: a refusal.
        super::report::report_to(conn, 1);
        eprintln!(
            "agent-guard: the resident guard could not take this call; it is blocked (retry)"
        );
        super::report::exit(2);
    };
    super::report::report_to(conn, entry_pid);
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(request.umask & 0o777));
    // The judge's environment is the server's, which the entry that started the server
    // gave it: usually this call's already. Only what differs is changed.
    let mut wanted: HashMap<OsString, OsString> = HashMap::new();
    for entry in &request.env {
        let bytes = entry.as_encoded_bytes();
        // No real environment holds a NUL (it is a C string); a hostile entry is skipped.
        if bytes.contains(&0) {
            continue;
        }
        if let Some(eq) = bytes.iter().position(|b| *b == b'=').filter(|&i| i > 0) {
            let (name, value) = bytes.split_at(eq);
            let value = value.get(1..).unwrap_or_default();
            wanted.insert(
                OsString::from_vec(name.to_vec()),
                OsString::from_vec(value.to_vec()),
            );
        }
    }
    // SAFETY: nothing reads the environment concurrently: this is the judging thread, the
    // judge's main thread is parked on its channel until the call hands it its wait (after
    // this), and the held audit database's SQLite worker stays parked on its channel until
    // this call's guard sends it a statement, after this.
    unsafe {
        for (name, value) in std::env::vars_os() {
            if wanted.get(&name) != Some(&value) {
                std::env::remove_var(name);
            }
        }
        for (name, value) in &wanted {
            if std::env::var_os(name).as_ref() != Some(value) {
                std::env::set_var(name, value);
            }
        }
    }
    let code = crate::run_hook(request.args);
    super::report::exit(code)
}
