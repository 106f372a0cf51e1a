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

/// Makes this process a judge that reports on `conn`.
pub(crate) fn report_to(conn: UnixStream) {
    let _ = REPORT.set(conn);
}
