#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Guarded execution with real processes.

use std::path::PathBuf;
use std::time::Duration;

use bash_guard::{ExecConfig, ExecError, LandlockState, Runner, Trampoline};
use tokio_util::sync::CancellationToken;

mod common;
use common::{alive, config, confined, req};

fn runner() -> Runner {
    Runner::new(config()).with_trampoline(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"))
}

fn pids_of(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[tokio::test]
async fn runs_a_command_and_reports_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner()
        .run(
            &req("echo hi; echo err >&2; exit 3", dir.path()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.stdout, "hi\n");
    assert_eq!(r.stderr, "err\n");
    assert!(!r.timed_out && !r.cancelled);
}

#[tokio::test]
async fn stdin_is_closed_and_cwd_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner()
        .run(&req("cat; pwd", dir.path()), &CancellationToken::new())
        .await
        .unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(r.stdout.trim(), cwd.to_str().unwrap());
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = req(
        "sleep 1000 & echo $!; sleep 1000 & echo $!; sleep 1000",
        dir.path(),
    );
    request.timeout = Some(Duration::from_millis(300));
    let r = runner()
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert!(r.timed_out);
    let pids = pids_of(&r.stdout);
    assert_eq!(pids.len(), 2, "{r:?}");
    for pid in pids {
        assert!(!alive(pid), "background pid {pid} survived");
    }
}

#[tokio::test]
async fn timeout_is_clamped_to_the_maximum() {
    let r = Runner::new(ExecConfig {
        max_timeout_secs: 1,
        ..config()
    });
    assert_eq!(
        r.effective_timeout(Some(Duration::from_secs(500))),
        Duration::from_secs(1)
    );
    assert_eq!(
        Runner::new(ExecConfig::default()).effective_timeout(None),
        Duration::from_secs(60)
    );
}

#[tokio::test]
async fn cancel_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c2.cancel();
    });
    let r = runner()
        .run(&req("sleep 1000 & echo $!; wait", dir.path()), &cancel)
        .await
        .unwrap();
    assert!(r.cancelled && !r.timed_out);
    assert!(r.duration < Duration::from_secs(10));
    for pid in pids_of(&r.stdout) {
        assert!(!alive(pid));
    }
}

#[tokio::test]
async fn background_processes_do_not_outlive_a_normal_exit() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner()
        .run(
            &req("sleep 1000 & echo $!", dir.path()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.timed_out);
    for pid in pids_of(&r.stdout) {
        assert!(!alive(pid));
    }
}

/// Host pids of running `sleep <arg>` processes. A confined command lives in its own PID
/// namespace, so the pids it prints mean nothing here: tests find its processes by a unique
/// argument instead.
fn host_sleepers(arg: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.get(1) == Some(&arg.as_bytes()) && args[0].ends_with(b"sleep") && alive(pid) {
            found.push(pid);
        }
    }
    found
}

fn unique_sleep_arg() -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("1000.{}{n}", std::process::id())
}

#[tokio::test]
async fn setsid_escape_is_killed_through_the_cgroup() {
    let dir = tempfile::tempdir().unwrap();
    let arg = unique_sleep_arg();
    let mut request = confined(
        &format!("setsid sleep {arg} >/dev/null 2>&1 & sleep 1000"),
        dir.path(),
    );
    request.timeout = Some(Duration::from_millis(1000));
    let run = tokio::spawn(async move { runner().run(&request, &CancellationToken::new()).await });
    let mut seen = Vec::new();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen = host_sleepers(&arg);
        if !seen.is_empty() {
            break;
        }
    }
    assert_eq!(seen.len(), 1, "the setsid sleeper never started");
    let r = run.await.unwrap().unwrap();
    assert!(r.confinement.cgroup, "{:?}", r.confinement);
    assert!(r.timed_out);
    for pid in seen {
        assert!(!alive(pid), "setsid pid {pid} survived");
    }
}

#[tokio::test]
async fn output_of_100_mb_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner()
        .run(
            &req(
                "head -c 100000000 /dev/zero | tr '\\0' x; echo done >&2",
                dir.path(),
            ),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(0));
    assert!(r.stdout_truncated);
    assert_eq!(r.stdout_dropped_bytes, 100_000_000 - 4000);
    assert!(r.stdout.starts_with(&"x".repeat(4000)));
    assert!(
        r.stdout.contains("100000000 bytes"),
        "{}",
        &r.stdout[4000..]
    );
    assert_eq!(r.stderr, "done\n");
}

#[tokio::test]
async fn truncation_respects_char_boundaries_and_replaces_invalid_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let r = runner()
        .run(
            &req(
                "printf 'a%.0s' $(seq 3999); printf '\\303\\251\\303\\251'; printf 'z\\377z' >&2",
                dir.path(),
            ),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(r.stdout_truncated);
    assert_eq!(r.stdout_dropped_bytes, 2);
    let kept: String = r.stdout.chars().take(4000).collect();
    assert_eq!(kept, format!("{}\u{e9}", "a".repeat(3999)));
    assert_eq!(r.stderr, "z\u{fffd}z");
}

#[tokio::test]
async fn secrets_are_scrubbed_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config();
    cfg.env_set.insert("GUARD_MARK".into(), "1".into());
    // The parent's environment is process-wide; set_var is unsafe in edition 2024, so the
    // test injects variables through env_set, which the deny list must not filter...
    let r = Runner::new(cfg)
        .run(&req("env", dir.path()), &CancellationToken::new())
        .await
        .unwrap();
    let names: Vec<&str> = r
        .stdout
        .lines()
        .filter_map(|l| l.split('=').next())
        .collect();
    assert!(names.contains(&"GUARD_MARK"));
    assert!(names.contains(&"PATH"));
    assert!(names.contains(&"TMPDIR"));
    for n in &names {
        let up = n.to_ascii_uppercase();
        assert!(
            !up.ends_with("_TOKEN") && !up.contains("PASSWORD") && !up.starts_with("AWS_"),
            "{n}"
        );
    }
    // ...and a child process of the test inherits a secret only if the runner lets it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"))
        .env("GITHUB_TOKEN", "s3cret")
        .env("MY_API_KEY", "k")
        .arg("bad")
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[tokio::test]
async fn env_deny_patterns_filter_inherited_names() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ExecConfig {
        env_allow: vec!["CARGO_*".into()],
        env_deny: vec!["cargo_pkg_*".into()],
        ..config()
    };
    // cargo sets both families in the test's own environment.
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    let r = Runner::new(cfg)
        .run(&req("env", dir.path()), &CancellationToken::new())
        .await
        .unwrap();
    assert!(r.stdout.contains("CARGO_MANIFEST_DIR="), "{}", r.stdout);
    assert!(!r.stdout.contains("CARGO_PKG_"), "{}", r.stdout);
    assert!(!r.stdout.contains("\nHOME="));
}

#[tokio::test]
async fn landlock_blocks_a_write_outside_the_roots() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let target = outside.path().join("x");
    let py = format!(
        "/usr/bin/python3 -c \"open('{}','w').write('no')\"",
        target.display()
    );
    let r = runner()
        .run(&confined(&py, root.path()), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        r.confinement.landlock.status,
        LandlockState::FullyEnforced,
        "{:?}",
        r.confinement
    );
    assert!(r.confinement.landlock.abi.unwrap() >= 1);
    assert_ne!(r.exit_code, Some(0));
    assert!(r.stderr.contains("PermissionError"), "{}", r.stderr);
    assert!(!target.exists());

    let inside = root.path().join("x");
    let py = format!(
        "/usr/bin/python3 -c \"open('{}','w').write('ok')\"",
        inside.display()
    );
    let r = runner()
        .run(&confined(&py, root.path()), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "ok");

    // The private temp dir is writable and is what TMPDIR names.
    let r = runner()
        .run(
            &confined("echo t > \"$TMPDIR/f\" && cat \"$TMPDIR/f\"", root.path()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.stdout, "t\n", "{}", r.stderr);

    // Without confinement the same write works: the block is the kernel's, not the runner's.
    let r = runner()
        .run(
            &req(&format!("echo x > {}", target.display()), root.path()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, Some(0));
    assert!(target.exists());
}

#[tokio::test]
async fn network_connect_is_blocked_when_asked() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = tempfile::tempdir().unwrap();
    let cmd = format!(
        "/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')\""
    );
    let r = runner()
        .run(&confined(&cmd, root.path()), &CancellationToken::new())
        .await
        .unwrap();
    assert!(
        r.confinement.landlock.network_blocked,
        "{:?}",
        r.confinement
    );
    assert_ne!(r.exit_code, Some(0));
    assert!(
        r.stderr.contains("PermissionError") || r.stderr.contains("Permission denied"),
        "{}",
        r.stderr
    );

    let mut open = confined(&cmd, root.path());
    open.confinement.as_mut().unwrap().block_network = false;
    let r = runner()
        .run(&open, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(r.stdout.trim(), "connected", "{}", r.stderr);
    assert!(!r.confinement.landlock.network_blocked);
}

#[tokio::test]
async fn process_cap_stops_a_spawning_loop_once_verified() {
    let root = tempfile::tempdir().unwrap();
    // First a harmless probe: the cgroup is in place with the cap the test asked for.
    let mut probe = confined("true", root.path());
    probe.confinement.as_mut().unwrap().max_processes = Some(20);
    let r = runner()
        .run(&probe, &CancellationToken::new())
        .await
        .unwrap();
    assert!(r.confinement.cgroup, "{:?}", r.confinement);
    assert_eq!(r.confinement.cgroup_pids_max.as_deref(), Some("20"));
    // A bounded loop (200 spawns), never an unbounded fork bomb.
    let script = "/usr/bin/python3 -c \"
import subprocess
ok, fail, procs = 0, 0, []
for _ in range(200):
    try:
        procs.append(subprocess.Popen(['sleep', '5'])); ok += 1
    except OSError:
        fail += 1
for p in procs: p.kill()
print(ok, fail)\"";
    let mut request = confined(script, root.path());
    request.confinement.as_mut().unwrap().max_processes = Some(20);
    request.timeout = Some(Duration::from_secs(20));
    let r = runner()
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    let counts = pids_of(&r.stdout);
    assert_eq!(counts.len(), 2, "{r:?}");
    let (ok, fail) = (counts[0], counts[1]);
    assert_eq!(ok + fail, 200);
    assert!(ok < 20, "{ok} spawns succeeded under a cap of 20");
    assert!(fail > 180, "{fail}");
}

#[tokio::test]
async fn required_confinement_without_a_trampoline_refuses() {
    let root = tempfile::tempdir().unwrap();
    let err = Runner::new(config())
        .run(&confined("true", root.path()), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Unconfined(_)), "{err}");
}

#[tokio::test]
async fn bad_cwd_is_an_error() {
    let err = runner()
        .run(
            &req("true", &PathBuf::from("/nonexistent/dir")),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::BadCwd(_)));
}

#[tokio::test]
async fn dropping_a_confined_run_kills_its_processes() {
    let root = tempfile::tempdir().unwrap();
    let arg = unique_sleep_arg();
    let cmd = format!("sleep {arg} & sleep 1000");
    let runner = runner();
    let request = confined(&cmd, root.path());
    let cancel = CancellationToken::new();
    let fut = runner.run(&request, &cancel);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), fut)
            .await
            .is_err()
    );
    // The run future is dropped; its background sleeper must die with it. It is found by its
    // argument: inside the PID namespace `$!` is not a host pid.
    let mut left = host_sleepers(&arg);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        left = host_sleepers(&arg);
    }
    assert!(left.is_empty(), "pids {left:?} survived a dropped run");
}

#[tokio::test]
async fn a_confined_run_sees_its_processes_only_while_they_run() {
    // The companion of the test above: the scan does find a live confined sleeper, so an empty
    // result there is not vacuous.
    let root = tempfile::tempdir().unwrap();
    let arg = unique_sleep_arg();
    let request = confined(&format!("sleep {arg} & sleep 1000"), root.path());
    let run = tokio::spawn(async move { runner().run(&request, &CancellationToken::new()).await });
    let mut seen = Vec::new();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen = host_sleepers(&arg);
        if !seen.is_empty() {
            break;
        }
    }
    run.abort();
    let _ = run.await;
    assert_eq!(
        seen.len(),
        1,
        "no confined sleeper was visible from the host"
    );
    for _ in 0..50 {
        if host_sleepers(&arg).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(host_sleepers(&arg).is_empty());
}

#[tokio::test]
async fn a_trampoline_started_ahead_runs_the_request_it_is_then_sent() {
    let root = tempfile::tempdir().unwrap();
    let started = Trampoline::new(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"))
        .start()
        .unwrap();
    // Judging the command takes a while after the start.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let request = confined("pwd; echo \"$TMPDIR\"; touch made", root.path());
    let result = Runner::new(config())
        .run_started(started, &request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(result.exit_code, Some(0), "{result:?}");
    let mut lines = result.stdout.lines();
    assert_eq!(lines.next(), Some(root.path().to_str().unwrap()));
    assert!(
        lines.next().is_some_and(|t| t.contains("bash-guard-")),
        "{result:?}"
    );
    assert!(root.path().join("made").exists());
    assert_eq!(
        result.confinement.landlock.status,
        LandlockState::FullyEnforced
    );
}

/// The rules are sent after the limits, once; a misordered call is refused and leaves the
/// trampoline as it was.
#[tokio::test]
async fn the_rules_are_prepared_after_the_limits_and_once() {
    let root = tempfile::tempdir().unwrap();
    let runner = Runner::new(config());
    let conf = confined("true", root.path()).confinement.unwrap();
    let mut started = Trampoline::new(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"))
        .start()
        .unwrap();
    let early = runner.prepare_files(&mut started, &conf).unwrap_err();
    assert!(
        matches!(&early, ExecError::Unconfined(why) if why.contains("not prepared")),
        "{early:?}"
    );
    runner.prepare(&mut started, &conf).unwrap();
    runner.prepare_files(&mut started, &conf).unwrap();
    let again = runner.prepare_files(&mut started, &conf).unwrap_err();
    assert!(
        matches!(&again, ExecError::Unconfined(why) if why.contains("already prepared")),
        "{again:?}"
    );
    let result = runner
        .run_started(
            started,
            &confined("echo ok", root.path()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(result.stdout, "ok\n", "{result:?}");
    assert_eq!(
        result.confinement.landlock.status,
        LandlockState::FullyEnforced
    );
}

#[tokio::test]
async fn a_trampoline_started_ahead_and_dropped_runs_nothing() {
    let started = Trampoline::new(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"))
        .start()
        .unwrap();
    let pid = started.id().unwrap();
    assert!(alive(pid));
    drop(started);
    let mut gone = false;
    for _ in 0..200 {
        if !alive(pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone, "the dropped trampoline {pid} still runs");
}

/// The runner tells the trampoline which listed entries are directories; an entry that is a
/// file by then (changed since the listing, or a runner gone wrong) must not get a directory's
/// rule quietly narrowed: Landlock is then not fully enforced and a required run refuses.
#[test]
fn a_file_sent_as_a_directory_refuses_a_required_run() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let frame = |json: &str| {
        let mut f = u32::try_from(json.len()).unwrap().to_le_bytes().to_vec();
        f.extend_from_slice(json.as_bytes());
        f
    };
    // In one process, and isolated: the relay adds the rules to the ruleset PID 1 restricts
    // itself with, and tells it what the crate would have seen.
    for isolate in [false, true] {
        let setup = [
        frame(&format!(
            r#"{{"block_network":false,"max_file_size":null,"cpu_time_secs":null,"max_processes":null,"isolate":{isolate},"pid_ns_max":null,"require":true}}"#,
        )),
        frame(r#"{"cgroup_procs":[],"address_space":null}"#),
    ]
    .concat();
        let launch = |dirs: &str, files: &str| {
            [
            frame(&format!(
                r#"{{"read_roots":[],"read_dirs":[{dirs}],"read_files":[{files}],"write_roots":[],"system_read":["/usr","/lib","/lib64","/bin"],"list_only":[],"devices":["/dev/null"]}}"#,
            )),
            frame(&format!(
                r#"{{"program":"/bin/cat","args":[{file:?}],"env":[],"cwd":"/"}}"#
            )),
        ]
        .concat()
        };
        let run = |input: Vec<u8>| {
            let mut child =
                std::process::Command::new(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"))
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
            child.stdin.take().unwrap().write_all(&input).unwrap();
            child.wait_with_output().unwrap()
        };
        let quoted = format!("{file:?}");
        let out = run([setup.clone(), launch(&quoted, "")].concat());
        assert_eq!(out.status.code(), Some(125), "isolate {isolate}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("partially_enforced"),
            "isolate {isolate}: {out:?}"
        );
        // Sent as a file, the same entry is readable.
        let out = run([setup, launch("", &quoted)].concat());
        assert!(out.status.success(), "isolate {isolate}: {out:?}");
        assert_eq!(out.stdout, b"x");
    }
}

/// The trampoline learns its whole run from frames on its standard input (a JSON
/// length-prefixed with a little-endian `u32`): the limits, the cgroups, the Landlock rules,
/// then the command. A runner that dies or fails before sending them all must leave a
/// trampoline that never runs anything, even with `require_confinement` off in the spec.
#[test]
fn a_trampoline_without_its_landlock_rules_never_runs_the_command() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let frame = |json: &str| {
        let mut f = u32::try_from(json.len()).unwrap().to_le_bytes().to_vec();
        f.extend_from_slice(json.as_bytes());
        f
    };
    let spec = frame(
        r#"{"block_network":false,"max_file_size":null,"cpu_time_secs":null,"max_processes":null,"isolate":false,"pid_ns_max":null,"require":false}"#,
    );
    let cgroups = frame(r#"{"cgroup_procs":[],"address_space":null}"#);
    let setup = [spec.clone(), cgroups].concat();
    let rules = frame(&format!(
        r#"{{"read_roots":[],"read_dirs":[],"read_files":[],"write_roots":[{dir:?}],"system_read":["/usr","/lib","/lib64","/bin"],"list_only":[],"devices":["/dev/null"]}}"#,
        dir = dir.path(),
    ));
    let launch = frame(&format!(
        r#"{{"program":"/bin/sh","args":["-c","touch {marker}"],"env":[],"cwd":{dir:?}}}"#,
        dir = dir.path(),
        marker = marker.display(),
    ));
    let cases: [(&str, Vec<u8>); 7] = [
        ("no frame at all", Vec::new()),
        ("the spec frame only", spec),
        ("the spec and cgroup frames only", setup.clone()),
        (
            "a cut-off rules frame",
            [setup.clone(), rules[..rules.len() / 2].to_vec()].concat(),
        ),
        (
            "the rules without the command",
            [setup.clone(), rules.clone()].concat(),
        ),
        (
            "a cut-off launch frame",
            [
                setup.clone(),
                rules.clone(),
                launch[..launch.len() / 2].to_vec(),
            ]
            .concat(),
        ),
        (
            "a frame longer than the limit",
            [setup.clone(), u32::MAX.to_le_bytes().to_vec()].concat(),
        ),
    ];
    // The trampoline with `input` on its standard input.
    let run = |input: &[u8]| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"))
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    for (what, input) in cases {
        let out = run(&input);
        assert_eq!(out.status.code(), Some(125), "{what}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("refusing to run unconfined"),
            "{what}: {out:?}"
        );
        assert!(!marker.exists(), "{what}: the command ran");
    }
    // The same spec with every frame complete runs it: the cases above failed for the frames.
    let out = run(&[setup, rules, launch].concat());
    assert!(out.status.success(), "{out:?}");
    assert!(marker.exists());
}
