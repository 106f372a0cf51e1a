//! A per-run pids cgroup: the process cap that also binds root, and a handle to kill every task
//! of the run, including ones that left the process group with `setsid`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustix::process::{Pid, Signal};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Which cgroup hierarchy holds the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V1,
    V2,
}

impl Version {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Version::V1 => "cgroup-v1",
            Version::V2 => "cgroup-v2",
        }
    }
}

/// A cgroup directory created for one run; removed by [`PidsCgroup::remove`].
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    dir: PathBuf,
    pub(crate) version: Version,
    /// The memory cgroup of the run: the same directory on v2, one in the memory hierarchy on v1;
    /// `None` where no memory controller is available (the runner then falls back to
    /// `RLIMIT_AS`).
    memory: Option<PathBuf>,
}

/// This process's mount table and cgroup membership, read once for every controller located.
struct Tables {
    mounts: String,
    own: String,
}

impl Tables {
    fn read() -> Result<Tables, String> {
        Ok(Tables {
            mounts: std::fs::read_to_string("/proc/self/mounts")
                .map_err(|e| format!("cannot read /proc/self/mounts: {e}"))?,
            own: std::fs::read_to_string("/proc/self/cgroup")
                .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?,
        })
    }
}

/// Finds where `controller` is mounted and which cgroup this process is in there.
fn locate(controller: &str) -> Result<(PathBuf, Version), String> {
    locate_in(&Tables::read()?, controller)
}

fn locate_in(tables: &Tables, controller: &str) -> Result<(PathBuf, Version), String> {
    let (mounts, own) = (&tables.mounts, &tables.own);
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(mnt), Some(fstype), Some(opts)) = (fields.get(1), fields.get(2), fields.get(3))
        else {
            continue;
        };
        if *fstype == "cgroup" && opts.split(',').any(|o| o == controller) {
            let rel = own
                .lines()
                .find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
                    ctrls.split(',').any(|c| c == controller).then_some(path)
                })
                .unwrap_or("/");
            return Ok((join(mnt, rel), Version::V1));
        }
    }
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(mnt), Some(fstype)) = (fields.get(1), fields.get(2)) else {
            continue;
        };
        if *fstype == "cgroup2" {
            let rel = own
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .unwrap_or("/");
            let dir = join(mnt, rel);
            let subtree =
                std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
            if subtree.split_whitespace().any(|c| c == controller) {
                return Ok((dir, Version::V2));
            }
        }
    }
    Err(format!(
        "no {controller} cgroup controller is mounted or delegated to this process"
    ))
}

/// True when the pids controller is on a cgroup v1 hierarchy (joins wait for an RCU grace
/// period there).
pub(crate) fn is_v1() -> bool {
    matches!(locate("pids"), Ok((_, Version::V1)))
}

fn join(mnt: &str, rel: &str) -> PathBuf {
    Path::new(mnt).join(rel.trim_start_matches('/'))
}

impl PidsCgroup {
    /// Creates a fresh child cgroup with `pids.max = max`, and a memory cap of `memory_max` bytes
    /// when a memory controller is available.
    pub(crate) fn create(max: u32, memory_max: Option<u64>) -> Result<Self, String> {
        let tables = Tables::read()?;
        let (parent, version) = locate_in(&tables, "pids")?;
        let name = format!(
            "bash-guard-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = parent.join(&name);
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create cgroup `{}`: {e}", dir.display()))?;
        let mut cg = PidsCgroup {
            dir,
            version,
            memory: None,
        };
        // On failure the drop removes the directory again.
        cg.set_max(max)?;
        if memory_max.is_some() {
            cg.memory = match (version, locate_in(&tables, "memory")) {
                (Version::V2, Ok((mparent, Version::V2))) if mparent == parent => {
                    Some(cg.dir.clone())
                }
                (_, Ok((mparent, Version::V1))) => {
                    let mdir = mparent.join(&name);
                    std::fs::create_dir(&mdir).ok().map(|()| mdir)
                }
                _ => None,
            };
        }
        if let Some(bytes) = memory_max
            && cg.memory.is_some()
            && cg.set_memory_max(bytes).is_err()
        {
            cg.remove_memory();
        }
        Ok(cg)
    }

    /// The files a task writes to in order to join (pids, then memory on v1).
    ///
    /// On v1 these are the `tasks` files, for the trampoline to write `0` (itself, one thread):
    /// a single-thread move of the writer skips the global threadgroup rwsem, whose write lock
    /// waits for an RCU grace period (~12 ms isolated, the largest start-up cost when joining
    /// through `cgroup.procs`). The trampoline is single-threaded, so its one thread is the
    /// whole process; it checks that before writing (see `trampoline::join_cgroups`). On v2,
    /// `cgroup.procs`.
    pub(crate) fn join_files(&self) -> Vec<PathBuf> {
        let file = match self.version {
            Version::V1 => "tasks",
            Version::V2 => "cgroup.procs",
        };
        let mut files = vec![self.dir.join(file)];
        if let Some(m) = &self.memory
            && *m != self.dir
        {
            files.push(m.join(file));
        }
        files
    }

    /// The memory cap as the kernel holds it, in bytes; `None` without a memory cgroup.
    pub(crate) fn read_memory_max(&self) -> Option<String> {
        let m = self.memory.as_ref()?;
        let file = match self.version {
            Version::V2 => "memory.max",
            Version::V1 => "memory.limit_in_bytes",
        };
        std::fs::read_to_string(m.join(file))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// True when the run's memory is capped by this cgroup.
    pub(crate) fn has_memory(&self) -> bool {
        self.memory.is_some()
    }

    fn set_memory_max(&self, bytes: u64) -> Result<(), String> {
        let Some(m) = &self.memory else {
            return Err("no memory cgroup".into());
        };
        let write = |file: &str, value: String| {
            std::fs::write(m.join(file), value)
                .map_err(|e| format!("cannot set {file} in `{}`: {e}", m.display()))
        };
        match self.version {
            Version::V2 => {
                write("memory.max", bytes.to_string())?;
                // Swap would let the run exceed the cap; absent when swap accounting is off.
                let _ = write("memory.swap.max", "0".into());
            }
            Version::V1 => {
                // memsw must stay >= the limit: lower it in the order that keeps that true.
                let memsw = m.join("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    let _ = write("memory.memsw.limit_in_bytes", "-1".into());
                    write("memory.limit_in_bytes", bytes.to_string())?;
                    write("memory.memsw.limit_in_bytes", bytes.to_string())?;
                } else {
                    write("memory.limit_in_bytes", bytes.to_string())?;
                }
            }
        }
        Ok(())
    }

    fn remove_memory(&mut self) {
        if let Some(m) = self.memory.take()
            && m != self.dir
        {
            let _ = std::fs::remove_dir(&m);
        }
    }

    fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// The limit as the kernel holds it (proves the cap is in force).
    pub(crate) fn read_max(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join("pids.max"))
            .ok()
            .map(|s| s.trim().to_string())
    }

    pub(crate) fn pids(&self) -> Vec<Pid> {
        std::fs::read_to_string(self.procs_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
            .filter_map(Pid::from_raw)
            .collect()
    }

    /// Sends `sig` to every task of the cgroup.
    pub(crate) fn signal_all(&self, sig: Signal) {
        for pid in self.pids() {
            let _ = rustix::process::kill_process(pid, sig);
        }
    }

    /// Kills every task and waits (bounded) until the cgroup is empty; true when it is. A task
    /// forking while it is being killed is caught on the next pass; the pids cap bounds how many
    /// there can be.
    pub(crate) async fn kill_all(&self) -> bool {
        if self.version == Version::V2 {
            let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        }
        for _ in 0..200 {
            let pids = self.pids();
            if pids.is_empty() {
                return true;
            }
            for pid in pids {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        false
    }

    /// Sets `pids.max` again (a reused cgroup may have held another cap).
    fn set_max(&self, max: u32) -> Result<(), String> {
        std::fs::write(self.dir.join("pids.max"), max.to_string())
            .map_err(|e| format!("cannot set pids.max in `{}`: {e}", self.dir.display()))
    }

    /// Removes the directory; an rmdir can fail for a moment while killed tasks are reaped.
    pub(crate) fn remove(&mut self) {
        for dir in [Some(self.dir.clone()), self.memory.take()]
            .into_iter()
            .flatten()
        {
            for _ in 0..50 {
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

impl Drop for PidsCgroup {
    // Also runs when the caller drops the run future midway (a cancelled tool call): no task and
    // no directory of the run is left behind.
    fn drop(&mut self) {
        self.signal_all(Signal::KILL);
        self.remove();
    }
}

/// Empty cgroups kept by a [`super::Runner`] (and its clones) between runs: creating and removing
/// a cgroup directory per run is measurable overhead. A cgroup is lent to one run at a time, so a
/// kill on timeout or cancel still reaches only that run's tasks, and it comes back only once it
/// was verified empty. The directories are removed when the last clone of the runner is dropped.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    idle: std::sync::Mutex<Vec<PidsCgroup>>,
}

/// Idle cgroups kept at most; concurrent runs beyond this create and remove their own.
const POOL_MAX: usize = 8;

impl Pool {
    /// An empty cgroup capped at `max` processes and `memory_max` bytes: a pooled one or a new
    /// one.
    pub(crate) fn take(&self, max: u32, memory_max: Option<u64>) -> Result<PidsCgroup, String> {
        let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        if let Some(cg) = reused {
            // Fail closed: a cgroup that is not empty or whose caps cannot be set is not reused.
            let memory_ok = match memory_max {
                None => !cg.has_memory(),
                Some(bytes) => cg.has_memory() && cg.set_memory_max(bytes).is_ok(),
            };
            if cg.pids().is_empty() && cg.set_max(max).is_ok() && memory_ok {
                return Ok(cg);
            }
        }
        PidsCgroup::create(max, memory_max)
    }

    /// Keeps `cg` for a later run if it is empty; otherwise it is killed and removed.
    pub(crate) fn give_back(&self, cg: PidsCgroup) {
        if !cg.pids().is_empty() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < POOL_MAX
        {
            idle.push(cg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// These tests need a pids controller this process may create groups in (root on cgroup v1,
    /// or a delegated v2 subtree). Without one they fail and say why: never a silent pass.
    fn require_cgroup() {
        if let Err(reason) = PidsCgroup::create(4, None) {
            panic!("this test needs a writable pids cgroup: {reason}");
        }
    }

    #[test]
    fn an_empty_cgroup_is_reused_with_the_new_cap() {
        require_cgroup();
        let pool = Pool::default();
        let cg = pool.take(16, None).unwrap();
        let dir = cg.dir.clone();
        pool.give_back(cg);
        let again = pool.take(32, None).unwrap();
        assert_eq!(again.dir, dir);
        assert_eq!(again.read_max().as_deref(), Some("32"));
        drop(again);
        assert!(!dir.exists(), "a dropped cgroup is removed");
    }

    #[test]
    fn a_cgroup_with_a_task_left_is_not_reused() {
        require_cgroup();
        let pool = Pool::default();
        let cg = pool.take(16, None).unwrap();
        let dir = cg.dir.clone();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(cg.procs_file(), child.id().to_string()).unwrap();
        pool.give_back(cg);
        // Dropped rather than kept: its task is killed and the directory is gone.
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!dir.exists());
        assert!(pool.idle.lock().unwrap().is_empty());
    }

    #[test]
    fn the_pool_removes_its_cgroups_when_dropped() {
        require_cgroup();
        let pool = Pool::default();
        let cg = pool.take(16, None).unwrap();
        let dir = cg.dir.clone();
        pool.give_back(cg);
        assert!(dir.exists());
        drop(pool);
        assert!(!dir.exists());
    }

    #[test]
    fn a_memory_cap_is_set_where_a_memory_controller_exists() {
        require_cgroup();
        let reason = locate("memory").err();
        let cg = PidsCgroup::create(8, Some(64 << 20)).unwrap();
        match reason {
            None => {
                assert!(cg.has_memory());
                assert_eq!(cg.read_memory_max().as_deref(), Some("67108864"));
                assert!(!cg.join_files().is_empty());
            }
            Some(reason) => panic!("no memory controller on this machine: {reason}"),
        }
    }
}
