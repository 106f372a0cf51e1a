//! Which mounts below a root a path may cross.
//!
//! A mount below a root is a window: a bind mount of `~/.ssh` or of `/` at `proj/x` puts what
//! is outside the roots inside them. So a path whose object is on another mount than its root's
//! is refused, unless that mount cannot be a window onto anything: a *fresh scratch filesystem*
//! (a filesystem kind in [`SCRATCH_FILESYSTEMS`], created empty by its own mount), mounted at
//! its own root (`/`: not a bind of one of its subdirectories), directly on the root's own
//! filesystem, below the root, and mounted nowhere else (the same device under another mount
//! point would make it a window onto that place, e.g. a bind of `/dev/shm` or of
//! `$XDG_RUNTIME_DIR`). That is a build directory on a tmpfs (`mount -t tmpfs tmpfs target`).
//!
//! The facts come from `/proc/self/mountinfo`, read only when a path crosses a mount (never on
//! the fast path), bounded, without blocking, and refused whole when any line does not parse.
//! The agent cannot mount in the guard's mount namespace; what it can do is make symlinks and
//! rename directories, so the race-free opens do not trust the path: they open the mount
//! point's parent beneath the root without crossing any mount, cross the one name, and compare
//! the fd's mount id and device with the mount judged here before opening anything below it.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use crate::head::{Head, read_head};
use crate::sandbox::MountKey;

/// A filesystem kind whose every mount is a new, empty filesystem of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchFilesystem {
    /// The kind as `/proc/self/mountinfo` names it.
    pub fstype: &'static str,
    /// Why a mount of it shows nothing from elsewhere.
    pub why: &'static str,
}

/// The filesystem kinds a path may cross into below a root (see the module documentation for
/// the other conditions). Disk filesystems are not here: their mount shows whatever the device
/// holds; nor are `overlay` (its lower layers are other directories) or FUSE (its content is a
/// program's).
pub const SCRATCH_FILESYSTEMS: &[ScratchFilesystem] = &[
    ScratchFilesystem {
        fstype: "tmpfs",
        why: "memory-backed; each mount starts empty",
    },
    ScratchFilesystem {
        fstype: "ramfs",
        why: "memory-backed without a size limit; each mount starts empty",
    },
];

const MOUNTINFO: &str = "/proc/self/mountinfo";

/// The longest mount table read; a longer one is refused rather than judged from a part.
const MOUNTINFO_LIMIT: usize = 1024 * 1024;

/// A scratch mount a checked path crosses into: where it is mounted and which mount it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Crossing {
    /// The mount point (physical, below the root).
    pub(crate) point: PathBuf,
    /// The mount's id and device, as `statx` reports them for objects on it.
    pub(crate) key: MountKey,
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MountLine {
    id: u64,
    parent: u64,
    dev: (u32, u32),
    root: PathBuf,
    point: PathBuf,
    fstype: String,
}

/// Whether the object `resolved` on `mount` may be reached from `root` (whose directory is on
/// `root_mount`); the refusal says why not, for a person to act on.
pub(crate) fn scratch_crossing(
    mount: MountKey,
    root_mount: MountKey,
    resolved: &Path,
    root: &Path,
) -> Result<Crossing, String> {
    let text = match read_head(Path::new(MOUNTINFO), MOUNTINFO_LIMIT + 1) {
        Ok(Head::Bytes(text)) if text.len() <= MOUNTINFO_LIMIT => text,
        Ok(Head::Bytes(_)) => {
            return Err(format!(
                "the mount table `{MOUNTINFO}` is longer than {MOUNTINFO_LIMIT} bytes, so the mount cannot be judged"
            ));
        }
        Ok(_) => return Err(format!("the mount table `{MOUNTINFO}` cannot be read")),
        Err(err) => {
            return Err(format!(
                "the mount table `{MOUNTINFO}` cannot be read: {err}"
            ));
        }
    };
    let table = parse_table(&text)?;
    judge(&table, mount, root_mount, resolved, root)
}

fn judge(
    table: &[MountLine],
    mount: MountKey,
    root_mount: MountKey,
    resolved: &Path,
    root: &Path,
) -> Result<Crossing, String> {
    let (id, major, minor) = mount;
    if id == 0 || root_mount.0 == 0 {
        return Err(
            "the kernel does not report mount ids (statx STATX_MNT_ID, Linux 5.8), so the mount cannot be judged"
                .to_owned(),
        );
    }
    let line = table
        .iter()
        .find(|line| line.id == id)
        .ok_or_else(|| format!("mount {id} is not in the mount table `{MOUNTINFO}`"))?;
    let point = line.point.display();
    if line.dev != (major, minor) {
        return Err(format!(
            "the mount table gives mount {id} (at `{point}`) another device than the file's"
        ));
    }
    if line.root != Path::new("/") {
        return Err(format!(
            "`{point}` is a bind mount of the directory `{}` of a `{}` filesystem, a window onto it",
            line.root.display(),
            line.fstype
        ));
    }
    if !SCRATCH_FILESYSTEMS.iter().any(|s| s.fstype == line.fstype) {
        return Err(format!(
            "the mount at `{point}` is a `{}` filesystem, not a scratch one: it shows what is stored elsewhere",
            line.fstype
        ));
    }
    if !(line.point.starts_with(root) && line.point != root && resolved.starts_with(&line.point)) {
        return Err(format!(
            "the {} mounted at `{point}` is not where the path crosses into it below the root",
            line.fstype
        ));
    }
    if line.parent != root_mount.0 {
        return Err(format!(
            "the {} at `{point}` is mounted on another mount, not on the root's own filesystem",
            line.fstype
        ));
    }
    if let Some(other) = table
        .iter()
        .find(|other| other.id != line.id && other.dev == line.dev)
    {
        return Err(format!(
            "the {} at `{point}` is also mounted at `{}`, so it is a window onto that place",
            line.fstype,
            other.point.display()
        ));
    }
    Ok(Crossing {
        point: line.point.clone(),
        key: mount,
    })
}

fn parse_table(text: &[u8]) -> Result<Vec<MountLine>, String> {
    text.split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            parse_line(line).ok_or_else(|| {
                format!(
                    "a line of the mount table `{MOUNTINFO}` does not parse: `{}`",
                    String::from_utf8_lossy(line)
                )
            })
        })
        .collect()
}

/// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw` (proc(5)): id, parent id,
/// device, root of the mount in its filesystem, mount point, options, optional fields up to
/// `-`, filesystem type, source, superblock options.
fn parse_line(line: &[u8]) -> Option<MountLine> {
    let mut fields = line.split(|b| *b == b' ');
    let id = number(fields.next()?)?;
    let parent = number(fields.next()?)?;
    let (major, minor) = {
        let dev = fields.next()?;
        let colon = dev.iter().position(|b| *b == b':')?;
        (
            u32::try_from(number(dev.get(..colon)?)?).ok()?,
            u32::try_from(number(dev.get(colon + 1..)?)?).ok()?,
        )
    };
    let root = unescape(fields.next()?)?;
    let point = unescape(fields.next()?)?;
    let _options = fields.next()?;
    // Optional fields (`shared:1`, `master:2`, ...) end at a lone `-`.
    loop {
        if fields.next()? == b"-" {
            break;
        }
    }
    let fstype = String::from_utf8(unescape_bytes(fields.next()?)?).ok()?;
    if fstype.is_empty() || !root.is_absolute() || !point.is_absolute() {
        return None;
    }
    Some(MountLine {
        id,
        parent,
        dev: (major, minor),
        root: root.to_owned(),
        point: point.to_owned(),
        fstype,
    })
}

fn number(field: &[u8]) -> Option<u64> {
    if field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(field).ok()?.parse().ok()
}

fn unescape(field: &[u8]) -> Option<PathBuf> {
    Some(PathBuf::from(OsStr::from_bytes(&unescape_bytes(field)?)))
}

/// The kernel writes a space, tab, newline and backslash in a path as `\ooo` (octal).
fn unescape_bytes(field: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(field.len());
    let mut bytes = field.iter();
    while let Some(&b) = bytes.next() {
        if b == b'\\' {
            let mut value = 0u32;
            for _ in 0..3 {
                let digit = *bytes.next()?;
                if !(b'0'..=b'7').contains(&digit) {
                    return None;
                }
                value = value * 8 + u32::from(digit - b'0');
            }
            out.push(u8::try_from(value).ok()?);
        } else {
            out.push(b);
        }
    }
    if out.is_empty() { None } else { Some(out) }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    const TABLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:40 / /home/u/proj/target rw,relatime shared:20 - tmpfs tmpfs rw,size=1g
41 22 0:41 / /home/u/proj/ram rw - ramfs ramfs rw
42 22 8:1 /home/u/.ssh /home/u/proj/ssh rw,relatime shared:1 - ext4 /dev/sda1 rw
43 22 0:43 /sub /home/u/proj/sub rw - tmpfs tmpfs rw
44 22 0:44 / /dev/shm rw master:3 - tmpfs tmpfs rw
45 22 0:44 / /home/u/proj/shm rw - tmpfs tmpfs rw
46 40 0:46 / /home/u/proj/target/inner rw - tmpfs tmpfs rw
47 22 0:47 / /home/u/proj/with\\040space rw - tmpfs tmpfs rw
48 22 0:48 / /home/u/proj/over rw - overlay overlay rw,lowerdir=/a
";

    const ROOT: (u64, u32, u32) = (22, 8, 1);

    fn verdict(id: u64, dev: (u32, u32), resolved: &str) -> Result<Crossing, String> {
        let table = parse_table(TABLE.as_bytes()).unwrap();
        judge(
            &table,
            (id, dev.0, dev.1),
            ROOT,
            Path::new(resolved),
            Path::new("/home/u/proj"),
        )
    }

    #[test]
    fn a_fresh_scratch_filesystem_below_the_root_is_crossed() {
        let crossing = verdict(40, (0, 40), "/home/u/proj/target/debug/app").unwrap();
        assert_eq!(crossing.point, Path::new("/home/u/proj/target"));
        assert_eq!(crossing.key, (40, 0, 40));
        assert!(verdict(41, (0, 41), "/home/u/proj/ram/x").is_ok());
        // Escaped names are unescaped before they are compared.
        assert!(verdict(47, (0, 47), "/home/u/proj/with space/x").is_ok());
    }

    #[test]
    fn windows_are_refused_with_what_they_are() {
        let cases: &[(u64, (u32, u32), &str, &str)] = &[
            (
                42,
                (8, 1),
                "/home/u/proj/ssh/id_ed25519",
                "bind mount of the directory `/home/u/.ssh` of a `ext4`",
            ),
            (
                43,
                (0, 43),
                "/home/u/proj/sub/x",
                "bind mount of the directory `/sub`",
            ),
            (
                45,
                (0, 44),
                "/home/u/proj/shm/x",
                "also mounted at `/dev/shm`",
            ),
            (
                46,
                (0, 46),
                "/home/u/proj/target/inner/x",
                "on another mount",
            ),
            (48, (0, 48), "/home/u/proj/over/x", "`overlay` filesystem"),
            (44, (0, 44), "/dev/shm/x", "not where the path crosses"),
            (40, (0, 99), "/home/u/proj/target/x", "another device"),
            (
                99,
                (0, 99),
                "/home/u/proj/target/x",
                "not in the mount table",
            ),
            (0, (0, 40), "/home/u/proj/target/x", "mount ids"),
        ];
        for (id, dev, resolved, why) in cases {
            let err = verdict(*id, *dev, resolved).unwrap_err();
            assert!(err.contains(why), "{id} {resolved}: {err}");
        }
    }

    #[test]
    fn a_mount_point_that_is_the_root_or_outside_it_is_not_a_crossing_below_it() {
        let table =
            parse_table(b"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n40 22 0:40 / /p rw - tmpfs t rw\n")
                .unwrap();
        assert!(
            judge(
                &table,
                (40, 0, 40),
                ROOT,
                Path::new("/p/x"),
                Path::new("/p")
            )
            .is_err()
        );
        assert!(
            judge(
                &table,
                (40, 0, 40),
                ROOT,
                Path::new("/p/x"),
                Path::new("/q")
            )
            .is_err()
        );
    }

    #[test]
    fn an_unparsable_table_is_refused_whole() {
        for bad in [
            "40 22 0:40 / /p rw tmpfs tmpfs rw\n",
            "x 22 0:40 / /p rw - tmpfs tmpfs rw\n",
            "40 22 040 / /p rw - tmpfs tmpfs rw\n",
            "40 22 0:40 / /p\\09 rw - tmpfs tmpfs rw\n",
            "40 22 0:40 / p rw - tmpfs tmpfs rw\n",
            "40 22 0:40 / /p rw -\n",
            "40 22 0:40 / /p rw - tmpfs tmpfs rw\n41 22 0:41\n",
        ] {
            assert!(parse_table(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert_eq!(parse_table(TABLE.as_bytes()).unwrap().len(), 10);
    }
}
