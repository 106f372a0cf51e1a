//! Guarded execution of an already-validated command.

mod affinity;
mod cgroup;
mod confine;
mod env;
mod output;
mod process;
mod profile;
mod sys;
mod trampoline;
mod written;

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use serde::{Deserialize, Serialize};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

pub use profile::Toolchain;

/// The system calls the seccomp filter answers with `EPERM`, by name and number (for tests that
/// check each entry from inside a confined run).
#[doc(hidden)]
pub use confine::DENIED_SYSCALLS;
pub use trampoline::{trampoline_main, trampoline_status};

use cgroup::PidsCgroup;
use output::{Capture, Rendered, head_cap};
use process::Process;

/// Execution settings: the `[bash.exec]` table of a policy file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExecConfig {
    /// Timeout when the request names none, in seconds (60).
    pub default_timeout_secs: u64,
    /// Upper bound for any requested timeout, in seconds (120).
    pub max_timeout_secs: u64,
    /// Characters kept of stdout and of stderr each (4000).
    pub max_output_chars: usize,
    /// Time between SIGTERM and SIGKILL on timeout or cancel, in milliseconds (500).
    pub kill_grace_ms: u64,
    /// The shell, run as `<shell> --noprofile --norc -c COMMAND` (`/bin/bash`).
    pub shell: PathBuf,
    /// Names of variables the child inherits; `*` is a wildcard, case is ignored.
    pub env_allow: Vec<String>,
    /// Names never inherited even when allowed (secrets); wins over `env_allow`.
    pub env_deny: Vec<String>,
    /// Variables set in the child whatever the parent has.
    pub env_set: BTreeMap<String, String>,
    /// System paths a confined child may read (and execute).
    pub system_read_paths: Vec<PathBuf>,
    /// Directories a confined child may read entry by entry, minus `hidden_paths` (`/etc`).
    pub filtered_read_paths: Vec<PathBuf>,
    /// Secrets never readable by a confined child even below a readable directory: absolute
    /// paths, `~/` for `$HOME`, `*` within one component (`/etc/ssh/ssh_host_*_key`).
    pub hidden_paths: Vec<String>,
    /// Read each of `filtered_read_paths` whole through a read-only overlay that whites out the
    /// `hidden_paths` below it (true), in the run's mount namespace: one Landlock rule instead
    /// of one per entry (~150 for `/etc`, most of a run's set-up), and a secret's name stays
    /// hidden whatever replaces it during the run. A tree with a mount below it, a link on a
    /// secret's way, or where the overlay cannot be mounted is read entry by entry instead.
    /// Needs `isolate_processes`.
    pub hide_by_overlay: bool,
    /// Toolchains whose `PATH` directories under `$HOME` widen to their install trees (read and
    /// execute, never write).
    pub toolchains: Vec<Toolchain>,
    /// Device files a confined child may read and write (no `/dev/stdout`-style links: they
    /// resolve to pipes, which Landlock rejects as rule targets).
    pub device_paths: Vec<PathBuf>,
    /// Process cap of a confined run (a pids cgroup; 256).
    pub max_processes: u32,
    /// Largest file a confined run may write, in bytes (1 GiB).
    pub max_file_size_bytes: u64,
    /// Bytes a confined run may write to storage, all its files and processes together (4 GiB);
    /// the run is stopped past it. Sampled every 100 ms from the kernel's per-process count.
    pub max_written_bytes: u64,
    /// CPU seconds a confined run may use (120).
    pub cpu_time_secs: u64,
    /// Memory a confined run may use, all its processes together, in bytes (4 GiB): a memory
    /// cgroup where one is available, else `RLIMIT_AS` per process.
    pub memory_max_bytes: u64,
    /// Join a cgroup v1 hierarchy for the pids and memory caps (true). Each join waits for an
    /// RCU grace period (~12 ms on an idle machine, more under load), the largest start-up cost.
    /// With false, a run on cgroup v1 is capped by its PID namespace instead (`pid_max`: at most
    /// `max_processes` + 300 tasks) and memory by `RLIMIT_AS` per process. No effect on v2.
    pub join_cgroup_v1: bool,
    /// Isolate a confined run from other processes: new PID (with its own `/proc`), mount, IPC
    /// and, when the network is blocked, network namespaces; no capabilities; a seccomp filter
    /// on sockets and kernel interfaces (true).
    pub isolate_processes: bool,
    /// Fail instead of running when the confinement cannot be fully enforced (true).
    pub require_confinement: bool,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

impl Default for ExecConfig {
    fn default() -> Self {
        ExecConfig {
            default_timeout_secs: 60,
            max_timeout_secs: 120,
            max_output_chars: 4000,
            kill_grace_ms: 500,
            shell: PathBuf::from("/bin/bash"),
            env_allow: strings(&[
                "PATH",
                "HOME",
                "LANG",
                "LANGUAGE",
                "LC_*",
                "TERM",
                "USER",
                "LOGNAME",
                "SHELL",
                "TZ",
                "COLORTERM",
                "NO_COLOR",
            ]),
            env_deny: strings(&[
                "*_TOKEN",
                "*_TOKEN_*",
                "*_SECRET",
                "*_SECRET_*",
                "*_KEY",
                "*_KEY_*",
                "*PASSWORD*",
                "*PASSWD*",
                "*_CREDENTIALS",
                "*CREDENTIAL*",
                "AWS_*",
                "GITHUB_TOKEN",
                "GH_TOKEN",
                "*_API_KEY",
                "*_AUTH",
                "*COOKIE*",
                "*SESSION*",
                "SSH_AUTH_SOCK",
            ]),
            env_set: BTreeMap::new(),
            system_read_paths: [
                "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/sys",
            ]
            .iter()
            .map(PathBuf::from)
            .collect(),
            filtered_read_paths: vec![PathBuf::from("/etc")],
            hidden_paths: profile::default_hidden_paths(),
            hide_by_overlay: true,
            toolchains: profile::default_toolchains(),
            device_paths: [
                "/dev/null",
                "/dev/zero",
                "/dev/full",
                "/dev/random",
                "/dev/urandom",
                "/dev/tty",
                "/dev/pts",
                "/dev/ptmx",
            ]
            .iter()
            .map(PathBuf::from)
            .collect(),
            max_processes: 256,
            max_file_size_bytes: 1 << 30,
            max_written_bytes: 4 << 30,
            cpu_time_secs: 120,
            memory_max_bytes: 4 << 30,
            join_cgroup_v1: true,
            isolate_processes: true,
            require_confinement: true,
        }
    }
}

/// Kernel confinement of one run, compiled by the caller from the same sandbox roots as the path
/// checks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Directories the command may read (besides the system paths).
    pub read_roots: Vec<PathBuf>,
    /// Directories the command may read and write (a private temp dir is always added).
    pub write_roots: Vec<PathBuf>,
    /// Deny TCP connect and bind (Landlock ABI >= 4).
    pub block_network: bool,
    /// Process cap (pids cgroup, plus `RLIMIT_NPROC`, which does not bind root).
    pub max_processes: Option<u32>,
    /// `RLIMIT_FSIZE` in bytes.
    pub max_file_size: Option<u64>,
    /// Bytes the whole run may write to storage before it is stopped.
    pub max_written: Option<u64>,
    /// `RLIMIT_CPU`.
    pub cpu_time: Option<Duration>,
    /// Memory cap of the whole run in bytes (memory cgroup, else `RLIMIT_AS`).
    pub memory_max: Option<u64>,
    /// New namespaces, no capabilities, seccomp (see [`ExecConfig::isolate_processes`]).
    pub isolate: bool,
    /// Fail with [`ExecError::Unconfined`] instead of running with less than asked.
    pub require_confinement: bool,
}

impl Confinement {
    /// A confinement to `write_roots` (read-write) and `read_roots` (read-only) with the limits and
    /// `require_confinement` of `config`, network blocked.
    pub fn from_config(
        config: &ExecConfig,
        read_roots: Vec<PathBuf>,
        write_roots: Vec<PathBuf>,
    ) -> Self {
        Confinement {
            read_roots,
            write_roots,
            block_network: true,
            max_processes: Some(config.max_processes),
            max_file_size: Some(config.max_file_size_bytes),
            max_written: Some(config.max_written_bytes),
            cpu_time: Some(Duration::from_secs(config.cpu_time_secs)),
            memory_max: Some(config.memory_max_bytes),
            isolate: config.isolate_processes,
            require_confinement: config.require_confinement,
        }
    }
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The command text, already validated by the analyzer.
    pub command: String,
    /// Working directory, already checked by the caller (fs-sandbox `execute-dir`).
    pub cwd: PathBuf,
    /// Requested timeout; `None` means the configured default; clamped to the maximum.
    pub timeout: Option<Duration>,
    /// Kernel confinement; `None` runs with the process-group, timeout and output guards only.
    pub confinement: Option<Confinement>,
}

/// Landlock enforcement as reported by the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandlockState {
    /// Every requested restriction is enforced.
    FullyEnforced,
    /// Some restrictions are enforced (an older kernel ABI).
    PartiallyEnforced,
    /// Nothing is enforced (no Landlock, or not attempted).
    #[default]
    NotEnforced,
}

impl LandlockState {
    /// The snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            LandlockState::FullyEnforced => "fully_enforced",
            LandlockState::PartiallyEnforced => "partially_enforced",
            LandlockState::NotEnforced => "not_enforced",
        }
    }
}

/// What Landlock enforced.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockReport {
    /// The kernel's Landlock ABI, when available.
    pub abi: Option<i32>,
    /// Enforcement status.
    pub status: LandlockState,
    /// TCP connect/bind is denied.
    pub network_blocked: bool,
    /// Why Landlock could not be applied.
    pub error: Option<String>,
}

/// Which protections were actually in force for a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfinementReport {
    /// Confinement was requested.
    pub requested: bool,
    /// Landlock result.
    pub landlock: LandlockReport,
    /// The process cap was in force through a pids cgroup.
    pub cgroup: bool,
    /// `cgroup-v1`/`cgroup-v2` when `cgroup` is true.
    pub cgroup_version: Option<String>,
    /// `pids.max` as read back from the kernel.
    pub cgroup_pids_max: Option<String>,
    /// Why no cgroup was used.
    pub cgroup_reason: Option<String>,
    /// Resource limits that were set (`fsize=N`, `cpu=N`, `nproc=N`, `as=N`).
    pub rlimits: Vec<String>,
    /// The memory cap as the kernel holds it: `cgroup:<bytes>` or `rlimit-as:<bytes>`.
    pub memory_max: Option<String>,
    /// Namespaces the command runs in (`pid`, `mount`, `ipc`, `net`, `user`).
    pub namespaces: Vec<String>,
    /// `/proc` shows only the command's own processes.
    pub private_proc: bool,
    /// `pid_max` of the command's PID namespace (a task cap that needs no cgroup).
    pub pid_max: Option<u64>,
    /// Every capability is dropped (bounding, ambient, inheritable, permitted, effective).
    pub capabilities_dropped: bool,
    /// The seccomp filters are installed.
    pub seccomp: bool,
    /// The command started with descriptors 0-2 only: every other one the runner's process held
    /// (its own, or one its caller left open) was closed at `exec`.
    pub inherited_fds_closed: bool,
    /// Toolchain directories made readable and executable.
    pub toolchains: Vec<PathBuf>,
    /// Directories read whole through an overlay that hides the secrets below them (see
    /// [`ExecConfig::hide_by_overlay`]).
    pub hidden_by_overlay: Vec<PathBuf>,
    /// Other notes (limits that failed, a missing report).
    pub notes: Vec<String>,
}

/// The outcome of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecResult {
    /// Exit code of the shell, `None` when it was killed by a signal.
    pub exit_code: Option<i32>,
    /// The terminating signal, if any.
    pub signal: Option<i32>,
    /// Standard output, lossily decoded, truncated with a marker.
    pub stdout: String,
    /// Standard error, lossily decoded, truncated with a marker.
    pub stderr: String,
    /// Stdout was cut.
    pub stdout_truncated: bool,
    /// Bytes of stdout not returned.
    pub stdout_dropped_bytes: u64,
    /// Stderr was cut.
    pub stderr_truncated: bool,
    /// Bytes of stderr not returned.
    pub stderr_dropped_bytes: u64,
    /// The timeout fired.
    pub timed_out: bool,
    /// The cancellation token fired.
    pub cancelled: bool,
    /// The run wrote more than its confinement's `max_written` and was stopped.
    pub write_cap_exceeded: bool,
    /// Bytes the run's processes wrote to storage, as last sampled (0 when not measured).
    pub bytes_written: u64,
    /// The effective timeout.
    pub timeout: Duration,
    /// Wall time of the run.
    pub duration: Duration,
    /// Which protections were in force.
    pub confinement: ConfinementReport,
}

/// Errors of the runner: the command could not be started as asked.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The working directory does not exist or is not a directory.
    #[error("working directory `{0}` is not a directory")]
    BadCwd(PathBuf),
    /// A private temporary directory could not be created.
    #[error("cannot create a private temp dir: {0}")]
    TempDir(#[source] std::io::Error),
    /// The process could not be spawned.
    #[error("cannot spawn `{program}`: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The trampoline could not be forked (see [`StartedTrampoline::fork`]).
    #[error("cannot fork the sandbox trampoline: {0}")]
    Fork(#[source] std::io::Error),
    /// Confinement was required and could not be enforced; nothing ran.
    #[error("refusing to run unconfined: {0}")]
    Unconfined(String),
}

/// The sandbox trampoline: an executable that runs [`trampoline_main`] (the
/// `bash-guard-sandbox-exec` binary, or `agent-guard __sandbox-exec` with its leading arguments).
#[derive(Debug, Clone)]
pub struct Trampoline {
    exe: PathBuf,
    prefix: Vec<std::ffi::OsString>,
}

impl Trampoline {
    /// The trampoline `exe`, run with no arguments.
    pub fn new(exe: impl Into<PathBuf>) -> Self {
        Trampoline {
            exe: exe.into(),
            prefix: Vec::new(),
        }
    }

    /// The trampoline `exe` run with leading arguments, e.g. the `agent-guard` binary with
    /// `["__sandbox-exec", "--"]`.
    pub fn with_args<I, S>(exe: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString>,
    {
        Trampoline {
            exe: exe.into(),
            prefix: args.into_iter().map(Into::into).collect(),
        }
    }

    /// Starts the trampoline before its run is known: it loads and then waits for its spec, so
    /// a caller that still has to judge the command (and load its policy) can start it first
    /// and pay its process start side by side with that work. It learns everything (limits,
    /// cgroups, Landlock rules, the command, its environment and directory) from
    /// [`Runner::run_started`]; a trampoline that does not get all of it never runs anything,
    /// and dropping the handle kills it.
    ///
    /// Must be called within a tokio runtime (the child is tokio's).
    pub fn start(&self) -> Result<StartedTrampoline, ExecError> {
        let spawn_err = |source| ExecError::Spawn {
            program: self.exe.clone(),
            source,
        };
        // Its standard input: a socket that brings it its spec and takes back its report (it
        // swaps the socket for /dev/null before `exec`).
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(spawn_err)?;
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.prefix)
            // Nothing of the caller's environment: the command's comes with its spec.
            .env_clear()
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let child = cmd.spawn().map_err(spawn_err)?;
        // `cmd` holds our copy of the trampoline's end: without dropping it the report would
        // never see end of file.
        drop(cmd);
        Ok(StartedTrampoline {
            child: Process::Spawned(child),
            socket: ours,
            prepared: None,
            apart: None,
            ahead: None,
        })
    }
}

/// A trampoline started by [`Trampoline::start`], waiting for its run. Dropping it kills the
/// trampoline, which has run nothing.
#[derive(Debug)]
pub struct StartedTrampoline {
    child: Process,
    socket: std::os::unix::net::UnixStream,
    /// Set by [`Runner::prepare`].
    prepared: Option<Prepared>,
    /// A forked trampoline's CPUs apart from its caller's, until its run is launched.
    apart: Option<affinity::Apart>,
    /// The namespaces a forked trampoline entered before its spec (see
    /// [`StartedTrampoline::fork_isolated`]): with a network namespace of its own or not.
    ahead: Option<bool>,
}

impl StartedTrampoline {
    /// Starts the trampoline in a fork of this process: [`Trampoline::start`] without an
    /// executable to load, so the trampoline is waiting for its spec almost at once (an `exec`
    /// and the dynamic loading of even a small binary take longer than the caller's whole
    /// parse and policy load). Everything else is as for [`Trampoline::start`]: the run comes
    /// over its socket, and dropping the handle kills it.
    ///
    /// The fork is refused (with [`ExecError::Fork`]) unless this process has exactly one
    /// thread: call it first in `main`, before any runtime or thread starts. The child is a
    /// copy of the caller at that point; it runs only the trampoline and exits (it never
    /// returns from this function). It needs a kernel with pidfds (Linux 5.3) to be waited for
    /// beside tokio's children; without one it is killed and the error returned, and
    /// [`Trampoline::start`] is the way.
    pub fn fork() -> Result<StartedTrampoline, ExecError> {
        Self::fork_with(None)
    }

    /// [`StartedTrampoline::fork`], and the trampoline enters the namespaces of an isolated run
    /// (a network namespace of its own when `private_net`) at once, before its spec: their
    /// creation then overlaps the caller's way to the limits instead of following it. A caller
    /// that can tell them before it has its policy (the defaults: isolated, network blocked) uses
    /// this; [`Runner::prepare`] refuses limits that ask for other namespaces (without
    /// isolation, or another network), and the caller then starts a trampoline again.
    pub fn fork_isolated(private_net: bool) -> Result<StartedTrampoline, ExecError> {
        Self::fork_with(Some(private_net))
    }

    fn fork_with(ahead: Option<bool>) -> Result<StartedTrampoline, ExecError> {
        // The trampoline's descriptors 0-2 are dup'ed into place below: none of the new ones
        // may already be one of them (a caller started with its standard input closed).
        standard_descriptors_open().map_err(ExecError::Fork)?;
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(ExecError::Fork)?;
        let (out, out_theirs) = std::io::pipe().map_err(ExecError::Fork)?;
        let (err, err_theirs) = std::io::pipe().map_err(ExecError::Fork)?;
        affinity::remember();
        match sys::fork().map_err(ExecError::Fork)? {
            sys::Forked::Child => {
                // Our copies of the caller's ends go first: a reader's end of file must not
                // wait for the trampoline.
                drop((ours, out, err));
                let code = match into_stdio(theirs.into(), out_theirs.into(), err_theirs.into()) {
                    Ok(()) => trampoline::forked_status(ahead),
                    Err(e) => {
                        trampoline::refuse(&format!("cannot set up the forked trampoline: {e}"))
                    }
                };
                std::process::exit(i32::from(code))
            }
            sys::Forked::Parent(pid) => {
                drop((theirs, out_theirs, err_theirs));
                // Its own group, as a spawned one's (`process_group(0)`): the child sets it
                // too, whichever runs first.
                let _ = rustix::process::setpgid(Some(pid), Some(pid));
                let forked =
                    process::Forked::new(pid, out.into(), err.into()).map_err(ExecError::Fork)?;
                Ok(StartedTrampoline {
                    child: Process::Forked(forked),
                    socket: ours,
                    prepared: None,
                    apart: Some(affinity::apart(pid)),
                    ahead,
                })
            }
        }
    }

    /// The trampoline's process id, while it has not been waited for.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }
}

/// Opens `/dev/null` on any of descriptors 0-2 that is closed, so that every descriptor opened
/// afterwards is above them. (Rust's own `main` does this at start-up; a caller from C or
/// `no_main` may not have.)
fn standard_descriptors_open() -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    loop {
        let null = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDWR,
            rustix::fs::Mode::empty(),
        )?;
        if null.as_raw_fd() > 2 {
            return Ok(());
        }
        // It fills a closed standard descriptor: it stays open as that one.
        std::mem::forget(null);
    }
}

/// The forked trampoline's side of [`StartedTrampoline::fork`]: its own process group, and the
/// socket and the two pipes as its standard input, output and error (the descriptors given
/// here are closed once copied there).
fn into_stdio(socket: OwnedFd, out: OwnedFd, err: OwnedFd) -> std::io::Result<()> {
    rustix::process::setpgid(None, None)?;
    rustix::stdio::dup2_stdin(&socket)?;
    rustix::stdio::dup2_stdout(&out)?;
    rustix::stdio::dup2_stderr(&err)?;
    Ok(())
}

/// What a trampoline was sent by [`Runner::prepare`]: the process half of its spec, and the
/// run's cgroups (removed again if it is dropped).
#[derive(Debug)]
struct Prepared {
    spec: trampoline::Spec,
    memory_max: Option<u64>,
    cgroup: Option<PidsCgroup>,
    /// What the cgroups' creation (and the file-system profile, once sent) reported.
    report: ConfinementReport,
    /// Set by [`Runner::prepare_files`].
    files: Option<PreparedFiles>,
}

/// What a trampoline was sent by [`Runner::prepare_files`]: the Landlock rules of these roots,
/// which include the run's private temp dir (removed again if it is dropped).
#[derive(Debug)]
struct PreparedFiles {
    read_roots: Vec<PathBuf>,
    write_roots: Vec<PathBuf>,
    tmp: tempfile::TempDir,
}

/// The process half of a trampoline's spec for `conf`.
fn spec_of(conf: &Confinement) -> trampoline::Spec {
    trampoline::Spec {
        block_network: conf.block_network,
        max_file_size: conf.max_file_size,
        cpu_time_secs: conf.cpu_time.map(|d| d.as_secs().max(1)),
        max_processes: conf.max_processes.map(u64::from),
        isolate: conf.isolate,
        pid_ns_max: conf.max_processes.map(u64::from).filter(|_| conf.isolate),
        require: conf.require_confinement,
    }
}

/// Runs validated commands under the guards of an [`ExecConfig`].
#[derive(Debug, Clone)]
pub struct Runner {
    config: ExecConfig,
    trampoline: Option<Trampoline>,
    cgroups: std::sync::Arc<cgroup::Pool>,
    /// The file-system profile (`/etc` entries, toolchains), computed once per runner: the
    /// environment it derives from does not change, and a file created in `/etc` later stays
    /// unreadable (fail closed).
    profile: std::sync::Arc<std::sync::OnceLock<profile::FsProfile>>,
}

impl Runner {
    /// A runner with no trampoline: confinement cannot be applied until
    /// [`Runner::with_trampoline`] names one.
    pub fn new(config: ExecConfig) -> Self {
        Runner {
            config,
            trampoline: None,
            cgroups: std::sync::Arc::default(),
            profile: std::sync::Arc::default(),
        }
    }

    /// Sets the executable that runs [`trampoline_main`] (the `bash-guard-sandbox-exec`
    /// binary, or `agent-guard __sandbox-exec` via [`Runner::with_trampoline_args`]).
    pub fn with_trampoline(mut self, exe: impl Into<PathBuf>) -> Self {
        self.trampoline = Some(Trampoline::new(exe));
        self
    }

    /// Sets a trampoline that needs leading arguments, e.g. the `agent-guard` binary with
    /// `["__sandbox-exec", "--"]`.
    pub fn with_trampoline_args<I, S>(mut self, exe: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString>,
    {
        self.trampoline = Some(Trampoline::with_args(exe, args));
        self
    }

    /// The configuration.
    pub fn config(&self) -> &ExecConfig {
        &self.config
    }

    /// The child's environment: the parent's, filtered by `env_allow`/`env_deny`, plus `env_set`.
    /// A variable whose name or value is not UTF-8 is left out (`std::env::vars` would panic on
    /// it, and no allow pattern can be meant for it).
    fn child_env(&self) -> Vec<(String, String)> {
        let utf8 = std::env::vars_os().filter_map(|(name, value)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        });
        let mut vars = env::filter(utf8, &self.config.env_allow, &self.config.env_deny);
        for (k, v) in &self.config.env_set {
            vars.retain(|(name, _)| name != k);
            vars.push((k.clone(), v.clone()));
        }
        vars
    }

    fn fs_profile(&self) -> &profile::FsProfile {
        self.profile.get_or_init(|| {
            let vars = self.child_env();
            let get = |name: &str| {
                vars.iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.as_str())
            };
            profile::build(
                &self.config.filtered_read_paths,
                &self.config.hidden_paths,
                self.config.hide_by_overlay && self.config.isolate_processes,
                &self.config.toolchains,
                &self.config.system_read_paths,
                get("PATH"),
                get("HOME").map(Path::new),
            )
        })
    }

    /// The Landlock half of a confined run: the request's roots, its private temp dir and the
    /// file-system profile. Records the toolchains and the profile's notes in `report`.
    fn fs_spec(
        &self,
        conf: &Confinement,
        tmp: &Path,
        report: &mut ConfinementReport,
    ) -> trampoline::FsSpec {
        let mut write_roots = conf.write_roots.clone();
        write_roots.push(tmp.to_path_buf());
        let profile = self.fs_profile();
        report.toolchains = profile.toolchains.clone();
        report.notes.extend(profile.notes.iter().cloned());
        let mut fs = trampoline::FsSpec {
            read_roots: conf.read_roots.clone(),
            write_roots,
            system_read: self.config.system_read_paths.clone(),
            devices: self.config.device_paths.clone(),
            ..trampoline::FsSpec::default()
        };
        fs.add_listed(profile);
        for tree in &profile.masked {
            // An overlay is read-only: a tree that holds a write root is read entry by entry.
            if fs.write_roots.iter().any(|r| r.starts_with(&tree.root)) {
                fs.add_listed(&profile::entry_by_entry(tree));
            } else {
                fs.masked.push(tree.clone());
            }
        }
        fs
    }

    /// The effective timeout of a request: the default when none, clamped to the maximum.
    pub fn effective_timeout(&self, requested: Option<Duration>) -> Duration {
        let max = Duration::from_secs(self.config.max_timeout_secs);
        requested
            .unwrap_or(Duration::from_secs(self.config.default_timeout_secs))
            .min(max)
    }

    /// Runs `request`. On timeout or cancel the whole process group (and cgroup) is terminated and
    /// the result says so; background processes left when the shell exits are killed too.
    pub async fn run(
        &self,
        request: &ExecRequest,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, ExecError> {
        let started = match (&request.confinement, &self.trampoline) {
            (Some(_), Some(trampoline)) => {
                if !request.cwd.is_dir() {
                    return Err(ExecError::BadCwd(request.cwd.clone()));
                }
                Some(trampoline.start()?)
            }
            _ => None,
        };
        self.run_with(started, request, cancel).await
    }

    /// Runs `request` through a trampoline started ahead with [`Trampoline::start`] (any
    /// trampoline: this runner's own is not used). A request without confinement kills it and
    /// runs as [`Runner::run`] would.
    pub async fn run_started(
        &self,
        started: StartedTrampoline,
        request: &ExecRequest,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, ExecError> {
        self.run_with(Some(started), request, cancel).await
    }

    async fn run_with(
        &self,
        mut started: Option<StartedTrampoline>,
        request: &ExecRequest,
        cancel: &CancellationToken,
    ) -> Result<ExecResult, ExecError> {
        if !request.cwd.is_dir() {
            return Err(ExecError::BadCwd(request.cwd.clone()));
        }
        let begun = Instant::now();
        let timeout = self.effective_timeout(request.timeout);
        // The temp dir whose rules a prepared trampoline already applies, else a new one.
        let prepared_files = started
            .as_mut()
            .and_then(|s| s.prepared.as_mut())
            .and_then(|p| p.files.take());
        let (private, rules_sent) = match prepared_files {
            Some(files) => {
                // The rules the trampoline applies must be the request's.
                let conf = request.confinement.as_ref();
                if conf.is_some_and(|c| {
                    c.read_roots != files.read_roots || c.write_roots != files.write_roots
                }) {
                    return Err(ExecError::Unconfined(
                        "the trampoline was prepared with other roots than the request's".into(),
                    ));
                }
                (files.tmp, true)
            }
            None => (private_tmp()?, false),
        };
        // The command's TMPDIR itself: the report comes back through a socket, so nothing of the
        // runner's lives in there to protect from the command (and one mkdir/rmdir less per run).
        let tmp = private.path().to_path_buf();
        let mut report = ConfinementReport::default();
        let run = Run {
            request,
            timeout,
            begun,
            cancel,
        };
        let result = match (&request.confinement, started) {
            (Some(conf), Some(started)) => {
                let mut cgroup = None;
                let result = self
                    .run_confined(started, conf, (&tmp, rules_sent), &mut cgroup, &run)
                    .await;
                if let Some(cg) = cgroup {
                    self.cgroups.give_back(cg);
                }
                result
            }
            (Some(conf), None) => {
                report.requested = true;
                let reason = "no sandbox trampoline is configured".to_string();
                if conf.require_confinement {
                    return Err(ExecError::Unconfined(reason));
                }
                report.notes.push(reason);
                self.run_direct(&tmp, report, &run).await
            }
            // A trampoline started for a run that needs none is killed as it drops.
            (None, _) => self.run_direct(&tmp, report, &run).await,
        };
        drop(private);
        result
    }

    /// The command as the shell runs it: `<shell> --noprofile --norc -c COMMAND`.
    fn shell_args(command: &str) -> Vec<String> {
        ["--noprofile", "--norc", "-c", command]
            .iter()
            .map(|a| (*a).to_string())
            .collect()
    }

    /// The command's environment: [`Runner::child_env`] with `TMPDIR` set to the run's own.
    fn command_env(&self, tmp: &Path) -> Result<Vec<(String, String)>, ExecError> {
        let tmp = tmp.to_str().ok_or_else(|| {
            ExecError::TempDir(std::io::Error::other("the temp dir's path is not UTF-8"))
        })?;
        let mut vars = self.child_env();
        vars.retain(|(name, _)| name != "TMPDIR");
        vars.push(("TMPDIR".to_string(), tmp.to_string()));
        Ok(vars)
    }

    /// Runs the shell itself, with the process-group, timeout and output guards only.
    async fn run_direct(
        &self,
        tmp: &Path,
        report: ConfinementReport,
        run: &Run<'_>,
    ) -> Result<ExecResult, ExecError> {
        let mut cmd = Command::new(&self.config.shell);
        cmd.args(Self::shell_args(&run.request.command))
            .current_dir(&run.request.cwd)
            .env_clear()
            .envs(self.command_env(tmp)?)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let child = cmd.spawn().map_err(|source| ExecError::Spawn {
            program: self.config.shell.clone(),
            source,
        })?;
        self.supervise(Process::Spawned(child), None, None, report, run)
            .await
    }

    /// Sends a started trampoline the rest of its spec (all of it when it was not prepared):
    /// the Landlock rules of the run's temp dir `tmp` and its roots unless
    /// [`Runner::prepare_files`] sent them (`rules_sent`), then the command. Then supervises the
    /// run. Whatever is not sent leaves the trampoline short of a frame, and it then refuses to
    /// run anything (an error return also kills it).
    async fn run_confined(
        &self,
        started: StartedTrampoline,
        conf: &Confinement,
        (tmp, rules_sent): (&Path, bool),
        cgroup_slot: &mut Option<PidsCgroup>,
        run: &Run<'_>,
    ) -> Result<ExecResult, ExecError> {
        let StartedTrampoline {
            child,
            socket,
            prepared,
            apart,
            ahead: _,
        } = started;
        let prepared = match prepared {
            Some(p) => p,
            None => self.send_setup(&socket, conf)?,
        };
        let Prepared {
            spec,
            memory_max,
            cgroup,
            mut report,
            // Taken by `run_with` (its temp dir is the run's).
            files: _,
        } = prepared;
        *cgroup_slot = cgroup;
        // The limits the trampoline already applies must be the request's.
        if spec != spec_of(conf) || memory_max != conf.memory_max {
            return Err(ExecError::Unconfined(
                "the trampoline was prepared with other limits than the request's".into(),
            ));
        }
        if !rules_sent {
            send_frame(&socket, &self.fs_spec(conf, tmp, &mut report))?;
        }
        let launch = trampoline::Launch {
            program: self.config.shell.clone(),
            args: Self::shell_args(&run.request.command),
            env: self.command_env(tmp)?,
            cwd: run.request.cwd.clone(),
        };
        send_frame(&socket, &launch)?;
        // Launched: the caller may go anywhere again (an error above does the same as it drops).
        drop(apart);
        self.supervise(child, Some(socket), cgroup_slot.as_ref(), report, run)
            .await
    }

    /// Sends a started trampoline the process half of a run confined by `conf` (its limits,
    /// namespaces and cgroups, which are created now), so that it enters its namespaces while
    /// the caller still judges the command; [`Runner::prepare_files`] may then send the
    /// Landlock rules, and [`Runner::run_started`] sends the rest. A trampoline that is not
    /// prepared is prepared by the run. The run refuses a request whose limits differ from the
    /// prepared ones; the roots may differ until they are sent.
    pub fn prepare(
        &self,
        started: &mut StartedTrampoline,
        conf: &Confinement,
    ) -> Result<(), ExecError> {
        if started.prepared.is_some() {
            return Err(ExecError::Unconfined(
                "the trampoline is already prepared".into(),
            ));
        }
        if let Some(private_net) = started.ahead
            && (!conf.isolate || conf.block_network != private_net)
        {
            return Err(ExecError::Unconfined(
                "the trampoline entered other namespaces than the run's limits ask for".into(),
            ));
        }
        started.prepared = Some(self.send_setup(&started.socket, conf)?);
        Ok(())
    }

    /// Sends a prepared trampoline the Landlock rules of a run confined by `conf` (its roots, a
    /// private temp dir created now, the file-system profile), so that it applies them, drops
    /// its capabilities and installs its seccomp filters while the caller still judges the
    /// command; [`Runner::run_started`] then sends the command alone. The run refuses a request
    /// whose roots differ from these.
    pub fn prepare_files(
        &self,
        started: &mut StartedTrampoline,
        conf: &Confinement,
    ) -> Result<(), ExecError> {
        let prepared = match started.prepared.as_mut() {
            Some(p) if p.files.is_none() => p,
            Some(_) => {
                return Err(ExecError::Unconfined(
                    "the trampoline's files are already prepared".into(),
                ));
            }
            None => {
                return Err(ExecError::Unconfined(
                    "the trampoline is not prepared: call `Runner::prepare` first".into(),
                ));
            }
        };
        let tmp = private_tmp()?;
        send_frame(
            &started.socket,
            &self.fs_spec(conf, tmp.path(), &mut prepared.report),
        )?;
        prepared.files = Some(PreparedFiles {
            read_roots: conf.read_roots.clone(),
            write_roots: conf.write_roots.clone(),
            tmp,
        });
        Ok(())
    }

    /// Sends the trampoline its first frame, then creates the run's cgroups (while it enters
    /// its namespaces) and sends them.
    fn send_setup(
        &self,
        socket: &std::os::unix::net::UnixStream,
        conf: &Confinement,
    ) -> Result<Prepared, ExecError> {
        let spec = spec_of(conf);
        send_frame(socket, &spec)?;
        let mut report = ConfinementReport {
            requested: true,
            ..ConfinementReport::default()
        };
        // Dropped on an error below, the cgroups are removed again.
        let cgroup = self.take_cgroup(conf, &mut report)?;
        let memory_in_cgroup = cgroup.as_ref().is_some_and(PidsCgroup::has_memory);
        let cgroups = trampoline::CgroupSpec {
            cgroup_procs: cgroup
                .as_ref()
                .map(PidsCgroup::join_files)
                .unwrap_or_default(),
            address_space: conf.memory_max.filter(|_| !memory_in_cgroup),
        };
        send_frame(socket, &cgroups)?;
        Ok(Prepared {
            spec,
            memory_max: conf.memory_max,
            cgroup,
            report,
            files: None,
        })
    }

    /// The run's cgroups (taken from the pool), or why there are none; an error when a run that
    /// must be confined cannot go without one.
    fn take_cgroup(
        &self,
        conf: &Confinement,
        report: &mut ConfinementReport,
    ) -> Result<Option<PidsCgroup>, ExecError> {
        let skip_v1 = !self.config.join_cgroup_v1 && conf.isolate && cgroup::is_v1();
        if skip_v1 {
            report.cgroup_reason = Some(
                "cgroup v1 not joined (join_cgroup_v1 = false): the PID namespace caps \
                 tasks, RLIMIT_AS caps memory"
                    .into(),
            );
        }
        let Some(max) = conf.max_processes.filter(|_| !skip_v1) else {
            return Ok(None);
        };
        match self.cgroups.take(max, conf.memory_max) {
            Ok(cg) => Ok(Some(cg)),
            Err(reason) => {
                let root = rustix::process::getuid().is_root();
                // With isolation the PID namespace's pid_max still binds root.
                if conf.require_confinement && root && !conf.isolate {
                    return Err(ExecError::Unconfined(format!(
                        "no process cap for root: {reason}"
                    )));
                }
                report.cgroup_reason = Some(reason);
                Ok(None)
            }
        }
    }

    /// Waits for a spawned run (the shell, or the trampoline that becomes it) under the
    /// timeout, the cancellation and the write cap, collects its output and, confined, the
    /// trampoline's report.
    async fn supervise(
        &self,
        mut child: Process,
        socket: Option<std::os::unix::net::UnixStream>,
        cgroup: Option<&PidsCgroup>,
        mut report: ConfinementReport,
        run: &Run<'_>,
    ) -> Result<ExecResult, ExecError> {
        let Run {
            request,
            timeout,
            begun: started,
            cancel,
        } = *run;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw);
        let cap = head_cap(self.config.max_output_chars);
        let (stdout, stderr) = child.take_output().map_err(|source| ExecError::Spawn {
            program: self.config.shell.clone(),
            source,
        })?;
        let read = |output: Option<process::Output>| {
            output.map(|mut s| tokio::spawn(async move { Capture::read_from(&mut s, cap).await }))
        };
        let (out_task, err_task) = (read(stdout), read(stderr));
        if let Some(cg) = cgroup {
            report.cgroup_version = Some(cg.version.name().to_string());
            report.cgroup_pids_max = cg.read_max();
            report.memory_max = cg.read_memory_max().map(|m| format!("cgroup:{m}"));
        }

        let mut timed_out = false;
        let mut cancelled = false;
        let mut write_cap_exceeded = false;
        let write_cap = request.confinement.as_ref().and_then(|c| c.max_written);
        let mut meter = written::WriteMeter::default();
        let root = child.id().and_then(|id| i32::try_from(id).ok());
        let wants_report = socket.is_some();
        let mut reports = Reports::new(socket);
        let status: Option<ExitStatus> = tokio::select! {
            st = child.wait() => st.ok(),
            st = reports.finished() => Some(st),
            () = tokio::time::sleep(timeout) => { timed_out = true; None }
            () = cancel.cancelled() => { cancelled = true; None }
            () = watch_writes(&mut meter, write_cap, cgroup, root) => {
                write_cap_exceeded = true;
                None
            }
        };
        let status = match status {
            Some(st) => Some(st),
            // Past the write cap every moment of grace is more bytes written, and a shell that is
            // its namespace's init ignores SIGTERM while its children die of it (the rest of the
            // script would run on): the run ends at once.
            None if write_cap_exceeded => {
                signal_group(pgid, cgroup, Signal::KILL);
                child.wait().await.ok()
            }
            None => {
                signal_group(pgid, cgroup, Signal::TERM);
                let grace = Duration::from_millis(self.config.kill_grace_ms);
                match tokio::time::timeout(grace, child.wait()).await {
                    Ok(st) => st.ok(),
                    Err(_) => {
                        signal_group(pgid, cgroup, Signal::KILL);
                        child.wait().await.ok()
                    }
                }
            }
        };
        // The shell is gone; nothing it started may outlive the run (or hold the pipes open).
        signal_group(pgid, cgroup, Signal::KILL);
        if let Some(cg) = cgroup {
            // A cgroup that is not empty is not given back for reuse (see `Pool::give_back`).
            let _ = cg.kill_all().await;
        }
        let drain = Duration::from_millis(self.config.kill_grace_ms.max(100));
        let stdout = collect(out_task, drain).await;
        let stderr = collect(err_task, drain).await;
        let stdout = stdout.finish(self.config.max_output_chars);
        let stderr = stderr.finish(self.config.max_output_chars);

        if wants_report {
            match reports.report() {
                Some(applied) => {
                    report.landlock = applied.landlock;
                    report.cgroup = applied.cgroup_joined;
                    if let Some(e) = applied.cgroup_error {
                        report.cgroup_reason = Some(e);
                    }
                    if let Some(r#as) = applied.rlimits.iter().find_map(|r| r.strip_prefix("as=")) {
                        report.memory_max = Some(format!("rlimit-as:{as}", as = r#as));
                    }
                    report.rlimits = applied.rlimits;
                    report.notes.extend(applied.rlimit_errors);
                    report.namespaces = applied.namespaces;
                    report.private_proc = applied.private_proc;
                    report.hidden_by_overlay = applied.hidden_by_overlay;
                    report.pid_max = applied.pid_max;
                    report.capabilities_dropped = applied.capabilities_dropped;
                    report.seccomp = applied.seccomp;
                    report.inherited_fds_closed = applied.descriptors_closed;
                    report.notes.extend(applied.isolation_errors);
                    report.notes.extend(applied.notes);
                    if let Some(reason) = applied.refused {
                        return Err(ExecError::Unconfined(reason));
                    }
                }
                None => {
                    let note = "the trampoline wrote no report".to_string();
                    if request
                        .confinement
                        .as_ref()
                        .is_some_and(|c| c.require_confinement)
                    {
                        return Err(ExecError::Unconfined(note));
                    }
                    report.notes.push(note);
                }
            }
        }
        if !report.cgroup {
            report.cgroup_version = None;
            report.cgroup_pids_max = None;
            if report
                .memory_max
                .as_deref()
                .is_some_and(|m| m.starts_with("cgroup:"))
            {
                report.memory_max = None;
            }
        }
        use std::os::unix::process::ExitStatusExt;
        Ok(ExecResult {
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            stdout: with_marker(&stdout),
            stderr: with_marker(&stderr),
            stdout_truncated: stdout.truncated,
            stdout_dropped_bytes: stdout.dropped_bytes,
            stderr_truncated: stderr.truncated,
            stderr_dropped_bytes: stderr.dropped_bytes,
            timed_out,
            cancelled,
            write_cap_exceeded,
            bytes_written: meter.total(),
            timeout,
            duration: started.elapsed(),
            confinement: report,
        })
    }
}

/// A run's private temp dir (its command's `TMPDIR`).
fn private_tmp() -> Result<tempfile::TempDir, ExecError> {
    tempfile::Builder::new()
        .prefix("bash-guard-")
        .tempdir()
        .map_err(ExecError::TempDir)
}

/// What every path of a run shares.
#[derive(Clone, Copy)]
struct Run<'a> {
    request: &'a ExecRequest,
    timeout: Duration,
    begun: Instant,
    cancel: &'a CancellationToken,
}

/// Writes one frame to the trampoline. The socket's buffer holds a spec of any usual size, so
/// this does not wait for the trampoline; a larger one waits until it reads, or fails once it is
/// gone.
fn send_frame<T: Serialize>(
    mut socket: &std::os::unix::net::UnixStream,
    value: &T,
) -> Result<(), ExecError> {
    use std::io::Write;
    let bytes = trampoline::frame(value).map_err(ExecError::Unconfined)?;
    socket
        .write_all(&bytes)
        .map_err(|e| ExecError::Unconfined(format!("cannot send the spec: {e}")))
}

/// The trampoline's frames back to the runner, on its socket: the report (written by PID 1
/// before `exec`) and, isolated, how PID 1 ended (written by the trampoline before its own exit,
/// see [`trampoline::Finished`]).
struct Reports {
    stream: Option<tokio::net::UnixStream>,
    buf: Vec<u8>,
}

impl Reports {
    fn new(socket: Option<std::os::unix::net::UnixStream>) -> Reports {
        let stream = socket.and_then(|s| {
            s.set_nonblocking(true).ok()?;
            tokio::net::UnixStream::from_std(s).ok()
        });
        Reports {
            stream,
            buf: Vec::new(),
        }
    }

    /// How PID 1 ended, once the trampoline says so; never returns when it does not (no
    /// isolation, the trampoline could not leave the run's cgroups, or it died): the run's end
    /// is then the trampoline's exit.
    async fn finished(&mut self) -> ExitStatus {
        use std::os::unix::process::ExitStatusExt;
        use tokio::io::AsyncReadExt;
        loop {
            let status = trampoline::unframe(&self.buf)
                .get(1)
                .and_then(|f| serde_json::from_slice::<trampoline::Finished>(f).ok());
            if let Some(finished) = status {
                return ExitStatus::from_raw(finished.wait_status);
            }
            let read = match self.stream.as_mut() {
                Some(stream) => stream.read_buf(&mut self.buf).await,
                None => Ok(0),
            };
            if !matches!(read, Ok(n) if n > 0) {
                return std::future::pending().await;
            }
        }
    }

    /// The report, from what was read and what can be read now. Every writer is gone by now
    /// (PID 1 replaced the socket with /dev/null before `exec`, the trampoline ended or died);
    /// never waiting all the same, so a stray holder of its end can only make the report
    /// missing (fail closed), never hang the run.
    fn report(mut self) -> Option<trampoline::Applied> {
        if let Some(stream) = &self.stream {
            while let Ok(n) = stream.try_read_buf(&mut self.buf) {
                if n == 0 {
                    break;
                }
            }
        }
        let frames = trampoline::unframe(&self.buf);
        serde_json::from_slice(frames.first()?).ok()
    }
}

/// Returns once the run has written more than `cap` bytes; never when there is no cap. The run's
/// processes are its cgroup's, else the spawned process and its descendants.
async fn watch_writes(
    meter: &mut written::WriteMeter,
    cap: Option<u64>,
    cgroup: Option<&PidsCgroup>,
    root: Option<i32>,
) {
    let Some(cap) = cap else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(written::POLL).await;
        let pids: Vec<i32> = match (cgroup, root) {
            (Some(cg), _) => cg
                .pids()
                .into_iter()
                .map(Pid::as_raw_nonzero)
                .map(|p| p.get())
                .collect(),
            (None, Some(root)) => written::descendants(root),
            (None, None) => Vec::new(),
        };
        if meter.sample(&pids) > cap {
            return;
        }
    }
}

fn signal_group(pgid: Option<Pid>, cgroup: Option<&PidsCgroup>, sig: Signal) {
    if let Some(pgid) = pgid {
        // ESRCH (the group is already empty) is the expected outcome.
        let _ = rustix::process::kill_process_group(pgid, sig);
    }
    if let Some(cg) = cgroup {
        cg.signal_all(sig);
    }
}

async fn collect(task: Option<tokio::task::JoinHandle<Capture>>, wait: Duration) -> Capture {
    let Some(mut task) = task else {
        return Capture::default();
    };
    match tokio::time::timeout(wait, &mut task).await {
        Ok(Ok(c)) => c,
        // A process that escaped the group and cgroup still holds the pipe: stop reading.
        _ => {
            task.abort();
            Capture::default()
        }
    }
}

fn with_marker(r: &Rendered) -> String {
    if r.truncated {
        format!(
            "{}\n[... output truncated: {} of {} bytes dropped]",
            r.text, r.dropped_bytes, r.total_bytes
        )
    } else {
        r.text.clone()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// Our end of a socket whose other end wrote a report, then `more` frames.
    fn reports_after(more: &[Vec<u8>]) -> (Reports, std::os::unix::net::UnixStream) {
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let report = trampoline::Applied {
            seccomp: true,
            ..trampoline::Applied::default()
        };
        theirs
            .write_all(&trampoline::frame(&report).unwrap())
            .unwrap();
        for frame in more {
            theirs.write_all(frame).unwrap();
        }
        (Reports::new(Some(ours)), theirs)
    }

    #[tokio::test]
    async fn the_status_frame_ends_the_run_and_the_report_precedes_it() {
        use std::os::unix::process::ExitStatusExt as _;
        let finished = trampoline::Finished {
            wait_status: 3 << 8,
        };
        let (mut reports, _theirs) = reports_after(&[trampoline::frame(&finished).unwrap()]);
        let status = reports.finished().await;
        assert_eq!(status, ExitStatus::from_raw(3 << 8));
        assert_eq!(status.code(), Some(3));
        assert!(reports.report().unwrap().seccomp);
    }

    #[tokio::test]
    async fn without_a_status_frame_the_run_waits_for_the_trampoline() {
        // A report, then the end of input: no status, so `finished` never returns.
        let (mut reports, theirs) = reports_after(&[]);
        drop(theirs);
        let waited = tokio::time::timeout(Duration::from_millis(100), reports.finished()).await;
        assert!(waited.is_err());
        assert!(reports.report().unwrap().seccomp);
    }
}
