//! `cargo xtask <chore>`: the repeatable chores of the workspace, so nobody has to remember
//! long commands. Run `cargo xtask help` for the list.

mod bench_exec;
mod bench_startup;
mod ignored;
mod tidy;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

const HELP: &str = "\
usage: cargo xtask <chore>

chores:
  ci      everything CI runs: fmt check, clippy -D warnings, tests, docs -D warnings,
          tidy, bench smoke (each benchmark run once)
  bench   run the criterion benchmarks (extra arguments go to `cargo bench`);
          `bench exec [--runs N]`: whole-process `agent-guard exec -- true` vs `bash -c true`,
          paired, release build;
          `bench startup [--runs N]`: a hook call vs `cat` of its event (with and
          without an audit database), `exec -- true` vs bubblewrap (or unshare), paired,
          wall and CPU ratios, release build
  fuzz    run a fuzz target for a while: cargo xtask fuzz <crate> <target> [seconds]
  mutants cargo-mutants on the security paths (perm-rules precedence.rs and mode.rs,
          fs-sandbox sandbox.rs), by hand, not in CI; extra arguments go to cargo-mutants.
          Results in target/mutants/<crate>; see docs/mutants.md
  tidy    check the workspace layout rules (dependency direction, READMEs, lints)";

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let chore = args.next().unwrap_or_else(|| "help".to_owned());
    let rest: Vec<String> = args.collect();
    let root = workspace_root();
    match chore.as_str() {
        "ci" => ci(&root),
        "bench" => bench(&root, &rest),
        "fuzz" => fuzz(&root, &rest),
        "mutants" => mutants(&root, &rest),
        "tidy" => {
            tidy::check(&root)?;
            println!("tidy: ok");
            Ok(())
        }
        "help" | "--help" | "-h" => {
            println!("{HELP}");
            Ok(())
        }
        other => bail!("unknown chore `{other}`\n\n{HELP}"),
    }
}

fn workspace_root() -> PathBuf {
    // xtask lives one level below the workspace root.
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

fn ci(root: &Path) -> anyhow::Result<()> {
    tidy::check(root)?;
    println!("tidy: ok");
    cargo(root, &["fmt", "--all", "--check"], &[])?;
    cargo(
        root,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    let output = cargo_tee(root, &["test", "--workspace"])?;
    let ignored = ignored::parse(&output);
    println!("ignored tests: {}", ignored.count);
    for test in &ignored.tests {
        println!("  {test}");
    }
    real_clients(root)?;
    cargo(
        root,
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    // Bench smoke: every benchmark runs once, so a broken bench fails CI without the cost
    // of measuring.
    cargo(root, &["bench", "--workspace", "--", "--test"], &[])?;
    println!("xtask ci: all checks passed");
    Ok(())
}

/// The real-client suite (tests/clients): Claude Code, Codex and Gemini CLI at pinned versions
/// with the guard installed by `agent-guard init`. `.ci/run` installs the clients; a client
/// that is missing fails the suite by name, it is never skipped.
fn real_clients(root: &Path) -> anyhow::Result<()> {
    cargo(root, &["build", "-p", "agent-guard"], &[])?;
    println!("$ python3 tests/clients/run.py");
    let status = Command::new("python3")
        .current_dir(root)
        .args([
            "tests/clients/run.py",
            "--guard",
            "target/debug/agent-guard",
        ])
        .status()
        .context("cannot run python3 tests/clients/run.py")?;
    if !status.success() {
        bail!("the real-client suite failed (tests/clients/run.py)");
    }
    Ok(())
}

fn bench(root: &Path, rest: &[String]) -> anyhow::Result<()> {
    if let Some((first, more)) = rest.split_first()
        && first == "exec"
    {
        return bench_exec::run(root, more);
    }
    if let Some((first, more)) = rest.split_first()
        && first == "startup"
    {
        return bench_startup::run(root, more);
    }
    let mut args = vec!["bench", "--workspace"];
    args.extend(rest.iter().map(String::as_str));
    cargo(root, &args, &[])
}

fn fuzz(root: &Path, rest: &[String]) -> anyhow::Result<()> {
    let [krate, target, more @ ..] = rest else {
        bail!("usage: cargo xtask fuzz <crate> <target> [seconds]");
    };
    let seconds = more.first().map(String::as_str).unwrap_or("60");
    let dir = root.join("crates").join(krate).join("fuzz");
    if !dir.is_dir() {
        bail!("`{}` has no fuzz directory", krate);
    }
    let have_fuzz = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have_fuzz {
        println!("installing cargo-fuzz (once)...");
        cargo(root, &["install", "cargo-fuzz", "--locked"], &[])?;
    }
    let max_time = format!("-max_total_time={seconds}");
    let status = Command::new("cargo")
        .current_dir(&dir)
        .args(["+nightly", "fuzz", "run", target, "--", &max_time])
        .status()
        .context("cannot run cargo +nightly fuzz (is a nightly toolchain installed?)")?;
    if !status.success() {
        bail!("fuzzing `{krate}/{target}` failed: {status}");
    }
    Ok(())
}

/// The files whose surviving mutants docs/mutants.md accounts for, per package.
const MUTANT_TARGETS: &[(&str, &[&str])] = &[
    (
        "perm-rules",
        &[
            "crates/perm-rules/src/precedence.rs",
            "crates/perm-rules/src/mode.rs",
        ],
    ),
    ("fs-sandbox", &["crates/fs-sandbox/src/sandbox.rs"]),
];

fn mutants(root: &Path, rest: &[String]) -> anyhow::Result<()> {
    let have = Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have {
        println!("installing cargo-mutants (once)...");
        cargo(root, &["install", "cargo-mutants", "--locked"], &[])?;
    }
    for (package, files) in MUTANT_TARGETS {
        let out = root.join("target").join("mutants").join(package);
        let out = out.to_string_lossy();
        // Copy mode (the default) leaves the worktree alone; one job because the machines
        // are shared; fewer proptest cases keep each mutant's run short.
        let mut args = vec![
            "mutants",
            "-p",
            package,
            "-j",
            "1",
            "--timeout",
            "90",
            "--output",
            &out,
        ];
        for file in *files {
            args.extend(["--file", file]);
        }
        args.extend(rest.iter().map(String::as_str));
        // cargo-mutants exits non-zero when a mutant survives: report it and go on, so every
        // package is run; the caller reads missed.txt against docs/mutants.md.
        if let Err(err) = cargo(root, &args, &[("PROPTEST_CASES", "64")]) {
            println!("{err}: see {out}/mutants.out/missed.txt and docs/mutants.md");
        }
    }
    Ok(())
}

/// Runs cargo, echoing its stdout as it comes and returning it (stderr is passed through).
fn cargo_tee(root: &Path, args: &[&str]) -> anyhow::Result<String> {
    println!("$ cargo {}", args.join(" "));
    let mut child = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(root)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run cargo {}", args.join(" ")))?;
    let mut output = String::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading cargo's output")?;
            println!("{line}");
            output.push_str(&line);
            output.push('\n');
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() {
        let ignored = ignored::parse(&output);
        println!("ignored tests so far: {}", ignored.count);
        bail!("`cargo {}` failed: {status}", args.join(" "));
    }
    Ok(output)
}

fn cargo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<()> {
    println!("$ cargo {}", args.join(" "));
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cmd.current_dir(root).args(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let status = cmd
        .status()
        .with_context(|| format!("cannot run cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed: {status}", args.join(" "));
    }
    Ok(())
}
