//! The file-system half of the confinement profile, as data plus one interpreter:
//!
//! - directories read *entry by entry* (`/etc`, toolchain trees), so that secrets inside them
//!   (`/etc/shadow`, `~/.cargo/credentials.toml`) stay unreadable while the rest is readable;
//! - or, for the configured filtered trees (`/etc`), *masked*: read whole through a read-only
//!   overlay whose top layer whites the secrets out (one rule instead of one per entry; the
//!   trampoline mounts it in the run's mount namespace, and reads the tree entry by entry where
//!   it cannot);
//! - the toolchains on `PATH`: each `PATH` directory that is not already readable, widened to its
//!   install tree by a table (`~/.cargo/bin` -> `~/.cargo` and `~/.rustup`), read and execute only.
//!
//! Everything here runs in the runner, before the trampoline starts, and yields plain path lists
//! the trampoline turns into Landlock rules.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::env::glob_match;

/// One toolchain: when a `PATH` directory lies at or below `bin` (relative to `$HOME`), the
/// `trees` (relative to `$HOME`) become readable and executable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// The `PATH` directory (or a parent of it) relative to `$HOME`, e.g. `.cargo/bin`.
    pub bin: PathBuf,
    /// The install trees it needs, relative to `$HOME`, e.g. `.cargo`, `.rustup`.
    pub trees: Vec<PathBuf>,
}

/// The default toolchain table. A tree holding credentials is only readable entry by entry,
/// minus the `hidden_paths` (e.g. `~/.cargo/credentials.toml`).
pub(crate) fn default_toolchains() -> Vec<Toolchain> {
    let t = |bin: &str, trees: &[&str]| Toolchain {
        bin: PathBuf::from(bin),
        trees: trees.iter().map(PathBuf::from).collect(),
    };
    vec![
        t(".cargo/bin", &[".cargo", ".rustup"]),
        t(".rustup", &[".rustup"]),
        t(".pyenv", &[".pyenv"]),
        t(".rbenv", &[".rbenv"]),
        t(".nvm", &[".nvm"]),
        t(".volta", &[".volta"]),
        t(".bun/bin", &[".bun"]),
        t(".deno/bin", &[".deno"]),
        t(
            ".local/bin",
            &[".local/bin", ".local/lib", ".local/share/pipx"],
        ),
        t("go/bin", &["go/bin"]),
        t(".go/bin", &[".go"]),
        t(".sdkman", &[".sdkman"]),
    ]
}

/// The default secrets: never readable, even below a directory that is read entry by entry.
/// `~` is `$HOME`; `*` matches within one path component.
pub(crate) fn default_hidden_paths() -> Vec<String> {
    [
        "/etc/shadow",
        "/etc/shadow-",
        "/etc/gshadow",
        "/etc/gshadow-",
        "/etc/sudoers",
        "/etc/sudoers.d",
        "/etc/ssh/ssh_host_*_key",
        "/etc/ssl/private",
        "/etc/security/opasswd",
        "/etc/krb5.keytab",
        "/etc/ipsec.secrets",
        "/etc/ppp/chap-secrets",
        "/etc/ppp/pap-secrets",
        "/etc/wireguard",
        "/etc/NetworkManager/system-connections",
        "/etc/libvirt",
        "/etc/credstore",
        "/etc/credstore.encrypted",
        "/etc/docker/key.json",
        "~/.cargo/credentials",
        "~/.cargo/credentials.toml",
        "~/.local/share/keyrings",
        "~/.ssh",
        "~/.aws",
        "~/.gnupg",
        "~/.kube",
        "~/.docker/config.json",
        "~/.config/gh",
        "~/.netrc",
        "~/.npmrc",
        "~/.pypirc",
        "~/.git-credentials",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect()
}

/// Paths of the profile, ready for Landlock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FsProfile {
    /// Readable (and executable) beneath.
    pub(crate) read: Vec<PathBuf>,
    /// Directories whose listing alone is readable (the parents of entry-by-entry reads).
    pub(crate) list_only: Vec<PathBuf>,
    /// Toolchain directories that were added, for the report.
    pub(crate) toolchains: Vec<PathBuf>,
    /// The entries of `read` and `toolchains` listed from their directory, by kind (`true`: a
    /// directory, else what a file's rule may grant), so the trampoline need not ask the kernel
    /// again. An entry that changes kind before the run gets a narrower rule or none: the
    /// kernel's check of the rule's rights against the file still applies.
    pub(crate) listed: std::collections::HashMap<PathBuf, bool>,
    /// Why a `PATH` entry was left out.
    pub(crate) notes: Vec<String>,
    /// Trees read whole with their secrets whited out (see [`MaskedTree`]).
    pub(crate) masked: Vec<MaskedTree>,
}

/// A directory read whole through a read-only overlay whose top layer whites out its secrets:
/// the names stay hidden whatever replaces them on the host during the run (a whiteout hides a
/// name, not a file), and one Landlock rule covers the rest instead of one per entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MaskedTree {
    /// The directory (canonical).
    pub(crate) root: PathBuf,
    /// The names to white out, relative to `root`: every fixed name a hidden pattern gives
    /// (present or not), and what a `*` matches now. Only below directories that exist as
    /// directories (a whiteout's parent in the top layer would replace a link or a file).
    pub(crate) whiteouts: Vec<PathBuf>,
    /// Every hidden pattern (a link in the tree may point anywhere): where no overlay can be
    /// mounted, the tree is read entry by entry around them instead ([`entry_by_entry`]).
    pub(crate) hidden: Vec<String>,
}

impl FsProfile {
    /// The readable paths (`read`, then `toolchains`) by the rule each gets: read whole (a kind
    /// the listing did not tell), directories, files.
    pub(crate) fn readable_by_kind(&self) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
        let (mut whole, mut dirs, mut files) = (Vec::new(), Vec::new(), Vec::new());
        for path in self.read.iter().chain(&self.toolchains) {
            match self.listed.get(path) {
                Some(true) => dirs.push(path.clone()),
                Some(false) => files.push(path.clone()),
                None => whole.push(path.clone()),
            }
        }
        (whole, dirs, files)
    }
}

/// Expands a leading `~/` to `home`; `None` when the pattern needs a home and there is none.
fn expand(pattern: &str, home: Option<&Path>) -> Option<String> {
    match pattern.strip_prefix("~/") {
        Some(rest) => home.map(|h| format!("{}/{rest}", h.display())),
        None => Some(pattern.to_string()),
    }
}

fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty())
}

/// How `pattern` relates to `path`, component by component.
#[derive(Debug, PartialEq, Eq)]
enum Relation {
    /// The pattern names `path` (or an ancestor of it): hide it.
    Hides,
    /// The pattern names something below `path`: read `path` entry by entry.
    Below,
    Unrelated,
}

/// True when a pattern's component `pc` names the path component `qc` (`*` within it).
fn component_matches(pc: &str, qc: &str) -> bool {
    pc == qc || (pc.contains('*') && glob_match(pc, qc))
}

fn relate(pattern: &str, path: &Path) -> Relation {
    // Called for every entry of a filtered directory against every hidden pattern: no
    // allocation on this path.
    let text = path.to_string_lossy();
    let (mut p, mut q) = (components(pattern), components(&text));
    loop {
        match (p.next(), q.next()) {
            (Some(pc), Some(qc)) => {
                if !component_matches(pc, qc) {
                    return Relation::Unrelated;
                }
            }
            (None, _) => return Relation::Hides,
            (Some(_), None) => return Relation::Below,
        }
    }
}

/// Adds `dir` to `profile`: whole when no hidden pattern touches it, entry by entry (recursing
/// only where a pattern lies below) otherwise. A directory that cannot be listed while a secret
/// lies below it is left out: fail closed.
///
/// `hidden` is every pattern (a symlink's target may lie anywhere); `near` the ones that may
/// still relate to `dir`. An entry is related only to the patterns that lie below its directory
/// (a pattern that parts from the directory parts from everything in it), so each level matches
/// against those few rather than every pattern.
///
/// `is_dir` is the kind of `dir` when its listing told it.
fn add_filtered(
    dir: &Path,
    is_dir: Option<bool>,
    hidden: &[String],
    near: &[&str],
    profile: &mut FsProfile,
    depth: u32,
) {
    let mut below: Vec<&str> = Vec::new();
    for pattern in near {
        match relate(pattern, dir) {
            Relation::Hides => return,
            Relation::Below => below.push(pattern),
            Relation::Unrelated => {}
        }
    }
    if below.is_empty() {
        profile.read.push(dir.to_path_buf());
        if let Some(is_dir) = is_dir {
            profile.listed.insert(dir.to_path_buf(), is_dir);
        }
        return;
    }
    // The patterns are a handful of components deep; a deeper tree is a configuration error.
    if depth > 16 || !dir.is_dir() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    profile.list_only.push(dir.to_path_buf());
    let mut names: Vec<(PathBuf, Option<std::fs::FileType>)> = entries
        .filter_map(|e| e.ok())
        .map(|e| (e.path(), e.file_type().ok()))
        .collect();
    // By the names' bytes: the order of one directory's entries as paths, without comparing
    // them component by component.
    names.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
    // Each pattern below `dir` with its component at an entry's depth: an entry can relate
    // only to the patterns whose component there matches its name, so only those are passed
    // on (matching every entry against every pattern in full was most of the profile's cost).
    let depth_of_entries = components(&dir.to_string_lossy()).count();
    let next: Vec<(&str, &str)> = below
        .iter()
        .filter_map(|p| Some((*p, components(p).nth(depth_of_entries)?)))
        .collect();
    for (entry, kind) in names {
        let name = entry
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let related: Vec<&str> = next
            .iter()
            .filter(|(_, c)| component_matches(c, &name))
            .map(|(p, _)| *p)
            .collect();
        let is_dir = match kind {
            // A rule follows a symlink to its target: a link to a secret is a secret.
            Some(kind) if kind.is_symlink() => match std::fs::canonicalize(&entry) {
                Ok(target) if !hidden.iter().any(|p| relate(p, &target) == Relation::Hides) => {
                    std::fs::metadata(&target).ok().map(|m| m.is_dir())
                }
                _ => continue,
            },
            kind => kind.map(|k| k.is_dir()),
        };
        add_filtered(&entry, is_dir, hidden, &related, profile, depth + 1);
    }
}

/// True when `path` is `/`, `home` or an ancestor of `home`: granting it would expose the home.
fn too_wide(path: &Path, home: Option<&Path>) -> bool {
    path.parent().is_none() || home.is_some_and(|h| h.starts_with(path))
}

/// The entries of `dir` (names) that match the pattern component `pc`; `None` when it cannot be
/// listed.
fn matching_names(dir: &Path, pc: &str) -> Option<Vec<String>> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| component_matches(pc, name))
        .collect();
    names.sort();
    Some(names)
}

/// Adds to `out` the whiteouts (relative to the tree) that the rest of a pattern, `rest`, names
/// below `dir` (reached as `rel`). `None`: the tree cannot be masked (a level is a link, which a
/// directory in the top layer would replace, or cannot be read).
fn whiteouts_below(dir: &Path, rel: &Path, rest: &[&str], out: &mut Vec<PathBuf>) -> Option<()> {
    let (first, tail) = rest.split_first()?;
    // A whiteout is made below the top layer's root: a name that leaves it is not one.
    if matches!(*first, "." | "..") {
        return None;
    }
    let names = if first.contains('*') {
        matching_names(dir, first)?
    } else {
        vec![(*first).to_string()]
    };
    for name in names {
        if tail.is_empty() {
            out.push(rel.join(&name));
            continue;
        }
        match std::fs::symlink_metadata(dir.join(&name)) {
            Ok(meta) if meta.is_dir() => {
                whiteouts_below(&dir.join(&name), &rel.join(&name), tail, out)?;
            }
            Ok(meta) if meta.file_type().is_symlink() => return None,
            // Nothing lies below a file, nor yet below a name that does not exist.
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return None,
        }
    }
    Some(())
}

/// The mount points strictly below `root`, from `/proc/self/mountinfo`; `None` when it cannot
/// be read.
fn has_mounts_below(root: &Path) -> Option<bool> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    Some(table.lines().any(|line| {
        line.split(' ')
            .nth(4)
            .map(unescape_mount_point)
            .is_some_and(|point| point != root && point.starts_with(root))
    }))
}

/// A mount point as the kernel writes it in `mountinfo` (space, tab, newline and backslash as
/// `\ooo`).
fn unescape_mount_point(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| b == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0')));
        match octal.and_then(|n| u8::try_from(n).ok()) {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&out),
    ))
}

/// How `root` (canonical) can be masked against `hidden`: `None` when it cannot (a pattern hides
/// it whole, none lies below it, a mount lies below it, which an overlay of the tree would
/// cover, or a level of a pattern is a link), and it is then read entry by entry.
fn mask_plan(root: &Path, hidden: &[String]) -> Option<MaskedTree> {
    let mut below = Vec::new();
    for pattern in hidden {
        match relate(pattern, root) {
            Relation::Hides => return None,
            Relation::Below => below.push(pattern.as_str()),
            Relation::Unrelated => {}
        }
    }
    if below.is_empty() || has_mounts_below(root) != Some(false) {
        return None;
    }
    let depth = components(&root.to_string_lossy()).count();
    let mut whiteouts = Vec::new();
    for pattern in below {
        let rest: Vec<&str> = components(pattern).skip(depth).collect();
        whiteouts_below(root, Path::new(""), &rest, &mut whiteouts)?;
    }
    whiteouts.sort();
    whiteouts.dedup();
    Some(MaskedTree {
        root: root.to_path_buf(),
        whiteouts,
        hidden: hidden.to_vec(),
    })
}

/// `tree` read entry by entry around its secrets, where it cannot be masked.
pub(crate) fn entry_by_entry(tree: &MaskedTree) -> FsProfile {
    let mut profile = FsProfile::default();
    let all: Vec<&str> = tree.hidden.iter().map(String::as_str).collect();
    add_filtered(&tree.root, None, &tree.hidden, &all, &mut profile, 0);
    profile
}

/// Builds the file-system profile: each of `filtered` masked (when `mask`; see [`MaskedTree`])
/// or read entry by entry minus `hidden`, and the toolchains on `path_var` (the child's `PATH`)
/// that `system` does not already cover.
pub(crate) fn build(
    filtered: &[PathBuf],
    hidden: &[String],
    mask: bool,
    toolchains: &[Toolchain],
    system: &[PathBuf],
    path_var: Option<&str>,
    home: Option<&Path>,
) -> FsProfile {
    let home = home.and_then(|h| std::fs::canonicalize(h).ok());
    let home = home.as_deref();
    let hidden: Vec<String> = hidden.iter().filter_map(|p| expand(p, home)).collect();
    let all: Vec<&str> = hidden.iter().map(String::as_str).collect();
    let mut profile = FsProfile::default();
    for dir in filtered {
        if let Ok(dir) = std::fs::canonicalize(dir) {
            match mask.then(|| mask_plan(&dir, &hidden)).flatten() {
                Some(tree) => profile.masked.push(tree),
                None => add_filtered(&dir, None, &hidden, &all, &mut profile, 0),
            }
        }
    }
    let covered = |p: &Path, profile: &FsProfile| {
        system.iter().any(|s| p.starts_with(s))
            || profile.read.iter().any(|s| p.starts_with(s))
            || profile.masked.iter().any(|m| p.starts_with(&m.root))
            || profile.toolchains.iter().any(|s| p.starts_with(s))
    };
    for entry in path_var.unwrap_or_default().split(':') {
        let entry = Path::new(entry);
        // A relative entry (`.`, `bin`) names the cwd's files, which the roots already govern.
        if !entry.is_absolute() || entry.components().any(|c| c == Component::ParentDir) {
            continue;
        }
        let Ok(dir) = std::fs::canonicalize(entry) else {
            continue;
        };
        if covered(&dir, &profile) {
            continue;
        }
        if too_wide(&dir, home) {
            profile.notes.push(format!(
                "PATH entry `{}` left unreadable: it would expose the home directory",
                dir.display()
            ));
            continue;
        }
        let rel = home.and_then(|h| dir.strip_prefix(h).ok());
        let trees: Vec<PathBuf> =
            match rel.and_then(|r| toolchains.iter().find(|t| r.starts_with(&t.bin))) {
                Some(t) => t
                    .trees
                    .iter()
                    .filter_map(|tree| home.map(|h| h.join(tree)))
                    .filter_map(|p| std::fs::canonicalize(p).ok())
                    .collect(),
                None => vec![dir],
            };
        for tree in trees {
            if covered(&tree, &profile) || too_wide(&tree, home) {
                continue;
            }
            let before = profile.read.len();
            add_filtered(&tree, None, &hidden, &all, &mut profile, 0);
            let added: Vec<PathBuf> = profile.read.drain(before..).collect();
            profile.toolchains.extend(added);
        }
    }
    profile
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }

    /// A fresh `etc` holding `files` (paths below it), and the temp dir that holds it.
    fn etc_with(files: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let etc = std::fs::canonicalize(t.path()).unwrap().join("etc");
        for file in files {
            touch(&etc.join(file));
        }
        (t, etc)
    }

    /// The patterns `names` below `tree`.
    fn below(tree: &Path, names: &[&str]) -> Vec<String> {
        names
            .iter()
            .map(|n| format!("{}/{n}", tree.display()))
            .collect()
    }

    /// The profile of `tree` filtered by `hidden` alone (no toolchains, no `PATH`).
    fn filtered(tree: &Path, hidden: &[String], mask: bool) -> FsProfile {
        build(&[tree.to_path_buf()], hidden, mask, &[], &[], None, None)
    }

    #[test]
    fn relations_are_component_wise() {
        let hides = |p: &str, q: &str| relate(p, Path::new(q));
        assert_eq!(hides("/etc/shadow", "/etc/shadow"), Relation::Hides);
        assert_eq!(hides("/etc/shadow", "/etc/shadow.bak"), Relation::Unrelated);
        assert_eq!(hides("/etc/shadow", "/etc"), Relation::Below);
        assert_eq!(hides("/etc/sudoers.d", "/etc/sudoers.d/x"), Relation::Hides);
        assert_eq!(
            hides("/etc/ssh/ssh_host_*_key", "/etc/ssh/ssh_host_rsa_key"),
            Relation::Hides
        );
        assert_eq!(
            hides("/etc/ssh/ssh_host_*_key", "/etc/ssh/ssh_host_rsa_key.pub"),
            Relation::Unrelated
        );
        assert_eq!(
            hides("/etc/ssh/ssh_host_*_key", "/etc/ssh"),
            Relation::Below
        );
        assert_eq!(
            hides("/etc/ssh/ssh_host_*_key", "/usr"),
            Relation::Unrelated
        );
    }

    /// Every default secret of /etc is hidden by the default list, and its neighbours are not.
    #[test]
    fn each_default_hidden_path_hides_itself_only() {
        let home = Path::new("/home/u");
        for pattern in default_hidden_paths() {
            let path = expand(&pattern, Some(home)).unwrap().replace('*', "rsa");
            assert_eq!(
                relate(&pattern.replace('~', "/home/u"), Path::new(&path)),
                Relation::Hides,
                "{pattern}"
            );
            let sibling = format!("{path}.notsecret-sibling");
            assert_eq!(
                relate(&pattern.replace('~', "/home/u"), Path::new(&sibling)),
                Relation::Unrelated,
                "{pattern}"
            );
        }
    }

    #[test]
    fn a_tree_is_read_entry_by_entry_around_a_secret() {
        let (_t, etc) = etc_with(&[
            "passwd",
            "shadow",
            "ssh/ssh_config",
            "ssh/ssh_host_ed25519_key",
            "ssh/ssh_host_ed25519_key.pub",
            "apt/sources.list",
        ]);
        let p = filtered(&etc, &below(&etc, &["shadow", "ssh/ssh_host_*_key"]), false);
        let mut read = p.read.clone();
        read.sort();
        assert_eq!(
            read,
            vec![
                etc.join("apt"),
                etc.join("passwd"),
                etc.join("ssh/ssh_config"),
                etc.join("ssh/ssh_host_ed25519_key.pub"),
            ]
        );
        assert_eq!(p.list_only, vec![etc.clone(), etc.join("ssh")]);
    }

    #[test]
    fn listed_entries_carry_their_kind_and_a_link_its_target_s() {
        let (_t, etc) = etc_with(&["shadow", "passwd", "apt/sources.list"]);
        std::os::unix::fs::symlink(etc.join("apt"), etc.join("apt.link")).unwrap();
        std::os::unix::fs::symlink(etc.join("passwd"), etc.join("passwd.link")).unwrap();
        let hidden = below(&etc, &["shadow"]);
        let p = filtered(&etc, &hidden, false);
        let mut kinds: Vec<(&Path, bool)> =
            p.listed.iter().map(|(k, v)| (k.as_path(), *v)).collect();
        kinds.sort();
        assert_eq!(
            kinds,
            vec![
                (etc.join("apt").as_path(), true),
                (etc.join("apt.link").as_path(), true),
                (etc.join("passwd").as_path(), false),
                (etc.join("passwd.link").as_path(), false),
            ]
        );
        // A directory read whole, not listed from a parent, has no kind: the trampoline asks.
        let whole = filtered(&etc.join("apt"), &hidden, false);
        assert_eq!(whole.read, vec![etc.join("apt")]);
        assert!(whole.listed.is_empty());
    }

    #[test]
    fn a_symlink_to_a_secret_is_hidden_too() {
        let (_t, etc) = etc_with(&["shadow", "hosts"]);
        std::os::unix::fs::symlink(etc.join("shadow"), etc.join("innocent")).unwrap();
        std::os::unix::fs::symlink(etc.join("hosts"), etc.join("hosts.link")).unwrap();
        std::os::unix::fs::symlink(etc.join("missing"), etc.join("dangling")).unwrap();
        let p = filtered(&etc, &below(&etc, &["shadow"]), false);
        let mut read = p.read.clone();
        read.sort();
        assert_eq!(read, vec![etc.join("hosts"), etc.join("hosts.link")]);
    }

    #[test]
    fn toolchains_on_path_widen_to_their_install_trees() {
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap();
        touch(&home.join(".cargo/bin/cargo"));
        touch(&home.join(".cargo/credentials.toml"));
        touch(&home.join(".cargo/registry/index"));
        touch(&home.join(".rustup/toolchains/x/bin/rustc"));
        touch(&home.join(".ssh/id_ed25519"));
        touch(&home.join("tools/bin/mytool"));
        let path = format!(
            "{h}/.cargo/bin:{h}/tools/bin:relative:/usr/bin:{h}",
            h = home.display()
        );
        let p = build(
            &[],
            &default_hidden_paths(),
            false,
            &default_toolchains(),
            &[PathBuf::from("/usr")],
            Some(&path),
            Some(&home),
        );
        let mut got = p.toolchains.clone();
        got.sort();
        assert_eq!(
            got,
            vec![
                home.join(".cargo/bin"),
                home.join(".cargo/registry"),
                home.join(".rustup"),
                home.join("tools/bin"),
            ]
        );
        assert!(!p.read.iter().any(|r| r.ends_with("credentials.toml")));
        assert!(
            !p.read
                .iter()
                .chain(&p.toolchains)
                .any(|r| r.starts_with(home.join(".ssh")))
        );
        assert_eq!(p.notes.len(), 1, "{:?}", p.notes);
        assert!(p.notes[0].contains("home directory"));
    }

    #[test]
    fn a_symlinked_path_entry_is_resolved() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        touch(&base.join("real/bin/x"));
        std::os::unix::fs::symlink(base.join("real/bin"), base.join("link")).unwrap();
        let path = format!("{}", base.join("link").display());
        let p = build(
            &[],
            &[],
            false,
            &[],
            &[],
            Some(&path),
            Some(&base.join("nohome")),
        );
        assert_eq!(p.toolchains, vec![base.join("real/bin")]);
    }

    /// The secrets of a masked tree are whited out by name: fixed names whether present or not,
    /// what a `*` matches now, and nothing below a directory that does not exist.
    #[test]
    fn a_tree_is_masked_by_names_and_read_whole() {
        let (_t, etc) = etc_with(&[
            "passwd",
            "shadow",
            "ssh/ssh_host_ed25519_key",
            "ssh/ssh_host_ed25519_key.pub",
            "ssl/private/k.pem",
        ]);
        let hidden = below(
            &etc,
            &[
                "shadow",
                "gshadow",
                "ssh/ssh_host_*_key",
                "ssl/private",
                "nm/system-connections",
            ],
        );
        let p = filtered(&etc, &hidden, true);
        let whiteouts: Vec<&str> = p.masked[0]
            .whiteouts
            .iter()
            .map(|w| w.to_str().unwrap())
            .collect();
        assert_eq!(
            whiteouts,
            [
                "gshadow",
                "shadow",
                "ssh/ssh_host_ed25519_key",
                "ssl/private"
            ]
        );
        assert_eq!(p.masked[0].root, etc);
        assert_eq!(p.masked[0].hidden, hidden);
        assert!(p.read.is_empty() && p.list_only.is_empty(), "{p:?}");
        // Where it cannot be masked, the same tree is read entry by entry around the secrets.
        let listed = entry_by_entry(&p.masked[0]);
        let unmasked = filtered(&etc, &hidden, false);
        assert_eq!(listed.read, unmasked.read);
        assert_eq!(listed.list_only, unmasked.list_only);
        assert!(listed.read.contains(&etc.join("passwd")));
        assert!(!listed.read.contains(&etc.join("shadow")));
    }

    /// A link on a secret's way (a whiteout's directory would replace it), a pattern that hides
    /// the tree itself, or one that leaves it: no overlay.
    #[test]
    fn a_link_on_a_secret_s_way_or_a_hidden_tree_is_not_masked() {
        let (_t, etc) = etc_with(&["passwd"]);
        let elsewhere = etc.parent().unwrap().join("elsewhere");
        touch(&elsewhere.join("private/k.pem"));
        std::os::unix::fs::symlink(&elsewhere, etc.join("ssl")).unwrap();
        let p = filtered(&etc, &below(&etc, &["ssl/private"]), true);
        assert!(p.masked.is_empty(), "{p:?}");
        assert!(p.read.contains(&etc.join("passwd")), "{p:?}");
        let p = filtered(&etc, &[format!("{}", etc.display())], true);
        assert!(p.masked.is_empty() && p.read.is_empty(), "{p:?}");
        // A name that would leave the tree is no whiteout: entry by entry.
        touch(&etc.join("sub/f"));
        let p = filtered(&etc, &below(&etc, &["sub/../../x"]), true);
        assert!(p.masked.is_empty(), "{p:?}");
    }

    #[test]
    fn mounts_below_a_tree_are_found_in_the_mount_table() {
        assert_eq!(has_mounts_below(Path::new("/")), Some(true));
        let t = tempfile::tempdir().unwrap();
        let fresh = std::fs::canonicalize(t.path()).unwrap();
        assert_eq!(has_mounts_below(&fresh), Some(false));
        assert_eq!(
            unescape_mount_point("/a\\040b\\134c\\0"),
            PathBuf::from("/a b\\c\\0")
        );
    }
}
