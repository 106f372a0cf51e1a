//! What `agent-guard-hook` (the small hook entry) and `agent-guard __hook-server` (the
//! resident guard) say to each other over a private Unix socket. Compiled into both binaries:
//! the entry links none of the CLI.
//!
//! One connection judges one hook call:
//! 1. the server accepts and writes [`READY`] (an entry that does not read it soon falls back
//!    to judging in its own process, having handed nothing over);
//! 2. the entry sends its stdin, stdout, stderr and working directory as descriptors
//!    (`SCM_RIGHTS`) with [`MAGIC`] and the body's length, then the body: its arguments,
//!    environment and umask;
//! 3. the server forks a judge that takes those descriptors as its own and runs the hook
//!    subcommand exactly as the CLI would; the judge writes [`EXITED`] and its exit status, or
//!    the server writes [`NOT_STARTED`] when no judge could start (nothing was read from the
//!    descriptors: the entry judges in-process).

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The first bytes of a request (and the wire's version).
pub(crate) const MAGIC: [u8; 4] = *b"AGZ1";
/// The server will start a judge for the request that follows.
pub(crate) const READY: u8 = b'R';
/// The judge ended; its exit status is the next byte.
pub(crate) const EXITED: u8 = b'X';
/// No judge started and the descriptors were not read; the status byte that follows is 0.
pub(crate) const NOT_STARTED: u8 = b'N';
/// The descriptors sent with a request: stdin, stdout, stderr, the working directory.
pub(crate) const FDS: usize = 4;
/// The largest body (arguments and environment) a server reads.
pub(crate) const MAX_BODY: usize = 4 << 20;
/// The subcommands a server judges; it runs nothing else.
pub(crate) const HOOK_SUBCOMMANDS: [&str; 3] = ["claude-hook", "codex-hook", "gemini-hook"];
/// A Unix socket path must fit `sockaddr_un` (108 bytes with its NUL); longer homes judge
/// in-process.
const MAX_SOCKET_PATH: usize = 100;

/// One hook call as the entry was started: its arguments (without the program name), its
/// environment (`NAME=value` entries) and its umask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub args: Vec<OsString>,
    pub env: Vec<OsString>,
    pub umask: u32,
}

impl Request {
    /// The body: the umask, then each list as a count and length-prefixed entries.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            64 + self
                .args
                .iter()
                .chain(&self.env)
                .map(|s| s.len() + 4)
                .sum::<usize>(),
        );
        out.extend_from_slice(&self.umask.to_le_bytes());
        for list in [&self.args, &self.env] {
            out.extend_from_slice(&len_u32(list.len()).to_le_bytes());
            for item in list {
                let bytes = item.as_encoded_bytes();
                out.extend_from_slice(&len_u32(bytes.len()).to_le_bytes());
                out.extend_from_slice(bytes);
            }
        }
        out
    }

    /// Reads a body written by [`Request::encode`]; anything else is an `InvalidData` error.
    pub(crate) fn decode(mut body: &[u8]) -> io::Result<Request> {
        let umask = take_u32(&mut body)?;
        let args = take_list(&mut body)?;
        let env = take_list(&mut body)?;
        if !body.is_empty() {
            return Err(invalid("trailing bytes after the request"));
        }
        Ok(Request { args, env, umask })
    }
}

fn len_u32(len: usize) -> u32 {
    // Bodies are capped at MAX_BODY, far below u32::MAX; a longer item is refused by the cap.
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

fn take_u32(body: &mut &[u8]) -> io::Result<u32> {
    let (head, rest) = body
        .split_first_chunk::<4>()
        .ok_or_else(|| invalid("a request ends inside a number"))?;
    *body = rest;
    Ok(u32::from_le_bytes(*head))
}

fn take_list(body: &mut &[u8]) -> io::Result<Vec<OsString>> {
    let count = take_u32(body)? as usize;
    // Each entry takes at least its 4-byte length: a count beyond that is a lie.
    if count > body.len() / 4 {
        return Err(invalid("a request's count exceeds its length"));
    }
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        let len = take_u32(body)? as usize;
        if len > body.len() {
            return Err(invalid("a request's entry exceeds its length"));
        }
        let (item, rest) = body.split_at(len);
        items.push(OsString::from_vec(item.to_vec()));
        *body = rest;
    }
    Ok(items)
}

/// The header sent with the descriptors: [`MAGIC`] and the body's length.
pub(crate) fn header(body_len: usize) -> [u8; 8] {
    let mut out = [0u8; 8];
    let (magic, len) = out.split_at_mut(4);
    magic.copy_from_slice(&MAGIC);
    len.copy_from_slice(&len_u32(body_len).to_le_bytes());
    out
}

/// The body length a header announces, if it is one.
pub(crate) fn parse_header(bytes: &[u8; 8]) -> io::Result<usize> {
    let (magic, mut len) = bytes.split_at(4);
    if magic != MAGIC {
        return Err(invalid("not an agent-guard hook request"));
    }
    let len = take_u32(&mut len)? as usize;
    if len > MAX_BODY {
        return Err(invalid("a hook request larger than the server reads"));
    }
    Ok(len)
}

/// The user's home from `HOME`, when it is an absolute path.
pub(crate) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// The directory of the resident guard's sockets: `~/.agent-guard/run` (the guard's own
/// directory, which the sandbox protects from the agent's tools).
pub(crate) fn run_dir(home: &Path) -> PathBuf {
    home.join(".agent-guard").join("run")
}

/// Where the resident guard of the executable `binary` listens. The name carries the
/// executable's identity (device, inode, modification time), so an entry never talks to a
/// server of an executable that was since replaced. `None` when the path would not fit a
/// socket address.
pub(crate) fn socket_path(home: &Path, binary: &std::fs::Metadata) -> Option<PathBuf> {
    let path = run_dir(home).join(format!(
        "hook-{:x}-{:x}-{:x}.{:x}.sock",
        binary.dev(),
        binary.ino(),
        binary.mtime(),
        binary.mtime_nsec()
    ));
    (path.as_os_str().len() <= MAX_SOCKET_PATH).then_some(path)
}

/// Whether `dir` is a directory (not a symbolic link) owned by `uid` that nobody else may
/// enter or change: the only place a socket is trusted to be the user's own server.
pub(crate) fn is_private_dir(dir: &Path, uid: u32) -> bool {
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0)
}

/// Whether `dir`'s parent (`~/.agent-guard`) is ours and writable by nobody else, so the
/// private `run` directory below it cannot be swapped.
pub(crate) fn parent_is_safe(dir: &Path, uid: u32) -> bool {
    dir.parent().is_some_and(|parent| {
        std::fs::symlink_metadata(parent)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;

    fn sample() -> Request {
        Request {
            args: vec![
                "claude-hook".into(),
                "--policy".into(),
                "/p/x y.toml".into(),
            ],
            env: vec![
                "HOME=/home/u".into(),
                "EMPTY=".into(),
                OsString::from_vec(vec![0xff, b'=', 1]),
            ],
            umask: 0o022,
        }
    }

    #[test]
    fn a_request_round_trips() {
        let r = sample();
        assert_eq!(Request::decode(&r.encode()).unwrap(), r);
        let empty = Request {
            args: vec![],
            env: vec![],
            umask: 0,
        };
        assert_eq!(Request::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn every_truncation_and_extension_of_a_request_is_refused() {
        let body = sample().encode();
        for cut in 0..body.len() {
            assert!(Request::decode(&body[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = body.clone();
        longer.push(0);
        assert!(Request::decode(&longer).is_err());
    }

    #[test]
    fn a_count_or_length_beyond_the_body_is_refused_without_allocating_it() {
        let mut body = 0u32.to_le_bytes().to_vec();
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(Request::decode(&body).is_err());
        let mut body = 0u32.to_le_bytes().to_vec();
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(Request::decode(&body).is_err());
    }

    #[test]
    fn headers_carry_the_magic_and_a_capped_length() {
        assert_eq!(parse_header(&header(1234)).unwrap(), 1234);
        assert!(parse_header(&header(MAX_BODY + 1)).is_err());
        let mut wrong = header(1);
        wrong[0] = b'B';
        assert!(parse_header(&wrong).is_err());
    }

    #[test]
    fn a_long_home_gets_no_socket() {
        let meta = std::fs::metadata("/").unwrap();
        assert!(socket_path(Path::new("/home/u"), &meta).is_some());
        let long = format!("/{}", "h".repeat(80));
        assert!(socket_path(Path::new(&long), &meta).is_none());
    }

    #[test]
    fn only_a_private_directory_of_ones_own_is_trusted() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let uid = rustix::process::getuid().as_raw();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(is_private_dir(&run, uid));
        assert!(!is_private_dir(&run, uid + 1));
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert!(!is_private_dir(&run, uid));
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&run, &link).unwrap();
        assert!(!is_private_dir(&link, uid));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!parent_is_safe(&run, uid));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(parent_is_safe(&run, uid));
    }
}
