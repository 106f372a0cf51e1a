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
}

/// Finds where a pids controller is mounted and which cgroup this process is in there.
fn locate() -> Result<(PathBuf, Version), String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts")
        .map_err(|e| format!("cannot read /proc/self/mounts: {e}"))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(mnt), Some(fstype), Some(opts)) = (fields.get(1), fields.get(2), fields.get(3))
        else {
            continue;
        };
        if *fstype == "cgroup" && opts.split(',').any(|o| o == "pids") {
            let rel = own
                .lines()
                .find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
                    ctrls.split(',').any(|c| c == "pids").then_some(path)
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
            if subtree.split_whitespace().any(|c| c == "pids") {
                return Ok((dir, Version::V2));
            }
        }
    }
    Err("no pids cgroup controller is mounted or delegated to this process".into())
}

fn join(mnt: &str, rel: &str) -> PathBuf {
    Path::new(mnt).join(rel.trim_start_matches('/'))
}

impl PidsCgroup {
    /// Creates a fresh child cgroup with `pids.max = max`.
    pub(crate) fn create(max: u32) -> Result<Self, String> {
        let (parent, version) = locate()?;
        let name = format!(
            "bash-guard-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = parent.join(name);
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create cgroup `{}`: {e}", dir.display()))?;
        let cg = PidsCgroup { dir, version };
        if let Err(e) = std::fs::write(cg.dir.join("pids.max"), max.to_string()) {
            cg.remove();
            return Err(format!(
                "cannot set pids.max in `{}`: {e}",
                cg.dir.display()
            ));
        }
        Ok(cg)
    }

    /// The file a task writes its pid to in order to join.
    pub(crate) fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// The limit as the kernel holds it (proves the cap is in force).
    pub(crate) fn read_max(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join("pids.max"))
            .ok()
            .map(|s| s.trim().to_string())
    }

    fn pids(&self) -> Vec<Pid> {
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

    /// Kills every task and waits (bounded) until the cgroup is empty. A task forking while it is
    /// being killed is caught on the next pass; the pids cap bounds how many there can be.
    pub(crate) async fn kill_all(&self) {
        if self.version == Version::V2 {
            let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        }
        for _ in 0..200 {
            let pids = self.pids();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Removes the directory; an rmdir can fail for a moment while killed tasks are reaped.
    pub(crate) fn remove(&self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
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
