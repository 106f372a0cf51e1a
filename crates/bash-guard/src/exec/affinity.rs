//! Where a forked trampoline runs: beside its caller, not after it.
//!
//! A forked child starts on its parent's CPU, and the socket's wake-ups (synchronous: the
//! kernel expects the writer to sleep next) keep it there; the caller does not sleep until its
//! run is launched, so the trampoline's set-up (namespaces, PID 1, Landlock) would wait for the
//! whole judgement instead of running beside it. An executed trampoline is moved to an idle CPU
//! at its `exec`; a forked one is moved here: off the caller's CPU, and the caller held on it
//! until the launch is sent (or else the scheduler moves the caller next to its child). The
//! command gets the caller's CPUs back before it starts. On one CPU, or where the masks cannot
//! be set, nothing changes: the run is the same, only serial.

use std::sync::OnceLock;

use rustix::process::Pid;
use rustix::thread::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};

/// The caller's CPUs before the fork, in the caller and (copied by the fork) in the trampoline.
static CALLER: OnceLock<CpuSet> = OnceLock::new();

/// Remembers this process's CPUs; call before the fork, so the trampoline has them too.
pub(crate) fn remember() {
    if let Ok(cpus) = sched_getaffinity(None) {
        let _ = CALLER.set(cpus);
    }
}

/// The caller held on its CPU while `child` runs on the others; dropping it gives the caller
/// its CPUs back.
#[derive(Debug)]
pub(crate) struct Apart {
    caller: Option<CpuSet>,
}

/// Moves `child` off this CPU and holds this process on it (see the module's comment).
pub(crate) fn apart(child: Pid) -> Apart {
    let none = Apart { caller: None };
    let Some(caller) = CALLER.get() else {
        return none;
    };
    let here = sched_getcpu();
    let mut elsewhere = *caller;
    elsewhere.unset(here);
    if elsewhere.count() == 0 || sched_setaffinity(Some(child), &elsewhere).is_err() {
        return none;
    }
    let mut this = CpuSet::new();
    this.set(here);
    match sched_setaffinity(None, &this) {
        Ok(()) => Apart {
            caller: Some(*caller),
        },
        Err(_) => none,
    }
}

impl Drop for Apart {
    fn drop(&mut self) {
        if let Some(caller) = &self.caller {
            let _ = sched_setaffinity(None, caller);
        }
    }
}

/// In the relay (the trampoline once it forked PID 1): onto the caller's CPU, away from PID 1's,
/// until the returned guard drops. The relay's work there (the masks) runs beside PID 1's own
/// instead of taking turns with it; the caller leaves that CPU once it has sent the launch,
/// which PID 1 needs only after that work. The relay goes back before it waits for PID 1: its
/// exit (the namespaces' teardown) would otherwise delay the caller's wake-up on its CPU at
/// the end of the run. Nothing when the trampoline was not set apart.
pub(crate) fn beside_caller() -> Beside {
    let none = Beside { back: None };
    let Some(caller) = CALLER.get() else {
        return none;
    };
    let Ok(mine) = sched_getaffinity(None) else {
        return none;
    };
    let mut theirs = *caller;
    for cpu in (0..CpuSet::MAX_CPU).filter(|cpu| mine.is_set(*cpu)) {
        theirs.unset(cpu);
    }
    if theirs.count() == 0 || sched_setaffinity(None, &theirs).is_err() {
        return none;
    }
    Beside { back: Some(mine) }
}

/// The relay on its caller's CPU (see [`beside_caller`]); dropping it moves the relay back.
#[derive(Debug)]
pub(crate) struct Beside {
    back: Option<CpuSet>,
}

impl Drop for Beside {
    fn drop(&mut self) {
        if let Some(cpus) = &self.back {
            let _ = sched_setaffinity(None, cpus);
        }
    }
}

/// In the trampoline, before the command starts: the caller's CPUs again (nothing when this
/// process was not forked by [`remember`]'s caller).
pub(crate) fn restore_for_command() {
    if let Some(caller) = CALLER.get() {
        let _ = sched_setaffinity(None, caller);
    }
}
