#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The trampoline forked by its caller ([`StartedTrampoline::fork`]).
//!
//! Its own `main` (no test harness): a fork needs a process with one thread, and the harness
//! runs every test on a thread of its own. Each check forks first, while the process still has
//! its one thread, then starts a runtime for the run and ends it again.

use std::path::Path;
use std::time::Duration;

use bash_guard::{Confinement, ExecError, ExecResult, LandlockState, Runner, StartedTrampoline};
use tokio_util::sync::CancellationToken;

mod common;
use common::{alive, config, confined};

/// The confinement of [`confined`] requests in `root`.
fn confinement(root: &Path) -> Confinement {
    confined("", root).confinement.unwrap()
}

/// `Cpus_allowed_list` of this process.
fn cpus() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// `command` run in `root` through `started`, on a runtime started for it (after the fork).
fn run_started(
    runner: &Runner,
    started: StartedTrampoline,
    command: &str,
    root: &Path,
) -> Result<ExecResult, ExecError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runner.run_started(started, &confined(command, root), &CancellationToken::new()))
}

/// Prepared in steps as `agent-guard exec` does (limits, then the Landlock rules while the
/// command would be judged), the forked trampoline runs the command confined, in its caller's
/// CPUs, and the caller has its own CPUs back.
fn a_forked_trampoline_runs_the_command_confined() {
    let before = cpus();
    let mut started = StartedTrampoline::fork().unwrap();
    let root = tempfile::tempdir().unwrap();
    let runner = Runner::new(config());
    let conf = confinement(root.path());
    runner.prepare(&mut started, &conf).unwrap();
    runner.prepare_files(&mut started, &conf).unwrap();
    let result = run_started(
        &runner,
        started,
        "grep Cpus_allowed_list /proc/self/status; echo \"$TMPDIR\"; pwd; touch made",
        root.path(),
    )
    .unwrap();
    assert_eq!(result.exit_code, Some(0), "{result:?}");
    let lines: Vec<&str> = result.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().last(),
        Some(before.as_str()),
        "{result:?}"
    );
    assert!(lines[1].contains("bash-guard-"), "{result:?}");
    assert!(!Path::new(lines[1]).exists(), "the run's temp dir is left");
    assert_eq!(lines[2], root.path().to_str().unwrap());
    assert!(root.path().join("made").exists());
    assert_eq!(
        result.confinement.landlock.status,
        LandlockState::FullyEnforced
    );
    assert!(result.confinement.seccomp && result.confinement.capabilities_dropped);
    assert_eq!(cpus(), before, "the caller's CPUs are not given back");
}

/// Forked with the namespaces entered ahead, the trampoline runs a request that asks for them;
/// limits that ask for others are refused before anything is sent (the caller starts another).
fn namespaces_entered_ahead_must_be_the_run_s() {
    let root = tempfile::tempdir().unwrap();
    let runner = Runner::new(config());
    let conf = confinement(root.path());
    assert!(conf.isolate && conf.block_network);
    let mut started = StartedTrampoline::fork_isolated(true).unwrap();
    runner.prepare(&mut started, &conf).unwrap();
    let result = run_started(&runner, started, "echo ok", root.path()).unwrap();
    assert_eq!(result.stdout, "ok\n", "{result:?}");
    assert_eq!(
        result.confinement.namespaces,
        ["pid", "mount", "ipc", "net"],
        "{result:?}"
    );
    assert!(result.confinement.landlock.network_blocked, "{result:?}");

    for (private_net, isolate, block_network) in [
        (false, true, true),
        (true, true, false),
        (true, false, true),
    ] {
        let mut started = StartedTrampoline::fork_isolated(private_net).unwrap();
        let mut other = confinement(root.path());
        other.isolate = isolate;
        other.block_network = block_network;
        let err = runner.prepare(&mut started, &other).unwrap_err();
        assert!(
            matches!(&err, ExecError::Unconfined(why) if why.contains("other namespaces")),
            "{err:?}"
        );
    }
}

/// Rules sent for some roots are the run's: a request with others is refused and runs nothing.
fn rules_sent_for_other_roots_refuse_the_run() {
    let mut started = StartedTrampoline::fork().unwrap();
    let prepared_root = tempfile::tempdir().unwrap();
    let other_root = tempfile::tempdir().unwrap();
    let runner = Runner::new(config());
    let conf = confinement(prepared_root.path());
    runner.prepare(&mut started, &conf).unwrap();
    runner.prepare_files(&mut started, &conf).unwrap();
    let err = run_started(&runner, started, "touch made", other_root.path()).unwrap_err();
    assert!(
        matches!(&err, ExecError::Unconfined(why) if why.contains("other roots")),
        "{err:?}"
    );
    assert!(!other_root.path().join("made").exists());
    assert!(!prepared_root.path().join("made").exists());
}

/// Dropped before its run, the forked trampoline is killed and the caller keeps its CPUs.
fn a_dropped_forked_trampoline_is_gone() {
    let before = cpus();
    let started = StartedTrampoline::fork().unwrap();
    let pid = started.id().unwrap();
    assert!(alive(pid));
    drop(started);
    assert_eq!(cpus(), before);
    let gone = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        !alive(pid)
    });
    assert!(gone, "the dropped trampoline {pid} still runs");
}

/// A process with a second thread is not forked.
fn a_multi_threaded_caller_is_refused() {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || stopped.recv());
    let err = StartedTrampoline::fork().unwrap_err();
    assert!(
        matches!(&err, ExecError::Fork(e) if e.to_string().contains("single-threaded")),
        "{err:?}"
    );
    stop.send(()).unwrap();
    thread.join().unwrap().unwrap();
}

fn main() {
    let checks: [(&str, fn()); 5] = [
        (
            "a_forked_trampoline_runs_the_command_confined",
            a_forked_trampoline_runs_the_command_confined,
        ),
        (
            "namespaces_entered_ahead_must_be_the_run_s",
            namespaces_entered_ahead_must_be_the_run_s,
        ),
        (
            "rules_sent_for_other_roots_refuse_the_run",
            rules_sent_for_other_roots_refuse_the_run,
        ),
        (
            "a_dropped_forked_trampoline_is_gone",
            a_dropped_forked_trampoline_is_gone,
        ),
        // Last: the thread it starts is gone by then, but nothing after it should depend on it.
        (
            "a_multi_threaded_caller_is_refused",
            a_multi_threaded_caller_is_refused,
        ),
    ];
    for (name, check) in checks {
        check();
        println!("forked trampoline: {name} ... ok");
    }
    println!("forked trampoline: {} checks passed", checks.len());
}
