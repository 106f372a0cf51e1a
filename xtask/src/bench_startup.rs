//! `cargo xtask bench startup`: whole-process start-up costs against the peers doing the same
//! work, paired and side by side (absolute times are not stable on a shared machine).
//!
//! - A hook call (`sh -c 'agent-guard-hook claude-hook < EVENT'`, as a client's command line
//!   runs it as `init` installs it) against its floor, a process that only reads the event
//!   (`sh -c 'cat EVENT'`), for a Read and a Bash PreToolUse event, without and with a SQLite
//!   audit database; and the same calls straight to the CLI (`agent-guard claude-hook`). The
//!   entry's judges run in the resident guard's process tree, whose CPU is read from /proc
//!   and counted with the entry cases.
//! - `agent-guard exec -- true` against bubblewrap doing the clients' own sandbox set-up when
//!   `bwrap` is installed, else against `unshare` with the same namespaces.
//!
//! Wall time is compared per run (median of the paired ratios); CPU time (user + system of
//! every descendant, from the children's totals in /proc/self/stat) is compared as the sum
//! over all runs of a case, since one run is below the kernel's tick. The bench is the child
//! subreaper of everything it starts, so a descendant that outlives its parent (bubblewrap's
//! PID 1, which does the set-up and runs the shell) is still counted. A timing figure, not a
//! test: nothing here asserts a speed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, bail};

use crate::bench_exec::{load_average, median};

/// CPU time (user + system) of every reaped descendant of this process so far: the
/// `cutime` and `cstime` fields of /proc/self/stat, in clock ticks.
fn children_cpu_ticks() -> anyhow::Result<u64> {
    // cutime and cstime.
    stat_ticks("self", 16..=17)
}

/// The sum of the numbered fields (as proc(5) numbers them) of `/proc/WHO/stat`.
fn stat_ticks(who: &str, fields: std::ops::RangeInclusive<usize>) -> anyhow::Result<u64> {
    let path = format!("/proc/{who}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    // The command name may hold spaces and parentheses: the fields start after the last `)`.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .with_context(|| format!("unexpected {path}"))?;
    // Fields after the name start at field 3 (state).
    let values: Vec<&str> = after.split_whitespace().collect();
    fields
        .map(|n| {
            values
                .get(n - 3)
                .with_context(|| format!("short {path}"))?
                .parse::<u64>()
                .with_context(|| format!("unexpected {path} field {n}"))
        })
        .sum()
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 on Linux unless told).
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .unwrap_or(100.0)
}

/// Makes this process the reaper of every orphaned descendant, so that a process a case leaves
/// running after its command exits (bubblewrap's PID 1 of the sandbox, which ran the set-up and
/// the shell, outlives the `bwrap` the caller waits for) is reaped here and its CPU time counted
/// with the case's, not charged to init and lost.
fn become_subreaper() -> anyhow::Result<()> {
    rustix::process::set_child_subreaper(rustix::process::Pid::from_raw(1))
        .context("cannot become the child subreaper (prctl PR_SET_CHILD_SUBREAPER)")
}

/// Waits for every orphan that was reparented to this process (see [`become_subreaper`]); after
/// the case's own child was reaped there is no other child. The time this takes is not the
/// caller's wait, so it is outside the wall time.
fn reap_orphans() {
    while let Ok(Some(_)) = rustix::process::wait(rustix::process::WaitOptions::empty()) {}
}

/// The pause after every run (see [`Case::run_once`]).
const SETTLE: std::time::Duration = std::time::Duration::from_millis(10);

/// One benchmarked command line, run through `sh -c` like a client's hook command.
struct Case {
    name: &'static str,
    /// Run in turn, one per run (calls that differ, as an agent's do: the guard refuses the
    /// third identical call in a row).
    scripts: Vec<String>,
    runs: usize,
    wall_ms: Vec<f64>,
    cpu_ticks: u64,
    /// The resident hook guard whose judges run this case's calls: their CPU is its tree's.
    server: Option<u32>,
}

impl Case {
    fn new(name: &'static str, scripts: Vec<String>) -> Case {
        Case {
            name,
            scripts,
            runs: 0,
            wall_ms: Vec::new(),
            cpu_ticks: 0,
            server: None,
        }
    }

    fn run_once(&mut self, dir: &Path, home: &Path) -> anyhow::Result<(f64, u64)> {
        let script = self
            .scripts
            .get(self.runs % self.scripts.len().max(1))
            .cloned()
            .unwrap_or_default();
        self.runs += 1;
        let server_before = self.server.map(process_tree_ticks).transpose()?;
        let before = children_cpu_ticks()?;
        let start = Instant::now();
        let status = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(dir)
            .env("HOME", home)
            .stdin(Stdio::null())
            // Read to their end, as the clients read a hook's answer: a call is over when its
            // output closes, not when the first process exits.
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("cannot start `{script}`"))?
            .status;
        let wall = start.elapsed();
        reap_orphans();
        let mut cpu = children_cpu_ticks()?.saturating_sub(before);
        // Every run starts as far from the one before as an agent's calls are at the least
        // (a tool call follows the model's answer): the work a run leaves behind (a judge
        // replaced, a process torn down) is not the next run's. It also gives the server the
        // few milliseconds it takes to collect a judge, whose CPU (the call's and its
        // warm-up's) then counts in the server's children's totals.
        std::thread::sleep(SETTLE);
        if let (Some(server), Some(server_before)) = (self.server, server_before) {
            cpu += process_tree_ticks(server)?.saturating_sub(server_before);
        }
        // A hook that denies exits 2; anything else but 0 means the case is broken.
        if !matches!(status.code(), Some(0 | 2)) {
            bail!("`{script}` failed: {status}");
        }
        Ok((wall.as_secs_f64() * 1e3, cpu))
    }
}

fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

fn event(dir: &Path, session: &str, tool: &str, input: serde_like::Json) -> String {
    format!(
        r#"{{"session_id":{session},"transcript_path":"/dev/null","cwd":{cwd},"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"{tool}","tool_input":{input}}}"#,
        session = serde_like::string(session),
        cwd = serde_like::string(&dir.display().to_string()),
        input = input.0,
    )
}

/// Just enough JSON writing for the events (xtask has no serde_json).
mod serde_like {
    pub(super) struct Json(pub(super) String);

    pub(super) fn string(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    pub(super) fn object(pairs: &[(&str, &str)]) -> Json {
        let body: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{}:{}", string(k), string(v)))
            .collect();
        Json(format!("{{{}}}", body.join(",")))
    }
}

/// Runs every case `runs` times, rotating the order each round so no case always runs on a
/// cache another one warmed.
fn measure(cases: &mut [Case], dir: &Path, home: &Path, runs: usize) -> anyhow::Result<()> {
    for case in cases.iter_mut() {
        for _ in 0..3 {
            case.run_once(dir, home)?;
        }
    }
    let n = cases.len();
    for round in 0..runs {
        for k in 0..n {
            let Some(case) = cases.get_mut((round + k) % n) else {
                continue;
            };
            let (wall, cpu) = case.run_once(dir, home)?;
            case.wall_ms.push(wall);
            case.cpu_ticks += cpu;
        }
    }
    Ok(())
}

/// Starts the resident hook guard the entry hands calls to (one call through the entry
/// starts it), as nobody's child of this process: the bench reaps every orphan it inherits,
/// and the server lives on. Returns the server's pid once it listens.
fn start_resident(
    entry: &Path,
    policy: &Path,
    event: &Path,
    dir: &Path,
    home: &Path,
) -> anyhow::Result<u32> {
    rustix::process::set_child_subreaper(None).context("cannot stop being the child subreaper")?;
    let started = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} claude-hook --policy {} < {}",
            quote(entry),
            quote(policy),
            quote(event)
        ))
        .current_dir(dir)
        .env("HOME", home)
        .stdout(Stdio::null())
        .status();
    become_subreaper()?;
    started.context("cannot run the hook entry")?;
    let deadline = Instant::now() + std::time::Duration::from_secs(20);
    let run_dir = home.join(".agent-guard/run");
    loop {
        if let Some(pid) = resident_pid(&run_dir)
            && std::fs::read_dir(&run_dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "sock"))
        {
            // Let its first idle judge finish warming up.
            std::thread::sleep(std::time::Duration::from_millis(500));
            return Ok(pid);
        }
        if Instant::now() > deadline {
            bail!(
                "the resident hook guard did not start under {}",
                run_dir.display()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The `__hook-server` serving sockets in `run_dir` (from the processes' command lines).
fn resident_pid(run_dir: &Path) -> Option<u32> {
    let needle = run_dir.display().to_string();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline);
        (cmdline.contains("__hook-server") && cmdline.contains(&needle)).then_some(pid)
    })
}

/// CPU ticks of a process and of its children it collected (utime, stime, cutime, cstime).
fn process_tree_ticks(pid: u32) -> anyhow::Result<u64> {
    stat_ticks(&pid.to_string(), 14..=17)
        .with_context(|| format!("the resident hook guard (pid {pid}) is gone"))
}

/// The median over runs of `case`'s wall time divided by `floor`'s in the same round.
fn paired_ratio(case: &Case, floor: &Case) -> f64 {
    let mut ratios: Vec<f64> = case
        .wall_ms
        .iter()
        .zip(&floor.wall_ms)
        .map(|(a, b)| a / b)
        .collect();
    median(&mut ratios)
}

fn report(cases: &[Case], pairs: &[(&str, &str)], runs: usize, tick_ms: f64) {
    let find = |name: &str| cases.iter().find(|c| c.name == name);
    for case in cases {
        let mut wall = case.wall_ms.clone();
        println!(
            "  {:<34} wall {:>7.3} ms   cpu {:>7.3} ms/run",
            case.name,
            median(&mut wall),
            case.cpu_ticks as f64 * tick_ms / runs as f64
        );
    }
    for (case, floor) in pairs {
        if let (Some(c), Some(f)) = (find(case), find(floor)) {
            let cpu = if f.cpu_ticks == 0 {
                f64::NAN
            } else {
                c.cpu_ticks as f64 / f.cpu_ticks as f64
            };
            println!(
                "  {case} / {floor}: wall {:.2}x (median of paired ratios), cpu {cpu:.2}x (totals)",
                paired_ratio(c, f)
            );
        }
    }
}

/// Runs the startup benchmark; `rest` may hold `--runs N` (default 200).
pub(crate) fn run(root: &Path, rest: &[String]) -> anyhow::Result<()> {
    let runs: usize = match rest {
        [flag, n] if flag == "--runs" => n.parse().context("--runs takes a number")?,
        [] => 200,
        _ => bail!("usage: cargo xtask bench startup [--runs N]"),
    };
    crate::cargo(root, &["build", "--release", "-p", "agent-guard"], &[])?;
    become_subreaper()?;
    let exe = root.join("target/release/agent-guard");
    let dir = std::env::temp_dir().join(format!("xtask-bench-startup-{}", std::process::id()));
    let result = run_in(&exe, &dir, runs);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(exe: &Path, dir: &Path, runs: usize) -> anyhow::Result<()> {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("src")).context("cannot create the bench project")?;
    std::fs::write(project.join("src/lib.rs"), "pub fn f() {}\n")
        .context("cannot write the bench project")?;
    let write = |name: &str, text: &str| -> anyhow::Result<PathBuf> {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    };
    // Four files to read, four commands to run: each comparison cycles through them.
    for k in 0..4 {
        std::fs::write(project.join(format!("src/m{k}.rs")), "pub fn g() {}\n")
            .context("cannot write the bench project")?;
    }
    let commands = [
        "git status",
        "git status --short",
        "git log -1 --oneline",
        "git diff --stat",
    ];
    // The events of comparison `block` (its own session: the guard's per-session limits see
    // one comparison's calls).
    let events = |block: usize, tool: &str| -> anyhow::Result<Vec<PathBuf>> {
        commands
            .iter()
            .enumerate()
            .map(|(k, command)| {
                let input = match tool {
                    "Read" => serde_like::object(&[(
                        "file_path",
                        &project.join(format!("src/m{k}.rs")).display().to_string(),
                    )]),
                    _ => serde_like::object(&[("command", command)]),
                };
                let session = format!("bench-{block}");
                write(
                    &format!("{block}-{tool}-{k}.json"),
                    &event(&project, &session, tool, input),
                )
            })
            .collect()
    };
    let no_db = write(
        "no-db.toml",
        "[permissions]\ndefault = \"ask\"\nallow = [\"read_file\"]\n\n[hooks]\naudit = false\n",
    )?;
    let with_db = write(
        "db.toml",
        &format!(
            "[permissions]\ndefault = \"ask\"\nallow = [\"read_file\"]\n\n[hooks]\naudit = true\naudit_db = {}\n",
            serde_like::string(&dir.join("audit.db").display().to_string())
        ),
    )?;
    let entry = exe.with_file_name("agent-guard-hook");
    let hook = |program: &Path, policy: &Path, ev: &Path| {
        format!(
            "{} claude-hook --policy {} < {}",
            quote(program),
            quote(policy),
            quote(ev)
        )
    };
    let floor = "cat the event (floor)";
    let comparisons: [(&'static str, &Path, &Path, &str); 8] = [
        ("entry Bash, no audit db", &entry, &no_db, "Bash"),
        ("entry Read, no audit db", &entry, &no_db, "Read"),
        ("entry Read, SQLite audit db", &entry, &with_db, "Read"),
        ("entry Bash, SQLite audit db", &entry, &with_db, "Bash"),
        ("cli Read, no audit db", exe, &no_db, "Read"),
        ("cli Bash, no audit db", exe, &no_db, "Bash"),
        ("cli Read, SQLite audit db", exe, &with_db, "Read"),
        ("cli Bash, SQLite audit db", exe, &with_db, "Bash"),
    ];
    let home = dir.join("home");
    std::fs::create_dir_all(&home).context("cannot create the bench home")?;
    let first = events(comparisons.len(), "Read")?;
    let first = first.first().context("no event written")?;
    let server = start_resident(&entry, &no_db, first, &project, &home)?;
    let tick_ms = 1e3 / clock_ticks();
    println!(
        "hook calls, {runs} adjacent pairs (call, floor) per call, in turns; load average before {}",
        load_average()
    );
    // Each call is compared with a floor run beside it, not with one run among the other
    // calls: a floor several runs away ran on a machine the runs between left in another
    // state (a judge being replaced, a CLI's pages).
    for (block, (name, program, policy, tool)) in comparisons.into_iter().enumerate() {
        let events = events(block, tool)?;
        let mut call = Case::new(
            name,
            events.iter().map(|e| hook(program, policy, e)).collect(),
        );
        if name.starts_with("entry ") {
            call.server = Some(server);
        }
        let cat = events.iter().map(|e| format!("cat {}", quote(e))).collect();
        let mut pair = [Case::new(floor, cat), call];
        measure(&mut pair, &project, &home, runs)?;
        report(&pair, &[(name, floor)], runs, tick_ms);
    }
    println!("  load average after {}", load_average());

    let p = quote(&project);
    let peer = if Command::new("bwrap")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        Case::new(
            "bwrap (clients' sandbox set-up)",
            vec![format!(
                "exec bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --proc /proc \
                 --dev /dev --tmpfs /tmp --bind {p} {p} --cap-drop ALL -- bash -c true"
            )],
        )
    } else {
        Case::new(
            "unshare (bwrap not installed)",
            vec![
                "exec unshare --pid --fork --mount-proc --net --ipc --mount bash -c true"
                    .to_owned(),
            ],
        )
    };
    let peer_name = peer.name;
    let mut exec = vec![
        peer,
        Case::new(
            "agent-guard exec --yes -- true",
            vec![format!("exec {} exec --yes -- true", quote(exe))],
        ),
    ];
    let load_before = load_average();
    measure(&mut exec, &project, &home, runs)?;
    println!(
        "confinement, {runs} paired runs each; load average before {load_before}, after {}",
        load_average()
    );
    report(
        &exec,
        &[("agent-guard exec --yes -- true", peer_name)],
        runs,
        tick_ms,
    );
    println!("(wall: medians; cpu: user+system of every descendant, summed over runs)");
    Ok(())
}
