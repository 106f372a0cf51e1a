//! How a judge of the resident guard ends: its exit status goes to the entry that handed the
//! call over. A leaf: the hook code ends through [`exit`] without knowing about the server.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
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

/// What a judge tells the server on its line, for the next judge to prepare while it waits:
/// each note is its kind, a little-endian `u32` length and that many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Note {
    /// The policy file this call named: the next judge parses it (the parse is reused when
    /// the file has not changed; agent-core's `Policy::load`).
    Policy = b'P',
    /// The SQLite audit database this call's guard opened: the next judge opens it
    /// (perm-hooks' `AuditDb::open_held`).
    AuditDb = b'A',
}

impl Note {
    fn from_byte(byte: u8) -> Option<Note> {
        [Note::Policy, Note::AuditDb]
            .into_iter()
            .find(|note| *note as u8 == byte)
    }
}

/// Makes this judge report on `line` (what [`note`] writes).
pub(crate) fn report_on(line: UnixStream) {
    let _ = LINE.set(line);
}

/// Tells the server `path` for `kind`. Nothing when this process is not a judge.
pub(crate) fn note(kind: Note, path: &Path) {
    let Some(line) = LINE.get() else {
        return;
    };
    let bytes = path.as_os_str().as_encoded_bytes();
    let Ok(len) = u32::try_from(bytes.len()) else {
        return;
    };
    let mut note = Vec::with_capacity(5 + bytes.len());
    note.push(kind as u8);
    note.extend_from_slice(&len.to_le_bytes());
    note.extend_from_slice(bytes);
    let _ = (&*line).write_all(&note);
}

/// What the last call's judge noted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Notes {
    pub(crate) policy: Option<PathBuf>,
    pub(crate) audit_db: Option<PathBuf>,
}

impl Notes {
    /// Takes what `newer` noted; keeps what it did not note (a call without an audit database
    /// between two with one leaves the database held).
    pub(crate) fn update(&mut self, newer: Notes) {
        if newer.policy.is_some() {
            self.policy = newer.policy;
        }
        if newer.audit_db.is_some() {
            self.audit_db = newer.audit_db;
        }
    }

    /// The notes in `bytes` (what a judge wrote on its line), the last of each kind; `None`
    /// when they do not parse.
    pub(crate) fn read(mut bytes: &[u8]) -> Option<Notes> {
        let mut notes = Notes::default();
        while let Some((kind, rest)) = bytes.split_first() {
            let (len, rest) = rest.split_first_chunk::<4>()?;
            let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
            let (path, rest) = rest.split_at_checked(len)?;
            let path = Some(PathBuf::from(OsString::from_vec(path.to_vec())));
            match Note::from_byte(*kind)? {
                Note::Policy => notes.policy = path,
                Note::AuditDb => notes.audit_db = path,
            }
            bytes = rest;
        }
        Some(notes)
    }
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

/// Work a judge's waiting thread runs for the call: the wait for its deadline.
pub(crate) type Wait = Box<dyn FnOnce() + Send>;

thread_local! {
    /// On a judge's judging thread: the way to its waiting thread.
    static WAITER: std::cell::RefCell<Option<std::sync::mpsc::Sender<Wait>>> =
        const { std::cell::RefCell::new(None) };
}

/// Makes the current thread a judge's judging thread, whose call's wait runs on the thread
/// that receives from `waiter`.
pub(crate) fn judging_thread(waiter: std::sync::mpsc::Sender<Wait>) {
    WAITER.with(|w| *w.borrow_mut() = Some(waiter));
}

/// Hands `wait` to the waiting thread when the current thread is a judge's judging thread,
/// which then judges the call itself; anywhere else (or with the waiting thread gone) `wait`
/// comes back for the caller to run on a thread of its own.
pub(crate) fn hand_wait(wait: Wait) -> Option<Wait> {
    match WAITER.with(|w| w.borrow_mut().take()) {
        Some(waiter) => waiter.send(wait).err().map(|unsent| unsent.0),
        None => Some(wait),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_read_back_as_written_and_junk_reads_as_none() {
        let mut bytes = Vec::new();
        for (kind, path) in [
            (Note::Policy, "/p/old.toml"),
            (Note::AuditDb, "/s/audit.db"),
            (Note::Policy, "/p/new.toml"),
        ] {
            bytes.push(kind as u8);
            bytes.extend_from_slice(&u32::try_from(path.len()).unwrap().to_le_bytes());
            bytes.extend_from_slice(path.as_bytes());
        }
        let notes = Notes::read(&bytes).unwrap();
        assert_eq!(notes.policy.as_deref(), Some(Path::new("/p/new.toml")));
        assert_eq!(notes.audit_db.as_deref(), Some(Path::new("/s/audit.db")));
        assert_eq!(Notes::read(&[]), Some(Notes::default()));
        let mut last = notes.clone();
        last.update(Notes {
            policy: Some(PathBuf::from("/p/other.toml")),
            audit_db: None,
        });
        assert_eq!(last.policy.as_deref(), Some(Path::new("/p/other.toml")));
        assert_eq!(last.audit_db, notes.audit_db, "a call without one keeps it");
        assert_eq!(Notes::read(&[b'X', 0, 0, 0, 0]), None, "an unknown kind");
        assert_eq!(Notes::read(&[b'P', 9, 0, 0, 0, b'/']), None, "cut short");
        assert_eq!(Notes::read(&[b'P', 1, 0]), None, "a cut length");
    }
}
