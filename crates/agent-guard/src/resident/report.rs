//! How a judge of the resident guard ends: its exit status goes to the entry that handed the
//! call over. A leaf: the hook code ends through [`exit`] without knowing about the server.

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;

use super::wire;

/// The connection a judge reports its exit status on.
static REPORT: OnceLock<UnixStream> = OnceLock::new();

/// Ends the process with `code`, first telling the entry that handed this call over (when this
/// process is a judge). Every way a hook ends goes through here.
pub(crate) fn exit(code: u8) -> ! {
    if let Some(conn) = REPORT.get() {
        // The client reads the hook's stdout and stderr until they close, which for a judge
        // would be after its teardown (a fork of the whole server): the answer is written,
        // so close them now, then report.
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            let _ = rustix::stdio::dup2_stdin(&null);
            let _ = rustix::stdio::dup2_stdout(&null);
            let _ = rustix::stdio::dup2_stderr(&null);
        }
        let _ = (&*conn).write_all(&[wire::EXITED, code]);
    }
    std::process::exit(i32::from(code))
}

/// The judge's line to the server (see `server::Idle`).
static LINE: OnceLock<UnixStream> = OnceLock::new();

/// Marks the start of the policy path a judge reports on its line.
pub(crate) const POLICY_NOTE: u8 = b'P';

/// Makes this judge report on `line` (what [`note_policy`] writes).
pub(crate) fn report_on(line: UnixStream) {
    let _ = LINE.set(line);
}

/// Tells the server which policy file this call named, so the next judge loads it while it
/// waits (the parse is then reused when the file has not changed; agent-core's
/// `Policy::load`). Nothing when this process is not a judge.
pub(crate) fn note_policy(policy: Option<&std::path::Path>) {
    let (Some(line), Some(policy)) = (LINE.get(), policy) else {
        return;
    };
    let bytes = policy.as_os_str().as_encoded_bytes();
    let Ok(len) = u32::try_from(bytes.len()) else {
        return;
    };
    let mut note = Vec::with_capacity(5 + bytes.len());
    note.push(POLICY_NOTE);
    note.extend_from_slice(&len.to_le_bytes());
    note.extend_from_slice(bytes);
    let _ = (&*line).write_all(&note);
}

/// The process the client started for this hook call, when this process judges it for that
/// process (the entry that handed the call over).
static HOOK_PROCESS: OnceLock<u32> = OnceLock::new();

/// Makes this process a judge that reports on `conn`, for the entry `entry_pid`.
pub(crate) fn report_to(conn: UnixStream, entry_pid: u32) {
    let _ = HOOK_PROCESS.set(entry_pid);
    let _ = REPORT.set(conn);
}

/// The process the client started for this hook: this process, or for a judge, the entry
/// that handed the call over (the client's command line is read up from it).
pub(crate) fn hook_process() -> u32 {
    HOOK_PROCESS.get().copied().unwrap_or_else(std::process::id)
}
