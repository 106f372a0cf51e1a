//! The process half of the confinement profile, applied by the trampoline: namespaces (no view
//! of other processes, no network but an unconfigured loopback), no capabilities, and a seccomp
//! filter on the system calls that reach past Landlock (sockets other than TCP, ptrace, mounts,
//! namespaces, io_uring, ...).

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::thread::{CapabilitySet, CapabilitySets, UnshareFlags};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::sys;

/// Enters new PID, mount and IPC namespaces (and a network namespace when `private_net`); the
/// caller's next child is PID 1 of the new PID namespace. Without `CAP_SYS_ADMIN` a user
/// namespace that maps only the caller's own ids comes first. Returns the names entered.
pub(crate) fn enter_namespaces(private_net: bool) -> Result<Vec<&'static str>, String> {
    let mut flags = UnshareFlags::NEWPID | UnshareFlags::NEWNS | UnshareFlags::NEWIPC;
    let mut names = vec!["pid", "mount", "ipc"];
    if private_net {
        flags |= UnshareFlags::NEWNET;
        names.push("net");
    }
    let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
    match sys::unshare_namespaces(flags) {
        Ok(()) => {}
        Err(first) if !uid.is_root() => {
            sys::unshare_namespaces(flags | UnshareFlags::NEWUSER)
                .map_err(|e| format!("cannot create namespaces: {first}; as a user: {e}"))?;
            // Only the caller's own ids exist inside: it gains no access it did not have.
            let write = |file: &str, text: String| {
                std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
            };
            write("/proc/self/setgroups", "deny".into())?;
            write("/proc/self/uid_map", format!("{0} {0} 1", uid.as_raw()))?;
            write("/proc/self/gid_map", format!("{0} {0} 1", gid.as_raw()))?;
            names.push("user");
        }
        Err(e) => return Err(format!("cannot create namespaces: {e}")),
    }
    // Nothing mounted from here on may reach the host's mount table.
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    Ok(names)
}

/// Mounts a `/proc` of the current PID namespace over `/proc` (in the private mount namespace):
/// other processes' `environ`, `cmdline`, `mem` and `fd` vanish from view. Call it in PID 1 of
/// the namespace, after [`enter_namespaces`] succeeded (never otherwise: that would cover the
/// host's `/proc`).
pub(crate) fn mount_private_proc() -> Result<(), String> {
    rustix::mount::mount(
        "proc",
        "/proc",
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|e| format!("cannot mount a private /proc: {e}"))
}

/// Hides `whiteouts` (relative paths) below `root` in this mount namespace: a tmpfs holding a
/// whiteout for each is mounted over `root`, then a read-only overlay of it on the real tree.
/// Call it after [`enter_namespaces`] (never otherwise: it would cover the host's tree), in a
/// process without the seccomp filters, which deny mounts. It leaves the working directory at
/// `/`.
///
/// The top layer's directories take the real ones' mode, owner and times (the overlay shows the
/// top layer's). On an error nothing stays mounted over `root`, or else the error says the tree
/// is covered.
pub(crate) fn mask_tree(root: &Path, whiteouts: &[PathBuf]) -> Result<(), MaskError> {
    use rustix::fs::{FileType, Mode, OFlags};
    let fail = |what: &str, e: rustix::io::Errno| {
        MaskError::Failed(format!("cannot mask `{}`: {what}: {e}", root.display()))
    };
    // The overlay's options name its layers by path: the top one by `root` (the tmpfs then),
    // the real tree, covered by then, as the working directory (`/proc/self/fd` would do, but
    // in the relay `/proc` is PID 1's by then, where the relay has no entry).
    let top_layer = root
        .to_str()
        .filter(|r| !r.contains([':', ',', '\\']))
        .ok_or_else(|| {
            MaskError::Failed(format!(
                "cannot mask `{}`: its path cannot be an overlay layer",
                root.display()
            ))
        })?;
    let dir = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let real = rustix::fs::open(root, dir, Mode::empty()).map_err(|e| fail("open", e))?;
    rustix::process::fchdir(&real).map_err(|e| fail("enter", e))?;
    rustix::mount::mount(
        "tmpfs",
        root,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        c"size=64k",
    )
    .map_err(|e| fail("mount the whiteouts' tmpfs", e))?;
    let layered = (|| {
        let top = rustix::fs::open(root, dir, Mode::empty()).map_err(|e| fail("open", e))?;
        let mut dirs = vec![PathBuf::new()];
        for path in whiteouts {
            // Made relative to the tmpfs: a name that could leave it would make a node on the
            // tree it covers.
            if !path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
            {
                return Err(MaskError::Failed(format!(
                    "cannot mask `{}`: `{}` is not a name below it",
                    root.display(),
                    path.display()
                )));
            }
            // Its directories, outermost first (`ancestors` ends with the empty path: the root).
            let parents: Vec<&Path> = path.ancestors().skip(1).collect();
            for parent in parents.into_iter().rev().skip(1) {
                match rustix::fs::mkdirat(&top, parent, Mode::from_raw_mode(0o755)) {
                    Ok(()) => dirs.push(parent.to_path_buf()),
                    Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(fail("create a whiteout's directory", e)),
                }
            }
            rustix::fs::mknodat(&top, path, FileType::CharacterDevice, Mode::empty(), 0)
                .map_err(|e| fail("create a whiteout", e))?;
        }
        // Once their entries are made, which would change their times again.
        for rel in &dirs {
            like(&top, &real, rel)?;
        }
        let layers = std::ffi::CString::new(format!("lowerdir={top_layer}:."))
            .map_err(|_| MaskError::Failed("a path holds a NUL".into()))?;
        rustix::mount::mount(
            "overlay",
            root,
            "overlay",
            MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
            layers.as_c_str(),
        )
        .map_err(|e| fail("mount the overlay", e))
    })();
    let _ = rustix::process::chdir("/");
    if layered.is_err()
        && rustix::mount::unmount(root, rustix::mount::UnmountFlags::DETACH).is_err()
    {
        return Err(MaskError::Covered(format!(
            "`{}` stays covered by an empty tmpfs",
            root.display()
        )));
    }
    layered
}

/// Gives the top layer's directory `rel` (below the tmpfs `top`) the mode, owner and times of
/// the real tree's (below `real`), which the overlay shows; nothing when the real one is missing.
fn like(top: &OwnedFd, real: &OwnedFd, rel: &Path) -> Result<(), MaskError> {
    use rustix::fs::{AtFlags, Mode};
    // The directory itself, for the tree's root (`fchmodat` takes no empty path).
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let flags = AtFlags::SYMLINK_NOFOLLOW;
    let Ok(st) = rustix::fs::statat(real, rel, flags) else {
        return Ok(());
    };
    let mode = Mode::from_raw_mode(st.st_mode & 0o7777);
    rustix::fs::chmodat(top, rel, mode, AtFlags::empty())
        .map_err(|e| MaskError::Failed(format!("cannot copy a directory's mode: {e}")))?;
    // Its times, as `ls -l` shows them: nothing depends on them.
    let times = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: st.st_atime,
            tv_nsec: i64::try_from(st.st_atime_nsec).unwrap_or(0),
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: st.st_mtime,
            tv_nsec: i64::try_from(st.st_mtime_nsec).unwrap_or(0),
        },
    };
    let _ = rustix::fs::utimensat(top, rel, &times, AtFlags::SYMLINK_NOFOLLOW);
    // Owners the namespace does not map cannot be set; the mode still holds.
    let _ = rustix::fs::chownat(
        top,
        rel,
        Some(rustix::fs::Uid::from_raw(st.st_uid)),
        Some(rustix::fs::Gid::from_raw(st.st_gid)),
        flags,
    );
    Ok(())
}

/// Why [`mask_tree`] failed.
#[derive(Debug)]
pub(crate) enum MaskError {
    /// Nothing stays mounted: the tree can be read entry by entry instead.
    Failed(String),
    /// The tree stays covered by the whiteouts' tmpfs: it cannot be read at all.
    Covered(String),
}

/// The first pids of a namespace the kernel allocates only once: after the first wrap, new pids
/// come from `RESERVED_PIDS..pid_max`.
const RESERVED_PIDS: u64 = 300;

/// Caps the tasks of the current PID namespace (per-namespace `pid_max`, Linux >= 6.14): at most
/// `RESERVED_PIDS + max` live at once, and after the first wrap at most `max` beyond the reserved
/// ones still alive. Binds root too, needs no cgroup. Call it in PID 1 after
/// [`mount_private_proc`]. Returns the value the kernel holds.
pub(crate) fn cap_pid_namespace(max: u64) -> Result<u64, String> {
    // Before 6.14 the file is the host's: writing it would cap every process of the machine.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if !pid_max_is_per_namespace(&release) {
        return Err(format!(
            "pid_max is not per PID namespace before Linux 6.14 (this is {})",
            release.trim()
        ));
    }
    let value = RESERVED_PIDS.saturating_add(max).saturating_add(1);
    let file = "/proc/sys/kernel/pid_max";
    std::fs::write(file, value.to_string())
        .map_err(|e| format!("cannot cap the PID namespace ({file}): {e}"))?;
    let held: u64 = std::fs::read_to_string(file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| format!("cannot read back {file}"))?;
    if held != value {
        return Err(format!(
            "the PID namespace cap did not hold ({file} is {held}, not {value}): pid_max is not \
             per namespace on this kernel"
        ));
    }
    Ok(held)
}

/// True for a kernel release of 6.14 or later (`6.18.44-fc-v1098`); false when unparsable.
fn pid_max_is_per_namespace(release: &str) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (6, 14),
        _ => false,
    }
}

fn last_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
        .min(63)
}

/// Drops every capability: bounding, ambient, inheritable, permitted, effective; locks the
/// secure bits so that even uid 0 regains nothing at `execve`. Verified by reading the sets back.
pub(crate) fn drop_capabilities() -> Result<(), String> {
    use rustix::thread as t;
    let held = t::capabilities(None).map_err(|e| format!("cannot read capabilities: {e}"))?;
    let last = last_capability();
    for cap in 0..=last {
        let set = CapabilitySet::from_bits_retain(1u64 << cap);
        match t::remove_capability_from_bounding_set(set) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            // Without CAP_SETPCAP (an unprivileged caller) the bounding set cannot shrink; such
            // a caller holds no capability, and no-new-privs keeps `execve` from granting any.
            Err(rustix::io::Errno::PERM) if held.permitted.is_empty() => break,
            Err(e) => {
                return Err(format!(
                    "cannot drop capability {cap} from the bounding set: {e}"
                ));
            }
        }
    }
    if !held.permitted.is_empty() {
        let bits = t::CapabilitiesSecureBits::NO_ROOT
            | t::CapabilitiesSecureBits::NO_ROOT_LOCKED
            | t::CapabilitiesSecureBits::NO_SETUID_FIXUP
            | t::CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED;
        t::set_capabilities_secure_bits(bits)
            .map_err(|e| format!("cannot lock the secure bits: {e}"))?;
    }
    t::clear_ambient_capability_set().map_err(|e| format!("cannot clear ambient caps: {e}"))?;
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    t::set_capabilities(None, none).map_err(|e| format!("cannot clear capabilities: {e}"))?;
    let now = t::capabilities(None).map_err(|e| format!("cannot read capabilities: {e}"))?;
    if now != none {
        return Err(format!("capabilities remain: {now:?}"));
    }
    Ok(())
}

/// System calls a confined command never needs and that reach past Landlock or the namespaces:
/// answered with `EPERM`. Data: one entry per call, each checked by the confinement tests.
pub const DENIED_SYSCALLS: &[(&str, i64)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    // io_uring opens sockets and files without passing through these filters.
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("kexec_load", libc::SYS_kexec_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
];

/// `clone` flags that would create a namespace (a new user namespace regains capabilities).
const NAMESPACE_CLONE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWCGROUP as u64,
];

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

fn rule(conds: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conds).map_err(|e| e.to_string())
}

fn target_arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())
}

/// The `socket(2)` rules that deny: every family but IPv4/IPv6; within those every type but a
/// TCP stream (and a UDP datagram when `allow_udp`). Unix sockets go too, so nothing connects to
/// a daemon's socket outside the roots (pathname or abstract); `socketpair` and pipes stay.
///
/// Only the first rule names the families: the others then apply to IPv4 and IPv6 alone, and
/// the filter is half as long as one with a rule per family (the kernel checks and compiles
/// each instruction at every run's start).
fn socket_rules(allow_udp: bool) -> Result<Vec<SeccompRule>, String> {
    let (inet, inet6) = (libc::AF_INET as u64, libc::AF_INET6 as u64);
    let mut rules = vec![rule(vec![
        cond(0, SeccompCmpOp::Ne, inet)?,
        cond(0, SeccompCmpOp::Ne, inet6)?,
    ])?];
    let stream = libc::SOCK_STREAM as u64;
    let dgram = libc::SOCK_DGRAM as u64;
    // The type's low four bits; the rest are SOCK_NONBLOCK/SOCK_CLOEXEC.
    for ty in 0..16u64 {
        if ty == stream || (allow_udp && ty == dgram) {
            continue;
        }
        rules.push(rule(vec![cond(1, SeccompCmpOp::MaskedEq(0xf), ty)?])?);
    }
    // A stream of another protocol (SCTP, MPTCP) is not TCP, which is what Landlock governs.
    rules.push(rule(vec![
        cond(1, SeccompCmpOp::MaskedEq(0xf), stream)?,
        cond(2, SeccompCmpOp::Ne, 0)?,
        cond(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
    ])?);
    if allow_udp {
        rules.push(rule(vec![
            cond(1, SeccompCmpOp::MaskedEq(0xf), dgram)?,
            cond(2, SeccompCmpOp::Ne, 0)?,
            cond(2, SeccompCmpOp::Ne, libc::IPPROTO_UDP as u64)?,
        ])?);
    }
    Ok(rules)
}

/// The seccomp programs of a confined run, in installation order: the `EPERM` filter (sockets,
/// [`DENIED_SYSCALLS`], namespace-creating `clone`) and the `ENOSYS` filter for `clone3`, whose
/// flags live in memory a filter cannot read (libc falls back to `clone` on `ENOSYS`).
pub(crate) fn filters(allow_udp: bool) -> Result<Vec<BpfProgram>, String> {
    let arch = target_arch()?;
    let mut deny: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    deny.insert(libc::SYS_socket, socket_rules(allow_udp)?);
    if arch == TargetArch::x86_64 {
        // The x32 ABI's socket(2): its numbers carry bit 30 and would pass the rule above.
        deny.insert(0x4000_0000 + libc::SYS_socket, vec![]);
    }
    for (_, nr) in DENIED_SYSCALLS {
        deny.insert(*nr, vec![]);
    }
    let clone_rules = NAMESPACE_CLONE_FLAGS
        .iter()
        .map(|f| rule(vec![cond(0, SeccompCmpOp::MaskedEq(*f), *f)?]))
        .collect::<Result<Vec<_>, _>>()?;
    deny.insert(libc::SYS_clone, clone_rules);
    let eperm = SeccompFilter::new(
        deny,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let enosys = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, vec![])]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    [eperm, enosys]
        .into_iter()
        .map(|f| BpfProgram::try_from(f).map_err(|e| e.to_string()))
        .collect()
}

/// Installs [`filters`] on this thread (inherited by everything it starts). Needs
/// no-new-privs to be set.
pub(crate) fn install_filters(allow_udp: bool) -> Result<(), String> {
    for program in filters(allow_udp)? {
        seccompiler::apply_filter(&program).map_err(|e| format!("cannot install seccomp: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile_for_this_machine() {
        for udp in [false, true] {
            let programs = filters(udp).unwrap();
            assert_eq!(programs.len(), 2);
            // The kernel takes at most 4096 instructions per program.
            assert!(programs.iter().all(|p| !p.is_empty() && p.len() < 4096));
        }
    }

    #[test]
    fn pid_max_is_written_only_where_it_is_per_namespace() {
        assert!(pid_max_is_per_namespace("6.18.44-fc-v1098\n"));
        assert!(pid_max_is_per_namespace("6.14.0"));
        assert!(pid_max_is_per_namespace("7.0.1-arch1"));
        assert!(!pid_max_is_per_namespace("6.13.9"));
        assert!(!pid_max_is_per_namespace("5.15.0-91-generic"));
        assert!(!pid_max_is_per_namespace(""));
        assert!(!pid_max_is_per_namespace("garbage"));
    }

    #[test]
    fn every_denied_syscall_is_listed_once() {
        let mut nrs: Vec<i64> = DENIED_SYSCALLS.iter().map(|(_, n)| *n).collect();
        nrs.sort_unstable();
        nrs.dedup();
        assert_eq!(nrs.len(), DENIED_SYSCALLS.len());
        assert!(!nrs.contains(&libc::SYS_socketpair));
        assert!(!nrs.contains(&libc::SYS_pipe2));
    }
}
