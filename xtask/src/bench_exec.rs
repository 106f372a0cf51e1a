//! `cargo xtask bench exec`: the whole-process cost of a confined run against a bare shell.
//!
//! Builds `agent-guard` in release mode, then alternates `agent-guard exec --yes -- true` and
//! `bash -c true` (so both see the same machine load), and reports each median and the median
//! of the paired ratios. A timing figure, not a test: nothing here asserts a speed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

pub(crate) fn median(values: &mut [f64]) -> f64 {
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

/// The 1, 5 and 15 minute load averages: the machine is shared, so every figure is printed
/// beside the load it was measured under.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_string())
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
    // Warm the page cache and prove both guarded runs work before timing anything.
    for _ in 0..5 {
        time(&mut guarded())?;
        time(&mut no_join())?;
        time(&mut bare())?;
    }
    let load_before = load_average();
    let (mut g, mut n, mut b) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ratio_g, mut ratio_n) = (Vec::new(), Vec::new());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for i in 0..runs {
        // Rotate the order, so no case always runs on a cache another one warmed.
        let (tg, tn, tb) = match i % 3 {
            0 => {
                let tg = ms(time(&mut guarded())?);
                let tn = ms(time(&mut no_join())?);
                (tg, tn, ms(time(&mut bare())?))
            }
            1 => {
                let tb = ms(time(&mut bare())?);
                let tg = ms(time(&mut guarded())?);
                (tg, ms(time(&mut no_join())?), tb)
            }
            _ => {
                let tn = ms(time(&mut no_join())?);
                let tb = ms(time(&mut bare())?);
                (ms(time(&mut guarded())?), tn, tb)
            }
        };
        g.push(tg);
        n.push(tn);
        b.push(tb);
        ratio_g.push(tg / tb);
        ratio_n.push(tn / tb);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "paired runs: {runs}; load average before {load_before}, after {}",
        load_average()
    );
    println!(
        "bash -c true:                      {:.3} ms",
        median(&mut b)
    );
    println!(
        "agent-guard exec --yes -- true:    {:.3} ms  ratio {:.2}x",
        median(&mut g),
        median(&mut ratio_g)
    );
    println!(
        "  same, join_cgroup_v1 = false:    {:.3} ms  ratio {:.2}x",
        median(&mut n),
        median(&mut ratio_n)
    );
    println!("(medians; a ratio is the median of the per-run ratios)");
    Ok(())
}
