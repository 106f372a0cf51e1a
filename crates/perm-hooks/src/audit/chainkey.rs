//! The audit chain's key: each row's link is an HMAC-SHA256 under a key kept in the user's
//! own directory, so whoever can write the database but cannot read the key cannot rewrite
//! rows and recompute the links.

use std::fmt;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use hmac::{KeyInit as _, Mac as _};

use super::AuditRow;
use crate::error::Error;

/// Where the key lives, below `HOME`: next to the approval server's token and the grant key
/// (`~/.agent-guard/`, which the sandbox keeps the agent from writing, and whose keys it keeps
/// the agent from reading, inside a root too).
pub const AUDIT_KEY_FILE: &str = ".agent-guard/audit.key";

const KEY_LEN: usize = 32;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// An audit chain key and its public id (stored with each link, so that a row linked under
/// another key is told apart from a changed one).
#[derive(Clone)]
pub struct ChainKey {
    /// The HMAC state after the key (the pads are hashed once, not per row).
    mac: HmacSha256,
    id: String,
}

/// Never the key itself.
impl fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChainKey({})", self.id)
    }
}

fn key_err(path: &Path, message: impl Into<String>) -> Error {
    Error::AuditKey {
        path: path.display().to_string(),
        message: message.into(),
    }
}

impl ChainKey {
    /// A key from its bytes (tests, benches, and a fleet that distributes one key).
    pub fn from_bytes(key: &[u8]) -> Result<ChainKey, Error> {
        let mac = HmacSha256::new_from_slice(key).map_err(|e| Error::AuditKey {
            path: String::new(),
            message: e.to_string(),
        })?;
        let id = {
            use sha2::Digest as _;
            let mut h = sha2::Sha256::new();
            h.update(b"agent-guard audit key id\0");
            h.update(key);
            hex(h.finalize().get(..8).unwrap_or_default())
        };
        Ok(ChainKey { mac, id })
    }

    /// The key's public id: 16 hex digits of a hash of it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `~/.agent-guard/audit.key` ([`AUDIT_KEY_FILE`]). Only an absolute `HOME` counts (never
    /// the current directory, which is the project); no variable names another key file.
    pub fn default_path() -> Result<PathBuf, Error> {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute())
            .map(|h| h.join(AUDIT_KEY_FILE))
            .ok_or_else(|| Error::AuditKey {
                path: format!("~/{AUDIT_KEY_FILE}"),
                message: "HOME is not set (or not absolute): there is nowhere to keep the \
                          audit key"
                    .to_owned(),
            })
    }

    /// The key in `path`, created (32 random bytes, 0600, directory 0700) when there is none.
    /// An existing file must be private to this user (see [`ChainKey::load`]).
    pub fn load_or_create(path: &Path) -> Result<ChainKey, Error> {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(path),
            _ => ChainKey::load(path),
        }
    }

    /// The key in `path`: a regular file (not a symlink) of exactly 32 bytes, owned by this
    /// user, with no access for group or others, in a directory nobody else may write (they
    /// could swap the file) - the rules of the approval server's token.
    pub fn load(path: &Path) -> Result<ChainKey, Error> {
        check_private(path)?;
        let key = std::fs::read(path).map_err(|e| key_err(path, e.to_string()))?;
        if key.len() != KEY_LEN {
            return Err(key_err(
                path,
                format!(
                    "expected {KEY_LEN} bytes, found {}: not an audit key",
                    key.len()
                ),
            ));
        }
        ChainKey::from_bytes(&key)
    }

    /// The link of `row` after `prev`: HMAC-SHA256 over the previous link and every stored
    /// field (the encoding of [`super::chain_hash`], under its own version tag). Hex.
    pub fn link(&self, prev: &str, row: &AuditRow) -> String {
        let mut mac = self.mac.clone();
        super::encode_link(b"agent-guard audit v2 keyed", prev, row, &mut |b| {
            mac.update(b)
        });
        hex(&mac.finalize().into_bytes())
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        for nibble in [b >> 4, b & 15] {
            out.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    out
}

fn check_private(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let me = rustix::process::geteuid().as_raw();
    let meta = std::fs::symlink_metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            key_err(
                path,
                "there is no audit key: the guard creates it with the first audit row it \
                 writes as this user; without it the chain cannot be checked",
            )
        } else {
            key_err(path, e.to_string())
        }
    })?;
    if !meta.file_type().is_file() {
        return Err(key_err(path, "not a regular file (a symlink is refused)"));
    }
    if meta.uid() != me {
        return Err(key_err(
            path,
            format!("belongs to uid {}, not to you (uid {me})", meta.uid()),
        ));
    }
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(key_err(
            path,
            format!(
                "readable or writable by others (mode {:o}); `chmod 600` it",
                mode & 0o777
            ),
        ));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let d = std::fs::metadata(dir).map_err(|e| key_err(dir, e.to_string()))?;
        let sticky = d.permissions().mode() & 0o1000 != 0;
        if !((d.uid() == me || d.uid() == 0) && (d.permissions().mode() & 0o022 == 0 || sticky)) {
            return Err(key_err(
                path,
                format!(
                    "its directory `{}` may be written by someone else; keep the key in a \
                     directory of your own (0700)",
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Writes a new key to a private temporary file and links it into place, so a second process
/// creating the key at the same moment reads a whole key (the winner's), never a partial one.
fn create(path: &Path) -> Result<ChainKey, Error> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| key_err(path, e.to_string()))?;
    let mut key = [0u8; KEY_LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(|e| key_err(path, e.to_string()))?;
    let tmp = dir.join(format!(
        ".audit.key.{}.{}",
        std::process::id(),
        hex(key.get(..4).unwrap_or_default())
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&key).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match written {
        Ok(()) => ChainKey::from_bytes(&key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => ChainKey::load(path),
        Err(e) => Err(key_err(path, e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_created_private_and_read_back_the_same() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/audit.key");
        let a = ChainKey::load_or_create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dmode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dmode & 0o777, 0o700);
        let b = ChainKey::load_or_create(&path).unwrap();
        assert_eq!(a.id(), b.id());
        // No stray temporary file is left next to it.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn processes_creating_the_key_at_once_all_get_the_same_whole_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/audit.key");
        let ids: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| ChainKey::load_or_create(&path).unwrap().id().to_owned()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
        assert_eq!(std::fs::read(&path).unwrap().len(), KEY_LEN);
    }

    #[test]
    fn a_key_others_may_read_or_a_symlink_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = dir.path().join("audit.key");
        ChainKey::load_or_create(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = ChainKey::load(&path).unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.key");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let err = ChainKey::load_or_create(&link).unwrap_err().to_string();
        assert!(err.contains("symlink"), "{err}");
        std::fs::write(dir.path().join("short.key"), b"abc").unwrap();
        std::fs::set_permissions(
            dir.path().join("short.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let err = ChainKey::load(&dir.path().join("short.key"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected 32 bytes"), "{err}");
    }

    #[test]
    fn links_depend_on_the_key() {
        let row = AuditRow::denied("s", 1, "lead", "Bash", perm_rules::Decision::Deny, "x", "m");
        let a = ChainKey::from_bytes(&[1; 32]).unwrap();
        let b = ChainKey::from_bytes(&[2; 32]).unwrap();
        assert_ne!(a.link("", &row), b.link("", &row));
        assert_ne!(a.link("", &row), super::super::chain_hash("", &row));
        assert_eq!(a.link("p", &row), a.link("p", &row));
        assert_ne!(a.id(), b.id());
    }
}
