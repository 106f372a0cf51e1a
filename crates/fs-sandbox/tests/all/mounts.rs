//! Issue 26 item 4: a build directory on a scratch filesystem mounted inside the project is
//! writable, while every mount that could be a window onto somewhere else is still refused.
//! Each test mounts in a private mount namespace (see `in_mount_namespace`).

use std::io::{Read as _, Write as _};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fs_sandbox::{Access, Op, ResolveMode, SCRATCH_FILESYSTEMS, Sandbox, WriteMode};

use super::{in_mount_namespace, mount_id, run, tree};

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";

fn code<T: std::fmt::Debug>(got: Result<T, fs_sandbox::SandboxError>) -> Option<&'static str> {
    got.err().map(|err| err.code())
}

/// Every filesystem of `SCRATCH_FILESYSTEMS`, mounted as a project's `target/`, is a build
/// directory: created into, written, read back, listed, globbed, through a symlink too, by both
/// ways of opening; the sensitive and protected rules hold inside it.
#[test]
fn a_scratch_build_directory_inside_the_project_is_writable() {
    if !in_mount_namespace("mounts::a_scratch_build_directory_inside_the_project_is_writable") {
        return;
    }
    let t = tree();
    for entry in SCRATCH_FILESYSTEMS {
        let target = t.proj.join(format!("target-{}", entry.fstype));
        std::fs::create_dir(&target).unwrap();
        let point = target.display().to_string();
        run("mount", &["-t", entry.fstype, entry.fstype, &point]);
        std::fs::write(target.join("notes.txt"), KEY).unwrap();
        symlink(
            format!("target-{}/debug", entry.fstype),
            t.proj.join(format!("to-{}", entry.fstype)),
        )
        .unwrap();
        for mode in [ResolveMode::Auto, ResolveMode::Walk] {
            let sb = Sandbox::builder(&t.proj)
                .root(&t.proj, Access::ReadWrite)
                .resolve_mode(mode)
                .build()
                .unwrap();
            let rel = |s: &str| format!("target-{}/{s}", entry.fstype);
            let ctx = format!("{} {mode:?}", entry.fstype);
            sb.create_dir_all(rel("debug/deps")).unwrap();
            sb.open_write(rel("debug/app.d"), WriteMode::Truncate)
                .unwrap()
                .write_all(b"app: src/main.rs\n")
                .unwrap();
            let mut text = String::new();
            sb.open_read(rel("debug/app.d"))
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, "app: src/main.rs\n", "{ctx}");
            text.clear();
            sb.open_read(format!("to-{}/app.d", entry.fstype))
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, "app: src/main.rs\n", "{ctx} through a symlink");
            let names: Vec<_> = sb
                .read_dir(rel("debug"))
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
            assert_eq!(names, ["app.d", "deps"], "{ctx}");
            assert!(sb.metadata(rel("debug/app.d")).unwrap().is_file(), "{ctx}");
            assert_eq!(
                sb.glob(&rel("**/*.d"), None).unwrap(),
                [t.proj.join(rel("debug/app.d"))],
                "{ctx}"
            );
            // The file really is on the scratch mount.
            assert_eq!(
                mount_id(&target.join("debug/app.d")),
                mount_id(&target),
                "{ctx}"
            );
            assert_ne!(mount_id(&target), mount_id(&t.proj), "{ctx}");
            for (path, op, expected) in [
                (rel("debug"), Op::List, None),
                (rel(""), Op::List, None),
                (rel("debug/new"), Op::Write, None),
                (rel("debug/../debug/app.d"), Op::Read, None),
                (rel(".env"), Op::Read, Some("sensitive_path")),
                (
                    rel(".claude/settings.json"),
                    Op::Write,
                    Some("protected_path"),
                ),
                (
                    rel(".git/hooks/pre-commit"),
                    Op::Write,
                    Some("protected_path"),
                ),
                // Not plainly source, so sniffed: opened beneath the scratch mount.
                (rel("notes.txt"), Op::Read, Some("sensitive_path")),
            ] {
                assert_eq!(code(sb.check(&path, op)), expected, "{ctx} {path} {op:?}");
            }
            assert_eq!(
                code(sb.open_read(rel("notes.txt"))),
                Some("sensitive_path"),
                "{ctx}"
            );
            // A read-only root keeps it read-only.
            let ro = Sandbox::builder(&t.proj)
                .root(&t.proj, Access::ReadOnly)
                .resolve_mode(mode)
                .build()
                .unwrap();
            assert_eq!(code(ro.check(rel("debug/app.d"), Op::Read)), None, "{ctx}");
            assert_eq!(
                code(ro.check(rel("debug/app.d"), Op::Write)),
                Some("read_only_root"),
                "{ctx}"
            );
        }
    }
}

/// Mounts that show what is elsewhere stay refused, each with what it is; so does a tmpfs
/// outside the roots reached through a symlink from the project.
#[test]
fn windows_onto_elsewhere_are_still_refused() {
    if !in_mount_namespace("mounts::windows_onto_elsewhere_are_still_refused") {
        return;
    }
    let t = tree();
    let p = |s: &str| t.proj.join(s);
    let s = |p: &Path| p.display().to_string();
    let elsewhere = t.base.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    run("mount", &["-t", "tmpfs", "tmpfs", &s(&elsewhere)]);
    std::fs::create_dir(elsewhere.join("sub")).unwrap();
    std::fs::write(elsewhere.join("sub/file"), "sub").unwrap();
    std::fs::write(elsewhere.join("file"), "elsewhere").unwrap();
    for d in ["subbind", "wholebind", "rootbind", "target"] {
        std::fs::create_dir(p(d)).unwrap();
    }
    // A subdirectory of a tmpfs, the whole of a tmpfs mounted elsewhere, and `/`.
    run(
        "mount",
        &["--bind", &s(&elsewhere.join("sub")), &s(&p("subbind"))],
    );
    run("mount", &["--bind", &s(&elsewhere), &s(&p("wholebind"))]);
    run("mount", &["--rbind", "/", &s(&p("rootbind"))]);
    // A tmpfs on a tmpfs: its parent is not the project's filesystem.
    run("mount", &["-t", "tmpfs", "tmpfs", &s(&p("target"))]);
    std::fs::create_dir(p("target/inner")).unwrap();
    run("mount", &["-t", "tmpfs", "tmpfs", &s(&p("target/inner"))]);
    std::fs::write(p("target/inner/file"), "inner").unwrap();
    symlink(elsewhere.join("file"), p("to_elsewhere")).unwrap();
    symlink(&elsewhere, p("to_elsewhere_dir")).unwrap();
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let sb = Sandbox::builder(&t.proj)
            .root(&t.proj, Access::ReadWrite)
            .resolve_mode(mode)
            .build()
            .unwrap();
        let cases: &[(&str, Op, &str, &str)] = &[
            (
                "subbind/file",
                Op::Read,
                "other_filesystem",
                "bind mount of the directory `/sub`",
            ),
            ("subbind/new", Op::Write, "other_filesystem", "bind mount"),
            (
                "wholebind/file",
                Op::Read,
                "other_filesystem",
                "also mounted at",
            ),
            (
                "wholebind/new",
                Op::Write,
                "other_filesystem",
                "also mounted at",
            ),
            (
                "rootbind/etc/passwd",
                Op::Read,
                "other_filesystem",
                "not a scratch one",
            ),
            (
                "rootbind/tmp",
                Op::List,
                "other_filesystem",
                "not a scratch one",
            ),
            (
                "target/inner/file",
                Op::Read,
                "other_filesystem",
                "on another mount",
            ),
            (
                "target/inner/new",
                Op::Write,
                "other_filesystem",
                "on another mount",
            ),
            (
                "to_elsewhere",
                Op::Read,
                "outside_roots",
                "outside the allowed roots",
            ),
            (
                "to_elsewhere",
                Op::Write,
                "outside_roots",
                "outside the allowed roots",
            ),
            ("to_elsewhere_dir/new", Op::Write, "outside_roots", ""),
        ];
        let mut failures = Vec::new();
        for (path, op, want, why) in cases {
            match sb.check(path, *op) {
                Err(err) if err.code() == *want && err.to_string().contains(why) => {}
                got => failures.push(format!(
                    "{mode:?} {path} {op:?}: want {want} ({why}), got {got:?}"
                )),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert_eq!(
            code(sb.open_read("wholebind/file")),
            Some("other_filesystem")
        );
        assert_eq!(
            code(sb.open_write("subbind/new", WriteMode::Create)),
            Some("other_filesystem")
        );
        assert_eq!(
            code(sb.create_dir_all("rootbind/tmp/x")),
            Some("other_filesystem")
        );
        // The outer tmpfs itself is a build directory.
        assert_eq!(code(sb.check("target/x", Op::Write)), None);
    }
    assert!(!elsewhere.join("sub/new").exists());
}

/// Renames race a directory holding the scratch mount against one holding a bind mount of
/// `outside` (as only a person could mount, the agent being able to rename): whatever the
/// check saw, no open lands on the bind, so `outside/secret` is never read and nothing is
/// created in `outside`.
#[test]
fn renames_cannot_swap_a_bind_mount_for_the_scratch_mount() {
    if !in_mount_namespace("mounts::renames_cannot_swap_a_bind_mount_for_the_scratch_mount") {
        return;
    }
    let t = tree();
    let p = |s: &str| t.proj.join(s);
    for d in ["a/t", "b/t"] {
        std::fs::create_dir_all(p(d)).unwrap();
    }
    run(
        "mount",
        &["-t", "tmpfs", "tmpfs", &p("a/t").display().to_string()],
    );
    std::fs::write(p("a/t/secret"), "scratch").unwrap();
    let outside = t.base.join("outside");
    run(
        "mount",
        &[
            "--bind",
            &outside.display().to_string(),
            &p("b/t").display().to_string(),
        ],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (a, b, stop) = (p("a"), p("b"), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &a,
                    rustix::fs::CWD,
                    &b,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                flips += 1;
            }
            flips
        })
    };
    let mut read_scratch = 0;
    let mut wrote = 0;
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let sb = Sandbox::builder(&t.proj)
            .root(&t.proj, Access::ReadWrite)
            .resolve_mode(mode)
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(mut file) = sb.open_read("a/t/secret") {
                let mut text = String::new();
                file.read_to_string(&mut text).unwrap();
                assert_eq!(text, "scratch", "{mode:?}: a read landed on the bind mount");
                read_scratch += 1;
            }
            if sb.open_write("a/t/out", WriteMode::Truncate).is_ok() {
                wrote += 1;
            }
            if sb.create_dir_all("a/t/dir/sub").is_ok() {
                wrote += 1;
            }
            assert!(
                !outside.join("out").exists(),
                "{mode:?}: created on the bind"
            );
            assert!(
                !outside.join("dir").exists(),
                "{mode:?}: created on the bind"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 100, "the race did not run: {flips} flips");
    assert!(read_scratch > 0 && wrote > 0, "no open ever succeeded");
}
