//! `cargo xtask bench exec`: the whole-process cost of a confined run against a bare shell.
//!
//! Builds `agent-guard` in release mode, then alternates `agent-guard exec --yes -- true` and
//! `bash -c true` (so both see the same machine load), and reports each median and the median
//! of the paired ratios. A timing figure, not a test: nothing here asserts a speed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values.get(n / 2).copied().unwrap_or(f64::NAN),
        n => {
            let a = values.get(n / 2 - 1).copied().unwrap_or(f64::NAN);
            let b = values.get(n / 2).copied().unwrap_or(f64::NAN);
            (a + b) / 2.0
        }
    }
}

fn time(cmd: &mut Command) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .context("cannot start the benchmarked command")?;
    let elapsed = start.elapsed();
    if !status.success() {
        bail!("the benchmarked command failed: {status}");
    }
    Ok(elapsed)
}

/// Runs the paired benchmark; `rest` may hold `--runs N` (default 200).
pub(crate) fn run(root: &Path, rest: &[String]) -> anyhow::Result<()> {
    let runs: usize = match rest {
        [flag, n] if flag == "--runs" => n.parse().context("--runs takes a number")?,
        [] => 200,
        _ => bail!("usage: cargo xtask bench exec [--runs N]"),
    };
    crate::cargo(root, &["build", "--release", "-p", "agent-guard"], &[])?;
    let exe = root.join("target/release/agent-guard");
    let dir = std::env::temp_dir().join(format!("xtask-bench-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("cannot create the benchmark directory")?;
    // The same profile without the cgroup v1 join (the PID namespace caps tasks, RLIMIT_AS
    // memory); identical to the default on a cgroup v2 machine.
    let policy = dir.join("no-v1-join.toml");
    std::fs::write(&policy, "[bash.exec]\njoin_cgroup_v1 = false\n")
        .context("cannot write the benchmark policy")?;
    let guarded = || {
        let mut c = Command::new(&exe);
        c.current_dir(&dir).args(["exec", "--yes", "--", "true"]);
        c
    };
    let no_join = || {
        let mut c = Command::new(&exe);
        c.current_dir(&dir).arg("exec").arg("--policy").arg(&policy);
        c.args(["--yes", "--", "true"]);
        c
    };
    let bare = || {
        let mut c = Command::new("bash");
        c.current_dir(&dir).args(["-c", "true"]);
        c
    };
    // Warm the page cache and prove the guarded run works before timing anything.
    for _ in 0..5 {
        time(&mut guarded())?;
        time(&mut bare())?;
    }
    let (mut g, mut b, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        // Alternate which goes first, so neither always runs on a cache the other warmed.
        let (tg, tb) = if i % 2 == 0 {
            let tg = time(&mut guarded())?;
            (tg, time(&mut bare())?)
        } else {
            let tb = time(&mut bare())?;
            (time(&mut guarded())?, tb)
        };
        let (tg, tb) = (tg.as_secs_f64() * 1e3, tb.as_secs_f64() * 1e3);
        g.push(tg);
        b.push(tb);
        ratios.push(tg / tb);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("paired runs:                      {runs}");
    println!(
        "agent-guard exec --yes -- true:   {:.3} ms (median)",
        median(&mut g)
    );
    println!(
        "bash -c true:                     {:.3} ms (median)",
        median(&mut b)
    );
    println!(
        "median paired ratio:              {:.2}x",
        median(&mut ratios)
    );
    Ok(())
}
