//! The disk-write cap of a run: bytes written to storage by all its processes together.
//!
//! Why a supervisor's poll of `/proc/PID/io` `write_bytes`, and not another kernel knob:
//! - `RLIMIT_FSIZE` is per file (it stays, as the per-file cap): a run that writes many files
//!   fills the disk under it.
//! - cgroup I/O accounting counts at the block layer, after writeback: on cgroup v1 (these
//!   machines) buffered writes are charged to the flusher, not the run, and on v2 only once the
//!   pages are written back, seconds later.
//! - `write_bytes` is charged to the writing task when it dirties a page-cache page, at the
//!   `write(2)` itself, by the kernel: the confined process cannot lower it or opt out, and the
//!   runner, outside every namespace of the run, reads it. Pipes, sockets and `/dev/null` do not
//!   count (that is output, not disk), nor does tmpfs (memory, under the memory cap).
//!
//! A process's `/proc/PID/io` covers its threads and every child it reaped, so summing the live
//! processes would count a reaped child twice (once alive, once inside its parent). The meter
//! keeps each process's last value and its parent: when a child is gone, the part of its parent's
//! growth that its last value explains was already counted. A child reaped without a wait
//! (`SIGCHLD` ignored) takes its writes since the last poll with it, and a run that ends between
//! two polls is not stopped (it ended): the overshoot is bounded by what the run writes in one
//! poll interval.

use std::collections::HashMap;

/// How often the runner samples the run's processes.
pub(crate) const POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// One process as last sampled.
#[derive(Debug, Clone, Copy)]
struct Seen {
    written: u64,
    parent: i32,
}

/// The running total of one run.
#[derive(Debug, Default)]
pub(crate) struct WriteMeter {
    seen: HashMap<i32, Seen>,
    total: u64,
}

impl WriteMeter {
    /// Bytes counted so far.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Samples `pids` (the run's processes now) and returns the new total.
    pub(crate) fn sample(&mut self, pids: &[i32]) -> u64 {
        let now: HashMap<i32, Seen> = pids
            .iter()
            .filter_map(|&pid| read(pid).map(|s| (pid, s)))
            .collect();
        self.advance(now)
    }

    /// The accounting itself, on already-read values (tests feed it directly).
    fn advance(&mut self, now: HashMap<i32, Seen>) -> u64 {
        // What each surviving parent's growth may owe to children that are gone.
        let mut folded: HashMap<i32, u64> = HashMap::new();
        for (pid, old) in &self.seen {
            if !now.contains_key(pid) {
                let f = folded.entry(old.parent).or_default();
                *f = f.saturating_add(old.written);
            }
        }
        for (pid, cur) in &now {
            let grown = match self.seen.get(pid) {
                Some(old) => cur.written.saturating_sub(old.written),
                None => cur.written,
            };
            let explained = folded.get(pid).copied().unwrap_or(0);
            self.total = self.total.saturating_add(grown.saturating_sub(explained));
        }
        self.seen = now;
        self.total
    }
}

/// `write_bytes` and the parent of `pid`; `None` when it is gone (or unreadable).
fn read(pid: i32) -> Option<Seen> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let written = io
        .lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))?
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 4; the command name (field 2) may hold spaces and parentheses.
    let parent = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(Seen { written, parent })
}

/// The processes descended from `root` (itself included), from `/proc`: the run's processes when
/// no cgroup lists them.
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![root];
    };
    let mut parent_of: Vec<(i32, i32)> = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let parent = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok())
            });
        if let Some(parent) = parent {
            parent_of.push((pid, parent));
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while let Some(&p) = out.get(i) {
        out.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(entries: &[(i32, u64, i32)]) -> HashMap<i32, Seen> {
        entries
            .iter()
            .map(|&(pid, written, parent)| (pid, Seen { written, parent }))
            .collect()
    }

    #[test]
    fn a_reaped_child_is_counted_once() {
        let mut m = WriteMeter::default();
        // The shell (10) runs a writer (11) that has written 5 so far.
        assert_eq!(m.advance(at(&[(10, 0, 1), (11, 5, 10)])), 5);
        // The writer wrote 3 more, ended and was reaped: the shell's value now holds its 8.
        assert_eq!(m.advance(at(&[(10, 8, 1)])), 8);
        // The shell writes 2 itself.
        assert_eq!(m.advance(at(&[(10, 10, 1)])), 10);
    }

    #[test]
    fn a_child_never_seen_alive_is_counted_through_its_parent() {
        let mut m = WriteMeter::default();
        assert_eq!(m.advance(at(&[(10, 0, 1)])), 0);
        assert_eq!(m.advance(at(&[(10, 700, 1)])), 700);
    }

    #[test]
    fn nested_reaping_counts_each_byte_once() {
        let mut m = WriteMeter::default();
        assert_eq!(m.advance(at(&[(10, 0, 1), (11, 0, 10), (12, 4, 11)])), 4);
        // 12 ends (6 in all), reaped by 11.
        assert_eq!(m.advance(at(&[(10, 0, 1), (11, 6, 10)])), 6);
        // 11 ends, reaped by 10.
        assert_eq!(m.advance(at(&[(10, 6, 1)])), 6);
    }

    #[test]
    fn a_child_gone_without_a_wait_keeps_what_was_seen() {
        let mut m = WriteMeter::default();
        assert_eq!(m.advance(at(&[(10, 0, 1), (11, 50, 10)])), 50);
        // Auto-reaped: the parent's value does not grow; the 50 seen stay counted.
        assert_eq!(m.advance(at(&[(10, 0, 1)])), 50);
        assert_eq!(m.advance(at(&[(10, 30, 1)])), 80);
    }

    #[test]
    fn this_process_can_be_read() {
        let me = std::process::id() as i32;
        let seen = read(me).unwrap();
        assert_eq!(
            seen.parent,
            rustix::process::getppid().unwrap().as_raw_nonzero().get()
        );
        assert!(descendants(me).contains(&me));
    }
}
