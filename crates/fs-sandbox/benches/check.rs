#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Checks per second for short and deep paths, existing and new, against
//! `std::fs::canonicalize + starts_with` and one raw `openat2` call.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use fs_sandbox::{Access, Op, Sandbox};
use rustix::fs::{Mode, OFlags, ResolveFlags};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("a/b/c/d/e/f")).unwrap();
    std::fs::write(root.join("short.txt"), "x").unwrap();
    std::fs::write(root.join("a/b/c/d/e/f/deep.txt"), "x").unwrap();
    let sandbox = Sandbox::builder(&root)
        .root(&root, Access::ReadWrite)
        .build()
        .unwrap();
    let root_fd = rustix::fs::open(
        &root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();

    let mut group = c.benchmark_group("check");
    group
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500));
    for (name, rel) in [
        ("short_existing", "short.txt"),
        ("deep_existing", "a/b/c/d/e/f/deep.txt"),
        ("short_new", "new.txt"),
        ("deep_new", "a/b/c/d/e/f/new.txt"),
    ] {
        let path = root.join(rel);
        group.bench_function(format!("sandbox_{name}"), |b| {
            b.iter(|| sandbox.check(black_box(&path), Op::Read))
        });
        if name.ends_with("existing") {
            // A write also runs the protected judgement by identity (git directories,
            // symlinked settings directories, core.hooksPath) over the ancestors.
            group.bench_function(format!("sandbox_write_{name}"), |b| {
                b.iter(|| sandbox.check(black_box(&path), Op::Write))
            });
        }
        group.bench_function(format!("canonicalize_{name}"), |b| {
            b.iter(|| std::fs::canonicalize(black_box(&path)).map(|p| p.starts_with(&root)))
        });
    }
    // Content: a project source file is not sniffed; a 16 KiB configuration file is (the
    // crate's own key-block sniffer; agent-core's evaluate bench has the detector one), in the
    // project and in a read-only root.
    std::fs::write(root.join("lib.rs"), "pub fn f() {}\n").unwrap();
    let config: String = (0..)
        .map(|i| format!("service-{i}:\n  image: registry.example.com/s{i}:1.0\n  port: {i}\n"))
        .take_while({
            let mut len = 0;
            move |line: &String| {
                len += line.len();
                len <= 16 * 1024
            }
        })
        .collect();
    std::fs::write(root.join("deploy.yaml"), &config).unwrap();
    let ro = tempfile::tempdir().unwrap();
    let ro_root = std::fs::canonicalize(ro.path()).unwrap();
    std::fs::write(ro_root.join("deploy.yaml"), &config).unwrap();
    let with_ro = Sandbox::builder(&root)
        .root(&root, Access::ReadWrite)
        .root(&ro_root, Access::ReadOnly)
        .build()
        .unwrap();
    for (name, path, sb) in [
        ("read_source_not_sniffed", root.join("lib.rs"), &sandbox),
        ("read_sniff_16k_project", root.join("deploy.yaml"), &sandbox),
        (
            "read_sniff_16k_read_only_root",
            ro_root.join("deploy.yaml"),
            &with_ro,
        ),
    ] {
        group.bench_function(name, |b| b.iter(|| sb.check(black_box(&path), Op::Read)));
    }
    // A path into a tmpfs `target/` below the root crosses a mount: the slow resolution and one
    // read of `/proc/self/mountinfo`. Mounting needs a private mount namespace, so this case
    // runs only when asked: `FS_SANDBOX_BENCH_MOUNT=1 unshare -m --propagation private -- <bench>`.
    if std::env::var_os("FS_SANDBOX_BENCH_MOUNT").is_some() {
        let target = root.join("target");
        std::fs::create_dir(&target).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "tmpfs"])
            .arg(&target)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "cannot mount a tmpfs on {}",
            target.display()
        );
        std::fs::write(target.join("lib.rs"), "pub fn f() {}\n").unwrap();
        let path = target.join("lib.rs");
        group.bench_function("read_scratch_mount", |b| {
            b.iter(|| sandbox.check(black_box(&path), Op::Read))
        });
    }
    // What a short-lived process (one hook call) pays: build the sandbox, then judge its first
    // path (the sensitive and protected sets compile on first use), or only its directory.
    let short = root.join("short.txt");
    for (name, path, op) in [
        ("build_then_first_read", &short, Op::Read),
        ("build_then_first_write", &short, Op::Write),
        ("build_then_directory", &root, Op::ExecuteDir),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let s = Sandbox::builder(&root)
                    .root(&root, Access::ReadWrite)
                    .build()
                    .unwrap();
                s.check(black_box(path), op).is_ok()
            })
        });
    }
    for (name, rel) in [("short", "short.txt"), ("deep", "a/b/c/d/e/f/deep.txt")] {
        let path = root.join(rel);
        group.bench_function(format!("sensitive_{name}"), |b| {
            b.iter(|| sandbox.sensitive(black_box(&path)))
        });
        group.bench_function(format!("openat2_{name}"), |b| {
            b.iter(|| {
                rustix::fs::openat2(
                    &root_fd,
                    black_box(rel),
                    OFlags::PATH | OFlags::CLOEXEC,
                    Mode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
