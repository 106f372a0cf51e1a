//! The trampoline: a tiny process that confines itself and then `exec`s the shell, so that limits
//! and Landlock apply to the command and everything it spawns, with no `unsafe` `pre_exec` hook.
//!
//! With process isolation on, it enters new namespaces and forks once: the child becomes PID 1 of
//! a PID namespace with its own `/proc`, drops every capability, installs the seccomp filters and
//! executes the shell; the trampoline waits and exits as the child did. When PID 1 exits, the
//! kernel kills everything left in the namespace.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetError,
    RulesetStatus, Scope, path_beneath_rules,
};
use rustix::fs::FileType;
use rustix::process::{Resource, Rlimit};
use serde::{Deserialize, Serialize};

use super::profile::MaskedTree;
use super::{LandlockReport, LandlockState, confine, sys};

/// Exit code of a trampoline that refused to run the command unconfined.
pub(crate) const REFUSED_EXIT: i32 = 125;

/// What the runner asks the trampoline to apply to the process, the first frame on its standard
/// input: with the [`CgroupSpec`], everything up to PID 1's fork (namespaces, cgroups, limits)
/// depends only on this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Spec {
    pub(crate) block_network: bool,
    pub(crate) max_file_size: Option<u64>,
    pub(crate) cpu_time_secs: Option<u64>,
    pub(crate) max_processes: Option<u64>,
    /// Namespaces, no capabilities, seccomp.
    pub(crate) isolate: bool,
    /// Task cap of the PID namespace (`pid_max`), when isolated.
    pub(crate) pid_ns_max: Option<u64>,
    pub(crate) require: bool,
}

/// The run's cgroups, the second frame: the runner creates them while the trampoline enters its
/// namespaces, and the trampoline joins them before it sets its limits and forks (every task
/// of the run is counted).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CgroupSpec {
    /// Files to write to join the cgroups (pids, then memory on cgroup v1): v1 `tasks` files
    /// (written `0`, see [`join_cgroup`]) or v2 `cgroup.procs`.
    pub(crate) cgroup_procs: Vec<PathBuf>,
    /// `RLIMIT_AS`: the memory cap where no memory cgroup holds it.
    pub(crate) address_space: Option<u64>,
}

/// The last frame, read by the process that becomes the command once it is confined: the
/// command itself, which nothing before this frame names. Without a complete one the
/// trampoline never executes anything, whatever `require` says.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Launch {
    /// The program (the shell) and its arguments.
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    /// The command's whole environment.
    pub(crate) env: Vec<(String, String)>,
    /// Its working directory.
    pub(crate) cwd: PathBuf,
}

/// The third frame, the Landlock rules: sent as soon as the runner has the run's roots (before
/// it judges the command, when it prepares the trampoline with them) and applied by the process
/// that becomes the command, with the capabilities and the seccomp filters, while the runner
/// still judges.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FsSpec {
    pub(crate) read_roots: Vec<PathBuf>,
    /// Readable directories and files whose kind the runner listed (most of them `/etc`
    /// entries): opened here, their rights set by the runner's kind (the landlock crate still
    /// checks it against the file with one `fstat`), and closed by `exec`.
    pub(crate) read_dirs: Vec<PathBuf>,
    pub(crate) read_files: Vec<PathBuf>,
    pub(crate) write_roots: Vec<PathBuf>,
    pub(crate) system_read: Vec<PathBuf>,
    /// Directories whose listing alone is readable (parents of entry-by-entry reads).
    pub(crate) list_only: Vec<PathBuf>,
    pub(crate) devices: Vec<PathBuf>,
    /// Trees read whole with their secrets whited out by an overlay mounted here, or else read
    /// entry by entry as listed here (none when the frame names none).
    #[serde(default)]
    pub(crate) masked: Vec<MaskedTree>,
}

impl FsSpec {
    /// Adds the rules of a listed profile: its readable paths by kind and the directories whose
    /// listing alone is readable.
    pub(crate) fn add_listed(&mut self, listed: &super::profile::FsProfile) {
        let (whole, dirs, files) = listed.readable_by_kind();
        self.read_roots.extend(whole);
        self.read_dirs.extend(dirs);
        self.read_files.extend(files);
        self.list_only.extend(listed.list_only.iter().cloned());
    }
}

/// Largest frame the trampoline reads: far above any real one (a few KiB per hundred roots), so
/// a runner gone wrong cannot make it allocate without bound.
const MAX_FRAME: usize = 16 << 20;

/// Encodes one frame for the trampoline's standard input: the JSON's length (`u32`, little
/// endian), then the JSON.
pub(crate) fn frame<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    let json = serde_json::to_vec(value).map_err(|e| format!("cannot encode the spec: {e}"))?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|n| *n as usize <= MAX_FRAME)
        .ok_or_else(|| format!("the spec is too large ({} bytes)", json.len()))?;
    let mut out = len.to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    Ok(out)
}

/// The complete frames at the start of `buf` (see [`frame`]), in order; a cut-off or oversized
/// one ends the list.
pub(crate) fn unframe(mut buf: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    while let Some((len, rest)) = buf.split_first_chunk::<4>() {
        let len = u32::from_le_bytes(*len) as usize;
        match rest.get(..len).filter(|_| len <= MAX_FRAME) {
            Some(body) => frames.push(body),
            None => break,
        }
        buf = rest.get(len..).unwrap_or_default();
    }
    frames
}

/// Fills `buf` from `fd` with plain `read`s (std's `Stdin` buffers ahead).
fn read_exact(fd: BorrowedFd<'_>, mut buf: &mut [u8]) -> Result<(), String> {
    while !buf.is_empty() {
        match rustix::io::read(fd, &mut *buf) {
            Ok(0) => return Err("end of input".into()),
            Ok(n) => {
                let rest = std::mem::take(&mut buf);
                buf = rest.get_mut(n..).unwrap_or_default();
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// Reads one frame from standard input, unbuffered: the rest stays in the socket for the next
/// reader (after the fork, the relay reads the rules, PID 1 the command).
fn read_frame<T: serde::de::DeserializeOwned>(what: &str) -> Result<T, String> {
    read_frame_from(std::io::stdin().as_fd(), what)
}

/// [`read_frame`] from `fd`.
fn read_frame_from<T: serde::de::DeserializeOwned>(
    fd: BorrowedFd<'_>,
    what: &str,
) -> Result<T, String> {
    let mut len = [0u8; 4];
    read_exact(fd, &mut len).map_err(|e| format!("cannot read the {what}: {e}"))?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(format!("the {what} is too large ({len} bytes)"));
    }
    let mut text = vec![0u8; len];
    read_exact(fd, &mut text).map_err(|e| format!("cannot read the {what}: {e}"))?;
    serde_json::from_slice(&text).map_err(|e| format!("bad {what}: {e}"))
}

/// What the trampoline managed to apply, written before `exec` to its standard input: the
/// runner's socket (no file to create, read and unlink per run), replaced by `/dev/null` for the
/// command.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Applied {
    pub(crate) landlock: LandlockReport,
    pub(crate) cgroup_joined: bool,
    pub(crate) cgroup_error: Option<String>,
    pub(crate) rlimits: Vec<String>,
    pub(crate) rlimit_errors: Vec<String>,
    /// Namespaces entered (`pid`, `mount`, `ipc`, `net`, `user`).
    pub(crate) namespaces: Vec<String>,
    /// A private `/proc` is mounted for the PID namespace.
    pub(crate) private_proc: bool,
    /// `pid_max` of the PID namespace, as read back.
    pub(crate) pid_max: Option<u64>,
    /// Trees whose secrets an overlay hides (see [`MaskedTree`]).
    pub(crate) hidden_by_overlay: Vec<PathBuf>,
    pub(crate) capabilities_dropped: bool,
    pub(crate) seccomp: bool,
    /// Every descriptor from 3 up is closed at `exec`.
    pub(crate) descriptors_closed: bool,
    /// Why an isolation step failed.
    pub(crate) isolation_errors: Vec<String>,
    /// What was weaker than asked but covered otherwise.
    pub(crate) notes: Vec<String>,
    pub(crate) refused: Option<String>,
}

/// Entry point of the trampoline (the `bash-guard-sandbox-exec` binary and
/// `agent-guard __sandbox-exec`).
///
/// `args` are the arguments after the program name (or subcommand) and must be empty: the run
/// comes on standard input, a socket that brings it in four frames (the limits and namespaces,
/// the cgroups, the Landlock rules, then the command with its environment and directory) and
/// takes the report. On success this never returns (the process becomes the command); it returns
/// exit code 125 when `require_confinement` could not be met or a frame is missing, and 127
/// when there are arguments or the command cannot be executed.
pub fn trampoline_main<I: IntoIterator<Item = OsString>>(args: I) -> ExitCode {
    ExitCode::from(trampoline_status(args))
}

/// [`trampoline_main`] for an entry that ends the process itself (one that starts at C's
/// `main`): the exit status.
pub fn trampoline_status<I: IntoIterator<Item = OsString>>(args: I) -> u8 {
    if args.into_iter().next().is_some() {
        return usage("takes no arguments: the run comes on standard input");
    }
    run(None)
}

/// The trampoline of [`crate::StartedTrampoline::fork_isolated`]: it enters the namespaces of an
/// isolated run (with a network namespace of its own when `private_net`) before its spec
/// comes, and refuses a spec that asks for other ones.
pub(crate) fn forked_status(ahead: Option<bool>) -> u8 {
    run(ahead)
}

fn run(ahead: Option<bool>) -> u8 {
    let mut applied = Applied::default();
    // First, so nothing below can hand an inherited descriptor on: the command gets 0-2 only.
    match sys::cloexec_from_3() {
        Ok(()) => applied.descriptors_closed = true,
        Err(e) => applied
            .isolation_errors
            .push(format!("cannot close inherited descriptors: {e}")),
    }
    // Entered before the spec when the caller knew which: they take as long as the caller's
    // way to the spec.
    if let Some(private_net) = ahead {
        enter_namespaces(private_net, &mut applied);
    }
    let spec = match read_frame::<Spec>("spec") {
        Ok(spec) => spec,
        Err(e) => return refuse(&e),
    };
    match ahead {
        Some(private_net) if !spec.isolate || spec.block_network != private_net => {
            return refuse("the trampoline entered other namespaces than its spec asks for");
        }
        Some(_) => {}
        None if spec.isolate => enter_namespaces(spec.block_network, &mut applied),
        None => {}
    }
    let cgroups = match read_frame::<CgroupSpec>("cgroup spec") {
        Ok(cgroups) => cgroups,
        Err(e) => return refuse(&e),
    };
    limit(&spec, &cgroups, &mut applied);
    let mount_ns = applied.namespaces.iter().any(|n| n == "mount");
    // Where PID 1 gets its rules from: the relay, which masks the trees while PID 1 installs
    // its seccomp filters; else the socket.
    let mut from_relay = None;
    if applied.namespaces.iter().any(|n| n == "pid") {
        let pipe = std::io::pipe();
        // Created before the fork, so that both hold it: the relay adds the rules, PID 1
        // restricts itself with them.
        let ruleset = create_ruleset(&spec).map_err(|e| e.to_string());
        match sys::fork() {
            Ok(sys::Forked::Parent(child)) => {
                let to_pid1 = pipe.ok().map(|(_, w)| (w, mount_ns, ruleset));
                return relay(child, &cgroups, to_pid1);
            }
            Ok(sys::Forked::Child) => {
                from_relay = pipe.ok().map(|(r, _)| (r, ruleset));
                // PID 1 of the namespace: if the trampoline dies (killed on timeout), so does the
                // namespace.
                if let Err(e) = rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                )) {
                    applied
                        .isolation_errors
                        .push(format!("cannot set the death signal: {e}"));
                }
                match confine::mount_private_proc() {
                    Ok(()) => applied.private_proc = true,
                    Err(e) => applied.isolation_errors.push(e),
                }
                if let Some(max) = spec.pid_ns_max.filter(|_| applied.private_proc) {
                    match confine::cap_pid_namespace(max) {
                        Ok(held) => applied.pid_max = Some(held),
                        // The pids cgroup is the cap then; without one there is none: refuse.
                        Err(e) if applied.cgroup_joined => applied.notes.push(e),
                        Err(e) => applied.isolation_errors.push(e),
                    }
                }
            }
            Err(e) => applied.isolation_errors.push(format!("cannot fork: {e}")),
        }
    }
    // Only now, in the process that becomes the command: everything above ran while the runner
    // was still computing the rest, and this runs while it judges the command.
    // Kept open until `exec`, which closes them all at once.
    let mut _rule_fds = Vec::new();
    // Without the rules and the command, never run anything (fail closed even when `require`
    // is off: the runner failed before it finished asking).
    // A forked trampoline ran apart from its caller's CPU; the command gets its caller's CPUs.
    super::affinity::restore_for_command();
    let launch = match from_relay {
        Some((pipe, ruleset)) => {
            confine_process(&spec, &mut applied);
            read_frame_from::<Masked>(pipe.as_fd(), "file-system spec").and_then(|masked| {
                applied.hidden_by_overlay = masked.hidden_by_overlay;
                applied.notes.extend(masked.notes);
                applied.landlock = restrict_prepared(&spec, ruleset, masked.rules, &masked.pid1);
                drop_capabilities(&spec, &mut applied);
                read_frame::<Launch>("launch spec")
            })
        }
        None => read_frame::<FsSpec>("file-system spec").and_then(|fs| {
            // The overlays before the seccomp filters, which deny mounts.
            let fs = mask(fs, mount_ns, &mut applied);
            confine_process(&spec, &mut applied);
            _rule_fds = confine_files(&spec, &fs, &mut applied);
            read_frame::<Launch>("launch spec")
        }),
    };
    let launch = match launch {
        Ok(launch) => {
            // Landlock does not govern `chdir`: the directory is entered as the command would.
            if let Err(e) = std::env::set_current_dir(&launch.cwd) {
                applied.refused = Some(format!(
                    "cannot enter the working directory `{}`: {e}",
                    launch.cwd.display()
                ));
            }
            if spec.require && applied.refused.is_none() {
                applied.refused = unmet(&spec, &cgroups, &applied);
            }
            Some(launch)
        }
        Err(e) => {
            applied.refused = Some(e);
            None
        }
    };
    // A missing or short report makes the runner fail closed.
    send_back(&applied);
    let launch = match (applied.refused, launch) {
        (None, Some(launch)) => launch,
        (reason, _) => return refuse(&reason.unwrap_or_default()),
    };
    let err = std::process::Command::new(&launch.program)
        .args(&launch.args)
        .env_clear()
        .envs(launch.env)
        .stdin(std::process::Stdio::null())
        .exec();
    eprintln!(
        "bash-guard: cannot execute `{}`: {err}",
        launch.program.display()
    );
    127
}

/// How PID 1 ended, the last frame the trampoline writes to the runner: sent as soon as PID 1
/// is gone (and every process of its namespace with it), before the trampoline's own exit
/// tears the namespaces down, which the runner then need not wait for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Finished {
    /// PID 1's wait status, as `waitpid` gives it.
    pub(crate) wait_status: i32,
}

/// The rules as the relay hands them on to PID 1: its masked trees resolved (see [`mask`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Masked {
    /// The rules added to the shared ruleset (whether a listed directory was narrowed to a
    /// file's rights), or why not.
    rules: Result<bool, String>,
    /// The rules left to PID 1, on paths it mounts itself (see [`PID1_MOUNTS`]).
    pid1: FsSpec,
    hidden_by_overlay: Vec<PathBuf>,
    notes: Vec<String>,
}

/// Where PID 1 mounts a file system of its own. A rule names what is at its path when the path
/// is opened: the relay, which may open it before PID 1 has mounted there, leaves the rules at or
/// below these to PID 1.
const PID1_MOUNTS: &[&str] = &["/proc"];

/// The paths of `fs` at or below [`PID1_MOUNTS`], taken out of it.
fn pid1_mounted(fs: &mut FsSpec) -> FsSpec {
    let mounted = |p: &PathBuf| PID1_MOUNTS.iter().any(|m| p.starts_with(m));
    let take = |paths: &mut Vec<PathBuf>| {
        let (theirs, ours): (Vec<_>, Vec<_>) = std::mem::take(paths).into_iter().partition(mounted);
        *paths = ours;
        theirs
    };
    FsSpec {
        read_roots: take(&mut fs.read_roots),
        read_dirs: take(&mut fs.read_dirs),
        read_files: take(&mut fs.read_files),
        write_roots: take(&mut fs.write_roots),
        system_read: take(&mut fs.system_read),
        list_only: take(&mut fs.list_only),
        devices: take(&mut fs.devices),
        masked: Vec::new(),
    }
}

/// The relay's part of the rules: it reads them from the runner, mounts the masks (in the mount
/// namespace it shares with PID 1, while PID 1 installs its seccomp filters, which deny mounts),
/// adds the rules to the ruleset it shares with PID 1 and tells PID 1 how that went. Whatever
/// fails leaves PID 1 without word, and it refuses.
fn hand_on_rules(
    to_pid1: std::io::PipeWriter,
    mount_ns: bool,
    ruleset: Result<RulesetCreated, String>,
) {
    let Ok(fs) = read_frame::<FsSpec>("file-system spec") else {
        return;
    };
    let mut applied = Applied::default();
    let mut fs = mask(fs, mount_ns, &mut applied);
    let pid1 = pid1_mounted(&mut fs);
    // The descriptors may go once added: the rules hold what they name.
    let rules = ruleset.and_then(|ruleset| {
        add_fs_rules(ruleset, &fs)
            .map(|(_, dirs, _)| not_all_directories(&dirs))
            .map_err(|e| e.to_string())
    });
    let masked = Masked {
        rules,
        pid1,
        hidden_by_overlay: applied.hidden_by_overlay,
        notes: applied.notes,
    };
    if let Ok(bytes) = frame(&masked) {
        let mut rest = bytes.as_slice();
        while !rest.is_empty() {
            match rustix::io::write(&to_pid1, rest) {
                Ok(0) => return,
                Ok(n) => rest = rest.get(n..).unwrap_or_default(),
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return,
            }
        }
    }
}

/// The trampoline's side of the fork: hand the rules on to PID 1 (`to_pid1`, see
/// [`hand_on_rules`]), wait for PID 1 of the namespace, tell the runner how it ended, and end
/// the same way.
///
/// It gives up its copies of the run's output pipes first (PID 1 has them), so they end with
/// the command; and it leaves the run's cgroups before it reports, so they are empty once the
/// runner has the status. Where it cannot leave them (cgroup v2 keeps a process out of a
/// parent with controllers), it sends nothing and the runner waits for its exit.
fn relay(
    child: rustix::process::Pid,
    cgroups: &CgroupSpec,
    to_pid1: Option<(std::io::PipeWriter, bool, Result<RulesetCreated, String>)>,
) -> u8 {
    use rustix::process::{WaitOptions, waitpid};
    if let Ok(null) = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }
    if let Some((pipe, mount_ns, ruleset)) = to_pid1 {
        let _beside = super::affinity::beside_caller();
        hand_on_rules(pipe, mount_ns, ruleset);
    }
    let status = loop {
        match waitpid(Some(child), WaitOptions::empty()) {
            Ok(Some((_, status))) => break status,
            Err(rustix::io::Errno::INTR) => continue,
            // No child to wait for cannot happen; report it as a failure, never as success.
            Ok(None) | Err(_) => return 127,
        }
    };
    if cgroups
        .cgroup_procs
        .iter()
        .all(|file| leave_cgroup(file).is_ok())
    {
        send_back(&Finished {
            wait_status: status.as_raw(),
        });
    }
    if let Some(code) = status.exit_status() {
        return u8::try_from(code & 0xff).unwrap_or(1);
    }
    if let Some(sig) = status.terminating_signal() {
        // Die of the same signal, so the runner sees what the command saw.
        if let Some(signal) = rustix::process::Signal::from_named_raw(sig) {
            let _ = rustix::process::kill_process(rustix::process::getpid(), signal);
        }
        return u8::try_from((128 + sig) & 0xff).unwrap_or(1);
    }
    1
}

/// Writes a frame back to the runner on standard input, its socket: one write of a few hundred
/// bytes, far below the socket's buffer, so it goes whole and never blocks. A write that fails
/// leaves the frame missing, which the runner reads as a refusal (a report) or waits out (a
/// status).
fn send_back<T: Serialize>(value: &T) {
    if let Ok(bytes) = frame(value) {
        let _ = rustix::io::write(std::io::stdin(), &bytes);
    }
}

/// Ends a trampoline that will not run the command (short of a frame, or confined less than
/// required): nothing of it has run.
pub(crate) fn refuse(why: &str) -> u8 {
    eprintln!("bash-guard: refusing to run unconfined: {why}");
    REFUSED_EXIT as u8
}

fn usage(msg: &str) -> u8 {
    eprintln!("bash-guard sandbox trampoline: {msg}");
    127
}

/// Enters the namespaces of an isolated run and records which (or why not) in `applied`.
fn enter_namespaces(private_net: bool, applied: &mut Applied) {
    match confine::enter_namespaces(private_net) {
        Ok(names) => applied.namespaces = names.iter().map(|n| (*n).to_string()).collect(),
        Err(e) => applied.isolation_errors.push(e),
    }
}

/// Joins the cgroups and sets the resource limits: before any fork, so every task is counted.
fn limit(spec: &Spec, cgroups: &CgroupSpec, applied: &mut Applied) {
    applied.cgroup_joined = !cgroups.cgroup_procs.is_empty();
    for file in &cgroups.cgroup_procs {
        if let Err(e) = join_cgroup(file) {
            applied.cgroup_joined = false;
            applied.cgroup_error = Some(format!("cannot join `{}`: {e}", file.display()));
            break;
        }
    }
    let limits = [
        ("fsize", Resource::Fsize, spec.max_file_size),
        ("cpu", Resource::Cpu, spec.cpu_time_secs),
        ("nproc", Resource::Nproc, spec.max_processes),
        ("as", Resource::As, cgroups.address_space),
    ];
    for (name, resource, value) in limits {
        let Some(v) = value else { continue };
        let limit = Rlimit {
            current: Some(v),
            maximum: Some(v),
        };
        match rustix::process::setrlimit(resource, limit) {
            Ok(()) => applied.rlimits.push(format!("{name}={v}")),
            Err(e) => applied.rlimit_errors.push(format!("{name}: {e}")),
        }
    }
}

/// Moves the trampoline out of the cgroup of `file` (a join file, see [`join_cgroup`]) into the
/// parent cgroup.
///
/// Its one thread through the parent's v1 `tasks` file, without [`join_cgroup`]'s check of the
/// thread count: `/proc/self` is PID 1's `/proc` by now, where the trampoline has no entry, and
/// the trampoline has one thread by construction (its fork refused otherwise). The slow
/// `cgroup.procs` path would wait for an RCU grace period, longer than the early answer saves.
fn leave_cgroup(file: &std::path::Path) -> std::io::Result<()> {
    let parent = file
        .parent()
        .and_then(|dir| dir.parent())
        .zip(file.file_name())
        .map(|(dir, name)| dir.join(name))
        .ok_or_else(|| std::io::Error::other("a cgroup file without a parent cgroup"))?;
    move_into_cgroup(&parent, true)
}

/// Moves this process into the cgroup of `file`: a v1 `tasks` file takes `0` (the writing
/// thread), a `cgroup.procs` file this process's pid.
///
/// Moving one thread through `tasks` skips the kernel's global threadgroup lock and with it an
/// RCU grace period per join; it moves the whole process only because the process has one
/// thread, so with any other count the join goes through `cgroup.procs` of the same directory
/// (slow, never partial).
fn join_cgroup(file: &std::path::Path) -> std::io::Result<()> {
    move_into_cgroup(file, sys::thread_count() == Some(1))
}

/// Writes this process into the cgroup of `file`: through `tasks` only when it has
/// `one_thread`, else through `cgroup.procs` (see [`join_cgroup`]).
fn move_into_cgroup(file: &std::path::Path, one_thread: bool) -> std::io::Result<()> {
    let pid = std::process::id().to_string();
    if file.file_name() == Some(std::ffi::OsStr::new("tasks")) {
        if one_thread {
            return std::fs::write(file, "0");
        }
        return std::fs::write(file.with_file_name("cgroup.procs"), pid);
    }
    std::fs::write(file, pid)
}

/// The rules of `fs` with its masked trees resolved: a tree whose overlay is mounted is read
/// whole; one that cannot be masked (no mount namespace, an overlay the kernel refuses) is read
/// entry by entry around its secrets, listed here; one left covered is not readable at all.
fn mask(mut fs: FsSpec, mount_ns: bool, applied: &mut Applied) -> FsSpec {
    for tree in std::mem::take(&mut fs.masked) {
        let masked = if mount_ns {
            confine::mask_tree(&tree.root, &tree.whiteouts)
        } else {
            Err(confine::MaskError::Failed("no mount namespace".into()))
        };
        match masked {
            Ok(()) => {
                applied.hidden_by_overlay.push(tree.root.clone());
                fs.read_roots.push(tree.root);
            }
            Err(confine::MaskError::Failed(why)) => {
                if mount_ns {
                    applied.notes.push(format!(
                        "{why}; `{}` is read entry by entry",
                        tree.root.display()
                    ));
                }
                fs.add_listed(&super::profile::entry_by_entry(&tree));
            }
            Err(confine::MaskError::Covered(why)) => applied.notes.push(why),
        }
    }
    fs
}

/// No-new-privs, then (isolated) the seccomp filters: applied by the process that becomes the
/// command once its trees are masked (the filters deny mounts). The filters leave Landlock's and
/// `capset`'s calls alone.
fn confine_process(spec: &Spec, applied: &mut Applied) {
    if let Err(e) = rustix::thread::set_no_new_privs(true) {
        applied
            .isolation_errors
            .push(format!("cannot set no-new-privs: {e}"));
    }
    if spec.isolate {
        match confine::install_filters(!spec.block_network) {
            Ok(()) => applied.seccomp = true,
            Err(e) => applied.isolation_errors.push(e),
        }
    }
}

/// Landlock, then (isolated) no capabilities: the last steps before the command, after
/// [`confine_process`]. The capabilities go last, so the rules' paths are opened as before any
/// confinement.
///
/// Returns the descriptors of the Landlock rules' paths, to keep until `exec` closes them all at
/// once (they are close-on-exec): a `close` per rule less.
#[must_use]
fn confine_files(spec: &Spec, fs: &FsSpec, applied: &mut Applied) -> Vec<OwnedFd> {
    let (report, rule_fds) = landlock(spec, fs);
    applied.landlock = report;
    drop_capabilities(spec, applied);
    rule_fds
}

/// (Isolated) no capabilities, the last step before the command.
fn drop_capabilities(spec: &Spec, applied: &mut Applied) {
    if spec.isolate {
        match confine::drop_capabilities() {
            Ok(()) => applied.capabilities_dropped = true,
            Err(e) => applied.isolation_errors.push(e),
        }
    }
}

fn rule(
    fd: &OwnedFd,
    access: BitFlags<AccessFs>,
) -> Result<PathBeneath<BorrowedFd<'_>>, RulesetError> {
    Ok(PathBeneath::new(fd.as_fd(), access))
}

/// `O_PATH` descriptors of the `paths` that can be opened; a path that cannot be (gone since
/// the runner listed it) gets no rule, so it stays unreadable.
fn open_paths(paths: &[PathBuf]) -> Vec<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    paths
        .iter()
        .filter_map(|p| rustix::fs::open(p, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok())
        .collect()
}

fn unmet(spec: &Spec, cgroups: &CgroupSpec, applied: &Applied) -> Option<String> {
    if applied.landlock.status != LandlockState::FullyEnforced {
        return Some(format!(
            "landlock is {} ({})",
            applied.landlock.status.name(),
            applied
                .landlock
                .error
                .as_deref()
                .unwrap_or("the kernel did not enforce every rule")
        ));
    }
    if !applied.descriptors_closed {
        return Some(format!(
            "inherited descriptors stay open: {}",
            applied.isolation_errors.join("; ")
        ));
    }
    if !cgroups.cgroup_procs.is_empty() && !applied.cgroup_joined {
        return Some(applied.cgroup_error.clone().unwrap_or_default());
    }
    if spec.isolate {
        let pid = applied.namespaces.iter().any(|n| n == "pid") && applied.private_proc;
        let net = !spec.block_network || applied.namespaces.iter().any(|n| n == "net");
        let complete = pid && net && applied.capabilities_dropped && applied.seccomp;
        if !complete || !applied.isolation_errors.is_empty() {
            let why = applied.isolation_errors.join("; ");
            return Some(format!("process isolation is incomplete: {why}"));
        }
    }
    if let Some(err) = applied.rlimit_errors.first() {
        return Some(format!("cannot set a resource limit: {err}"));
    }
    None
}

/// The run's ruleset, before any rule: what it handles (every file-system right, the scopes,
/// TCP when the network is blocked).
fn create_ruleset(spec: &Spec) -> Result<RulesetCreated, RulesetError> {
    // The newest ABI this crate knows; best-effort compatibility reports what the kernel lacks
    // as PartiallyEnforced/NotEnforced rather than failing.
    let abi = ABI::V7;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))?
        .scope(Scope::from_all(abi))?;
    if spec.block_network {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    ruleset.create()
}

/// The rules of `fs` added to `ruleset`, with the descriptors of the listed directories and
/// files (kept until `exec` closes them).
fn add_fs_rules(
    ruleset: RulesetCreated,
    fs: &FsSpec,
) -> Result<(RulesetCreated, Vec<OwnedFd>, Vec<OwnedFd>), RulesetError> {
    let abi = ABI::V7;
    let dirs = open_paths(&fs.read_dirs);
    let files = open_paths(&fs.read_files);
    let read = AccessFs::from_read(abi);
    // What of `read` a rule on a file may grant (the kernel refuses directory rights there).
    let read_file = read & (AccessFs::ReadFile | AccessFs::Execute);
    let ruleset = ruleset
        .add_rules(path_beneath_rules(&fs.system_read, read))?
        .add_rules(path_beneath_rules(&fs.read_roots, read))?
        .add_rules(dirs.iter().map(|fd| rule(fd, read)))?
        .add_rules(files.iter().map(|fd| rule(fd, read_file)))?
        .add_rules(path_beneath_rules(&fs.list_only, AccessFs::ReadDir))?
        .add_rules(path_beneath_rules(&fs.devices, AccessFs::from_file(abi)))?
        .add_rules(path_beneath_rules(&fs.write_roots, AccessFs::from_all(abi)))?;
    Ok((ruleset, dirs, files))
}

/// Whether a listed directory is not one (any more): the landlock crate then narrows its rule
/// to a file's rights and reports the ruleset as partially enforced, which a process that did
/// not add the rule does not see.
fn not_all_directories(dirs: &[OwnedFd]) -> bool {
    dirs.iter().any(|fd| {
        rustix::fs::fstat(fd).is_ok_and(|st| !FileType::from_raw_mode(st.st_mode).is_dir())
    })
}

/// What a restriction enforced, as the report says it.
fn landlock_report(
    spec: &Spec,
    result: Result<landlock::RestrictionStatus, String>,
) -> LandlockReport {
    match result {
        Ok(status) => {
            let abi = match status.landlock {
                LandlockStatus::Available {
                    effective_abi,
                    kernel_abi,
                } => Some(kernel_abi.unwrap_or(effective_abi as i32)),
                _ => None,
            };
            LandlockReport {
                abi,
                status: match status.ruleset {
                    RulesetStatus::FullyEnforced => LandlockState::FullyEnforced,
                    RulesetStatus::PartiallyEnforced => LandlockState::PartiallyEnforced,
                    RulesetStatus::NotEnforced => LandlockState::NotEnforced,
                },
                network_blocked: spec.block_network
                    && status.ruleset != RulesetStatus::NotEnforced
                    && abi.is_some_and(|a| a >= 4),
                error: None,
            }
        }
        Err(e) => LandlockReport {
            abi: None,
            status: LandlockState::NotEnforced,
            network_blocked: false,
            error: Some(e),
        },
    }
}

/// Landlock in one process: the ruleset, its rules, the restriction.
fn landlock(spec: &Spec, fs: &FsSpec) -> (LandlockReport, Vec<OwnedFd>) {
    let mut fds = Vec::new();
    let result = create_ruleset(spec)
        .and_then(|ruleset| add_fs_rules(ruleset, fs))
        .and_then(|(ruleset, dirs, files)| {
            // The crate saw any narrowing itself and reports it.
            fds = dirs.into_iter().chain(files).collect();
            ruleset.restrict_self()
        })
        .map_err(|e| e.to_string());
    (landlock_report(spec, result), fds)
}

/// Landlock in PID 1 with the rules the relay added to the ruleset both hold, and its own on
/// what it mounted (`pid1`): the restriction, reported as partially enforced where the relay
/// saw a rule narrowed.
fn restrict_prepared(
    spec: &Spec,
    ruleset: Result<RulesetCreated, String>,
    rules: Result<bool, String>,
    pid1: &FsSpec,
) -> LandlockReport {
    let result = rules.and_then(|narrowed| {
        // The rules on what PID 1 mounted, which the crate checks itself.
        let (ruleset, _, _) = add_fs_rules(ruleset?, pid1).map_err(|e| e.to_string())?;
        let mut status = ruleset.restrict_self().map_err(|e| e.to_string())?;
        if narrowed && status.ruleset == RulesetStatus::FullyEnforced {
            status.ruleset = RulesetStatus::PartiallyEnforced;
        }
        Ok(status)
    });
    landlock_report(spec, result)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_apart_in_order_and_a_cut_one_ends_them() {
        let one = frame(&Finished { wait_status: 1 }).unwrap();
        let two = frame(&Finished { wait_status: 2 }).unwrap();
        let both = [one.clone(), two.clone()].concat();
        let frames = unframe(&both);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0], &one[4..]);
        assert_eq!(frames[1], &two[4..]);
        assert_eq!(unframe(&both[..both.len() - 1]).len(), 1);
        assert_eq!(unframe(&both[..3]).len(), 0);
        let oversized = (u32::try_from(MAX_FRAME).unwrap() + 1).to_le_bytes();
        assert!(unframe(&oversized).is_empty());
    }

    /// Without a mount namespace a masked tree is read entry by entry, its secrets left out;
    /// nothing is mounted and nothing is reported as hidden by an overlay.
    #[test]
    fn without_a_mount_namespace_a_masked_tree_is_read_entry_by_entry() {
        let t = tempfile::tempdir().unwrap();
        let etc = std::fs::canonicalize(t.path()).unwrap();
        std::fs::write(etc.join("passwd"), "x").unwrap();
        std::fs::write(etc.join("shadow"), "x").unwrap();
        std::fs::create_dir(etc.join("apt")).unwrap();
        let fs = FsSpec {
            read_roots: vec![],
            read_dirs: vec![],
            read_files: vec![],
            write_roots: vec![],
            system_read: vec![],
            list_only: vec![],
            devices: vec![],
            masked: vec![MaskedTree {
                root: etc.clone(),
                whiteouts: vec![PathBuf::from("shadow")],
                hidden: vec![format!("{}/shadow", etc.display())],
            }],
        };
        let mut applied = Applied::default();
        let fs = mask(fs, false, &mut applied);
        assert!(fs.masked.is_empty());
        assert_eq!(fs.read_files, vec![etc.join("passwd")]);
        assert_eq!(fs.read_dirs, vec![etc.join("apt")]);
        assert_eq!(fs.list_only, vec![etc.clone()]);
        assert!(fs.read_roots.is_empty());
        assert!(applied.hidden_by_overlay.is_empty() && applied.notes.is_empty());
    }

    /// The relay leaves the rules on what PID 1 mounts to PID 1: opened before PID 1's own
    /// `/proc` is mounted, a rule would name the host's.
    #[test]
    fn rules_on_what_pid_1_mounts_are_left_to_it() {
        let mut fs = FsSpec {
            system_read: ["/usr", "/proc", "/sys"]
                .iter()
                .map(PathBuf::from)
                .collect(),
            read_roots: vec![PathBuf::from("/proc/sys/kernel"), PathBuf::from("/procfs")],
            devices: vec![PathBuf::from("/dev/null")],
            ..FsSpec::default()
        };
        let pid1 = pid1_mounted(&mut fs);
        assert_eq!(pid1.system_read, [PathBuf::from("/proc")]);
        assert_eq!(pid1.read_roots, [PathBuf::from("/proc/sys/kernel")]);
        assert!(pid1.devices.is_empty());
        assert_eq!(
            fs.system_read,
            [PathBuf::from("/usr"), PathBuf::from("/sys")]
        );
        assert_eq!(fs.read_roots, [PathBuf::from("/procfs")]);
        assert_eq!(fs.devices, [PathBuf::from("/dev/null")]);
    }
}
