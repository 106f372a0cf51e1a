#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Behaviour tests on real temporary trees with real symlinks and hard links.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fs_sandbox::{Access, Op, ResolveMode, Sandbox, SandboxConfig, WriteMode};

#[path = "all/content.rs"]
mod content;
#[path = "all/home.rs"]
mod home;
#[path = "all/mounts.rs"]
mod mounts;
#[path = "all/stores.rs"]
mod stores;
use proptest::prelude::*;

/// `base/{proj (rw), proj-evil, ro (read-only root), outside}` with links inside `proj`.
struct Tree {
    _dir: tempfile::TempDir,
    base: PathBuf,
    proj: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    for d in [
        "proj/src/deep/er",
        "proj/.git/hooks",
        "proj/.claude",
        "proj-evil",
        "ro/docs",
        "outside",
    ] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    for (f, text) in [
        ("proj/file.txt", "inside"),
        ("proj/src/main.rs", "fn main() {}"),
        ("proj/.git/config", "[core]"),
        ("proj/a..b", "dots"),
        ("proj/x~", "tilde"),
        ("proj-evil/x", "evil"),
        ("ro/docs/readme", "ro"),
        ("outside/secret", "secret"),
    ] {
        std::fs::write(base.join(f), text).unwrap();
    }
    symlink("src", proj.join("link_src")).unwrap();
    symlink(base.join("outside"), proj.join("link_out")).unwrap();
    symlink(base.join("outside/secret"), proj.join("link_secret")).unwrap();
    symlink(proj.join("src/main.rs"), proj.join("abs_in")).unwrap();
    symlink("missing_target", proj.join("dangling_in")).unwrap();
    symlink(base.join("outside/new"), proj.join("dangling_out")).unwrap();
    symlink("loop_a", proj.join("loop_b")).unwrap();
    symlink("loop_b", proj.join("loop_a")).unwrap();
    symlink("self_loop", proj.join("self_loop")).unwrap();
    symlink("../..", proj.join("src/up2")).unwrap();
    symlink(base.join("ro/docs"), proj.join("to_ro")).unwrap();
    symlink(".git/config", proj.join("to_gitconfig")).unwrap();
    symlink("/proc/self/root", proj.join("magic")).unwrap();
    std::fs::hard_link(base.join("outside/secret"), proj.join("hard")).unwrap();
    mkfifo(&proj.join("fifo"));
    Tree {
        _dir: dir,
        base,
        proj,
    }
}

fn sandbox(t: &Tree, mode: ResolveMode) -> Sandbox {
    Sandbox::builder(&t.proj)
        .root(&t.proj, Access::ReadWrite)
        .root(t.base.join("ro"), Access::ReadOnly)
        .resolve_mode(mode)
        .build()
        .unwrap()
}

/// (path, op, expected): `Ok(suffix)` = allowed and resolved path ends with `base/suffix`;
/// `Err(code)` = refused with that code. `{base}` is replaced by the tree's base.
const CASES: &[(&str, Op, Result<&str, &str>)] = &[
    // plain inside
    ("file.txt", Op::Read, Ok("proj/file.txt")),
    ("file.txt", Op::Write, Ok("proj/file.txt")),
    ("./file.txt", Op::Read, Ok("proj/file.txt")),
    ("src/main.rs", Op::Read, Ok("proj/src/main.rs")),
    ("src", Op::List, Ok("proj/src")),
    ("src", Op::ExecuteDir, Ok("proj/src")),
    (".", Op::List, Ok("proj")),
    ("{base}/proj/file.txt", Op::Read, Ok("proj/file.txt")),
    ("{base}/proj", Op::ExecuteDir, Ok("proj")),
    ("src/deep/er", Op::List, Ok("proj/src/deep/er")),
    ("src//main.rs", Op::Read, Ok("proj/src/main.rs")),
    ("src/", Op::List, Ok("proj/src")),
    // names with dots and tildes inside
    ("a..b", Op::Read, Ok("proj/a..b")),
    ("a..b", Op::Write, Ok("proj/a..b")),
    ("x~", Op::Read, Ok("proj/x~")),
    ("src/~name", Op::Write, Ok("proj/src/~name")),
    ("...", Op::Write, Ok("proj/...")),
    // `..` that stays inside
    ("src/../file.txt", Op::Read, Ok("proj/file.txt")),
    ("src/deep/../../file.txt", Op::Read, Ok("proj/file.txt")),
    (
        "src/deep/er/../../main.rs",
        Op::Read,
        Ok("proj/src/main.rs"),
    ),
    (
        "{base}/outside/../proj/file.txt",
        Op::Read,
        Ok("proj/file.txt"),
    ),
    // `..` that climbs out
    ("..", Op::List, Err("outside_roots")),
    ("../outside/secret", Op::Read, Err("outside_roots")),
    ("src/../../outside/secret", Op::Read, Err("outside_roots")),
    (
        "../../../../../../etc/passwd",
        Op::Read,
        Err("outside_roots"),
    ),
    // prefix siblings
    ("../proj-evil/x", Op::Read, Err("outside_roots")),
    ("{base}/proj-evil/x", Op::Read, Err("outside_roots")),
    ("{base}/proj-evil", Op::List, Err("outside_roots")),
    ("{base}/projx", Op::Write, Err("outside_roots")),
    ("/etc/passwd", Op::Read, Err("outside_roots")),
    ("/", Op::List, Err("outside_roots")),
    // symlinks inside
    ("link_src/main.rs", Op::Read, Ok("proj/src/main.rs")),
    ("link_src", Op::List, Ok("proj/src")),
    ("abs_in", Op::Read, Ok("proj/src/main.rs")),
    ("abs_in", Op::Write, Ok("proj/src/main.rs")),
    ("link_src/../file.txt", Op::Read, Ok("file.txt")),
    // symlinks out
    ("link_out/secret", Op::Read, Err("outside_roots")),
    ("link_out", Op::List, Err("outside_roots")),
    ("link_secret", Op::Read, Err("outside_roots")),
    ("link_secret", Op::Write, Err("outside_roots")),
    ("link_out/new_file", Op::Write, Err("outside_roots")),
    ("src/up2/outside/secret", Op::Read, Err("outside_roots")),
    ("src/up2", Op::List, Err("outside_roots")),
    ("src/up2/proj/file.txt", Op::Read, Ok("proj/file.txt")),
    // dangling final symlinks judged by their target
    ("dangling_in", Op::Write, Ok("proj/missing_target")),
    ("dangling_out", Op::Write, Err("outside_roots")),
    ("dangling_out", Op::Read, Err("outside_roots")),
    // non-existent paths
    ("new.txt", Op::Write, Ok("proj/new.txt")),
    ("new/dir/file", Op::Write, Ok("proj/new/dir/file")),
    // a `..` after a missing name cannot be resolved physically
    ("new/../file2", Op::Write, Err("unresolvable")),
    ("new/../../outside/x", Op::Write, Err("unresolvable")),
    ("new/..", Op::List, Err("unresolvable")),
    ("src/new/../main.rs", Op::Read, Err("unresolvable")),
    ("dangling_in/../file.txt", Op::Read, Err("unresolvable")),
    ("link_src/new.rs", Op::Write, Ok("proj/src/new.rs")),
    // loops and magic links
    ("loop_a", Op::Read, Err("symlink_loop")),
    ("loop_b/x", Op::Write, Err("symlink_loop")),
    ("self_loop", Op::Read, Err("symlink_loop")),
    ("magic/etc/passwd", Op::Read, Err("magic_link")),
    ("/proc/self/root/etc/passwd", Op::Read, Err("magic_link")),
    ("/proc/self/cwd", Op::List, Err("magic_link")),
    // typed errors
    ("", Op::Read, Err("empty")),
    ("~", Op::Read, Err("tilde")),
    ("~/file.txt", Op::Read, Err("tilde")),
    ("~root/.bashrc", Op::Write, Err("tilde")),
    // read-only root
    ("{base}/ro/docs/readme", Op::Read, Ok("ro/docs/readme")),
    ("{base}/ro/docs", Op::List, Ok("ro/docs")),
    ("{base}/ro/docs/readme", Op::Write, Err("read_only_root")),
    ("{base}/ro/new", Op::Write, Err("read_only_root")),
    ("to_ro/readme", Op::Read, Ok("ro/docs/readme")),
    ("to_ro/readme", Op::Write, Err("read_only_root")),
    // protected
    (".git/config", Op::Read, Ok("proj/.git/config")),
    (".git/config", Op::Write, Err("protected_path")),
    ("to_gitconfig", Op::Write, Err("protected_path")),
    (".git/hooks/pre-commit", Op::Write, Err("protected_path")),
    (".git/hooks", Op::Write, Err("protected_path")),
    (".git/HEAD", Op::Write, Ok("proj/.git/HEAD")),
    (".claude/settings.json", Op::Write, Err("protected_path")),
    (".agent/x/y", Op::Write, Err("protected_path")),
    (".bashrc", Op::Write, Err("protected_path")),
    ("src/.zshrc", Op::Write, Err("protected_path")),
    (".profile", Op::Write, Err("protected_path")),
    (".bash_profile", Op::Write, Err("protected_path")),
    (".bashrc.bak", Op::Write, Ok("proj/.bashrc.bak")),
    // nested repositories are protected too
    ("src/.git/config", Op::Write, Err("protected_path")),
    ("src/.git", Op::Write, Err("protected_path")),
    ("src/.git/HEAD", Op::Write, Ok("proj/src/.git/HEAD")),
    // hard links
    ("hard", Op::Read, Ok("proj/hard")),
    ("hard", Op::Write, Err("hard_link")),
];

fn run_cases(mode: ResolveMode) {
    let t = tree();
    let sb = sandbox(&t, mode);
    let base = t.base.display().to_string();
    let mut failures = Vec::new();
    for (path, op, expected) in CASES {
        let path = path.replace("{base}", &base);
        let got = sb.check(&path, *op);
        let ok = match (expected, &got) {
            (Ok(suffix), Ok(p)) => {
                p.path() == t.base.join(suffix)
                    || p.path().ends_with(suffix) && p.path().starts_with(&t.base)
            }
            (Err(code), Err(e)) => e.code() == *code,
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{path:?} {op:?}: expected {expected:?}, got {got:?}"
            ));
        }
    }
    assert!(CASES.len() >= 60);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn table_auto() {
    run_cases(ResolveMode::Auto);
}

#[test]
fn table_walk() {
    run_cases(ResolveMode::Walk);
}

#[test]
fn typed_errors_for_nul_and_length() {
    let t = tree();
    let sb = sandbox(&t, ResolveMode::Auto);
    let nul = std::ffi::OsStr::new("a\0b");
    assert_eq!(sb.check(nul, Op::Read).unwrap_err().code(), "nul");
    assert_eq!(
        sb.check("a".repeat(256), Op::Write).unwrap_err().code(),
        "too_long"
    );
    assert!(sb.check("a".repeat(255), Op::Write).is_ok());
    let long = vec!["d"; 2100].join("/");
    assert_eq!(sb.check(long, Op::Write).unwrap_err().code(), "too_long");
}

#[test]
fn messages_name_path_and_roots() {
    let t = tree();
    let sb = sandbox(&t, ResolveMode::Auto);
    let err = sb.check(t.base.join("proj-evil/x"), Op::Read).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "`{}/proj-evil/x` is outside the allowed roots `{}`",
            t.base.display(),
            t.proj.display()
        )),
        "{msg}"
    );
}

fn ops_roundtrip(mode: ResolveMode) {
    let t = tree();
    let sb = sandbox(&t, mode);
    let mut s = String::new();
    sb.open_read("link_src/main.rs")
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "fn main() {}");
    let mut s = String::new();
    sb.open_read("abs_in")
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "fn main() {}");
    assert_eq!(
        sb.open_read("link_secret").unwrap_err().code(),
        "outside_roots"
    );
    sb.open_write("new.txt", WriteMode::Create)
        .unwrap()
        .write_all(b"one")
        .unwrap();
    assert_eq!(
        sb.open_write("new.txt", WriteMode::Create)
            .unwrap_err()
            .code(),
        "io"
    );
    sb.open_write("new.txt", WriteMode::Append)
        .unwrap()
        .write_all(b"two")
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(t.proj.join("new.txt")).unwrap(),
        "onetwo"
    );
    sb.open_write("new.txt", WriteMode::Truncate)
        .unwrap()
        .write_all(b"3")
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(t.proj.join("new.txt")).unwrap(),
        "3"
    );
    assert_eq!(
        sb.open_write("hard", WriteMode::Truncate)
            .unwrap_err()
            .code(),
        "hard_link"
    );
    assert_eq!(
        std::fs::read_to_string(t.base.join("outside/secret")).unwrap(),
        "secret"
    );
    assert_eq!(
        sb.open_write(".git/config", WriteMode::Append)
            .unwrap_err()
            .code(),
        "protected_path"
    );
    sb.open_write("dangling_in", WriteMode::Create).unwrap();
    assert!(t.proj.join("missing_target").is_file());
    sb.create_dir_all("made/a/b").unwrap();
    assert!(t.proj.join("made/a/b").is_dir());
    assert_eq!(
        sb.create_dir_all("link_out/x").unwrap_err().code(),
        "outside_roots"
    );
    let names: Vec<_> = sb
        .read_dir("src")
        .unwrap()
        .into_iter()
        .map(|e| e.name.into_string().unwrap())
        .collect();
    assert_eq!(names, ["deep", "main.rs", "up2"]);
    assert!(sb.metadata("link_src").unwrap().is_dir());
    assert_eq!(sb.metadata("link_out").unwrap_err().code(), "outside_roots");
    assert_eq!(sb.read_dir("link_out").unwrap_err().code(), "outside_roots");
}

#[test]
fn ops_openat2_or_auto() {
    ops_roundtrip(ResolveMode::Auto);
}

#[test]
fn ops_walk() {
    ops_roundtrip(ResolveMode::Walk);
}

#[test]
fn glob_is_confined() {
    let t = tree();
    let sb = sandbox(&t, ResolveMode::Auto);
    let found = sb.glob("src/**/*.rs", None).unwrap();
    assert_eq!(found, vec![t.proj.join("src/main.rs")]);
    // `link_out` matches `*` by name but leads outside: not returned, not walked.
    let top = sb.glob("*", None).unwrap();
    assert!(top.contains(&t.proj.join("file.txt")));
    assert!(top.contains(&t.proj.join("link_src")));
    assert!(!top.contains(&t.proj.join("link_out")));
    assert!(!top.contains(&t.proj.join("link_secret")));
    let all = sb.glob("**/secret", None).unwrap();
    assert!(all.is_empty(), "{all:?}");
    assert_eq!(
        sb.glob("../outside/*", None).unwrap_err().code(),
        "glob_escape"
    );
    assert_eq!(
        sb.glob(&format!("{}/outside/*", t.base.display()), None)
            .unwrap_err()
            .code(),
        "outside_roots"
    );
    assert_eq!(
        sb.glob("link_out/*", None).unwrap_err().code(),
        "outside_roots"
    );
}

#[test]
fn config_relative_roots_and_protected() {
    let t = tree();
    let config: SandboxConfig = toml_like(&t);
    let sb = Sandbox::from_config(&config, &t.proj).unwrap();
    assert_eq!(sb.roots().len(), 2);
    assert_eq!(sb.roots()[0].path(), t.proj);
    assert_eq!(sb.roots()[1].access(), Access::ReadOnly);
    assert!(
        sb.check(".bashrc", Op::Write).is_ok(),
        "protected replaced the defaults"
    );
    assert_eq!(
        sb.check("secrets/k", Op::Write).unwrap_err().code(),
        "protected_path"
    );
    assert_eq!(
        sb.check("file.txt", Op::Write).unwrap_err().code(),
        "protected_path"
    );
    let empty = Sandbox::from_config(&SandboxConfig::default(), &t.proj).unwrap();
    assert_eq!(empty.roots()[0].path(), t.proj);
    assert_eq!(empty.roots()[0].access(), Access::ReadWrite);
}

fn toml_like(_t: &Tree) -> SandboxConfig {
    SandboxConfig {
        roots: vec![PathBuf::from(".")],
        read_only_roots: vec![PathBuf::from("../ro")],
        protected: Some(vec!["secrets/**".into()]),
        extra_protected: vec!["*.txt".into()],
        ..SandboxConfig::default()
    }
}

fn race(mode: ResolveMode) {
    let t = tree();
    let sb = Arc::new(sandbox(&t, mode));
    let link = t.proj.join("flip");
    let tmp = t.proj.join("flip.tmp");
    symlink("file.txt", &link).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        let outside = t.base.join("outside/secret");
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let target: &Path = if n.is_multiple_of(2) {
                    &outside
                } else {
                    Path::new("file.txt")
                };
                let _ = std::fs::remove_file(&tmp);
                symlink(target, &tmp).unwrap();
                std::fs::rename(&tmp, &link).unwrap();
                n += 1;
            }
        })
    };
    let start = Instant::now();
    let mut opened = 0;
    while start.elapsed() < Duration::from_millis(700) {
        if let Ok(mut f) = sb.open_read("flip") {
            let mut s = String::new();
            f.read_to_string(&mut s).unwrap();
            assert_ne!(s, "secret", "an open reached the outside file");
            opened += 1;
        }
        if let Ok(mut f) = sb.open_write("flip", WriteMode::Append) {
            f.write_all(b"").unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    assert_eq!(
        std::fs::read_to_string(t.base.join("outside/secret")).unwrap(),
        "secret"
    );
    assert!(opened > 0, "the loop never opened the inside file");
}

#[test]
fn race_symlink_flip_auto() {
    race(ResolveMode::Auto);
}

#[test]
fn race_symlink_flip_walk() {
    race(ResolveMode::Walk);
}

#[test]
fn fuzz_corpus_runs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/check_path");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        fs_sandbox::fuzz::check_path(&std::fs::read(entry.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n >= 5);
}

fn part() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "..",
        ".",
        "",
        "a",
        "b",
        "src",
        "link_src",
        "link_out",
        "src/up2",
        "abs_in",
        "dangling_out",
        "deep",
        "new",
        "file.txt",
        "to_ro",
        "fifo",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn no_generated_path_escapes(parts in prop::collection::vec(part(), 1..8), absolute in any::<bool>(), op in prop::sample::select(vec![Op::Read, Op::Write, Op::List])) {
        let t = tree();
        let sb = sandbox(&t, ResolveMode::Auto);
        let rel = parts.join("/");
        let path = if absolute { format!("{}/{rel}", t.proj.display()) } else { rel };
        if path.is_empty() {
            // The spec refuses an empty path with its own typed error, whatever the cwd.
            prop_assert_eq!(sb.check(&path, op).err().map(|e| e.code()), Some("empty"));
            return Ok(());
        }
        match sb.check(&path, op) {
            Ok(p) => {
                prop_assert!(p.path().starts_with(&t.proj) || p.path().starts_with(t.base.join("ro")));
                if let Ok(meta) = std::fs::metadata(p.path()) {
                    prop_assert!(meta.is_file() || meta.is_dir(), "accepted a special file: {:?}", p.path());
                }
                if let Ok(real) = std::fs::canonicalize(t.proj.join(&path)) {
                    prop_assert_eq!(real, p.path().to_owned());
                }
            }
            Err(_) => {
                if let Ok(real) = std::fs::canonicalize(t.proj.join(&path)) {
                    let ordinary = std::fs::metadata(&real).is_ok_and(|m| m.is_file() || m.is_dir());
                    prop_assert!(!(real.starts_with(&t.proj) && op == Op::Read && ordinary), "refused a read inside the root: {real:?}");
                }
            }
        }
    }

    #[test]
    fn check_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        fs_sandbox::fuzz::check_path(&bytes);
    }
}

/// `base/{home/.ssh/id_rsa, home/.aws/credentials, proj/...}` with links to the secrets.
fn sensitive_tree() -> (tempfile::TempDir, PathBuf, PathBuf, Sandbox) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let home = base.join("home");
    let proj = base.join("proj");
    for d in [
        "home/.ssh",
        "home/.aws",
        "proj/src",
        "proj/.venv/.env",
        "proj/tls",
    ] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    for (f, text) in [
        ("home/.ssh/id_rsa", "KEY"),
        ("home/.aws/credentials", "AKIA"),
        ("proj/.env", "TOKEN=1"),
        ("proj/.env.local", "TOKEN=2"),
        ("proj/.env.example", "TOKEN="),
        ("proj/src/main.rs", "fn main() {}"),
        ("proj/tls/ca.pem", "-----BEGIN CERTIFICATE-----\n"),
        ("proj/tls/server.pem", "-----BEGIN EC PRIVATE KEY-----\n"),
        ("proj/.npmrc", "//registry.npmjs.org/:_authToken=x"),
    ] {
        std::fs::write(base.join(f), text).unwrap();
    }
    symlink(home.join(".ssh/id_rsa"), proj.join("innocent.txt")).unwrap();
    symlink(home.join(".ssh"), proj.join("keys")).unwrap();
    symlink(".env", proj.join("settings.txt")).unwrap();
    symlink("src/main.rs", proj.join(".env.production")).unwrap();
    let sb = Sandbox::builder(&proj)
        .root(&proj, Access::ReadWrite)
        .root(&home, Access::ReadWrite)
        .home(&home)
        .sensitive("*.secret")
        .build()
        .unwrap();
    (dir, home, proj, sb)
}

#[test]
fn sensitive_paths_are_refused_by_physical_path_and_by_path_as_given() {
    let (_dir, home, proj, sb) = sensitive_tree();
    let h = home.display().to_string();
    let cases: &[(String, Op, Option<&str>)] = &[
        (format!("{h}/.ssh/id_rsa"), Op::Read, Some("sensitive_path")),
        (
            format!("{h}/.ssh/id_rsa"),
            Op::Write,
            Some("sensitive_path"),
        ),
        (format!("{h}/.ssh"), Op::List, Some("sensitive_path")),
        (format!("{h}/.ssh/"), Op::List, Some("sensitive_path")),
        (
            format!("{h}/.ssh/new_key"),
            Op::Write,
            Some("sensitive_path"),
        ),
        (
            format!("{h}/.aws/credentials"),
            Op::Read,
            Some("sensitive_path"),
        ),
        (
            format!("{h}/./.aws/../.aws/credentials"),
            Op::Read,
            Some("sensitive_path"),
        ),
        (h.clone(), Op::List, None),
        // A symlink to a key, under an innocent name: the physical path is judged.
        ("innocent.txt".into(), Op::Read, Some("sensitive_path")),
        ("keys/id_rsa".into(), Op::Read, Some("sensitive_path")),
        ("keys".into(), Op::List, Some("sensitive_path")),
        ("settings.txt".into(), Op::Read, Some("sensitive_path")),
        // A secret-looking name that links to an ordinary file: the given path is judged.
        (".env.production".into(), Op::Read, Some("sensitive_path")),
        (".env".into(), Op::Read, Some("sensitive_path")),
        ("./.env".into(), Op::Read, Some("sensitive_path")),
        ("src/../.env".into(), Op::Read, Some("sensitive_path")),
        (".env".into(), Op::Write, Some("sensitive_path")),
        (".env.local".into(), Op::Read, Some("sensitive_path")),
        (".npmrc".into(), Op::Read, Some("sensitive_path")),
        ("src/new.secret".into(), Op::Write, Some("sensitive_path")),
        ("tls/server.pem".into(), Op::Read, Some("sensitive_path")),
        ("tls/ca.pem".into(), Op::Read, None),
        ("tls/new.pem".into(), Op::Write, None),
        (".env.example".into(), Op::Read, None),
        (".venv/.env".into(), Op::List, None),
        ("src/main.rs".into(), Op::Read, None),
        // Outside the roots, a secret is a secret first: the refusal says why.
        ("/etc/shadow".into(), Op::Read, Some("sensitive_path")),
        ("/etc/gshadow".into(), Op::Read, Some("sensitive_path")),
        ("/etc/sudoers".into(), Op::Write, Some("sensitive_path")),
        (
            "/proc/self/environ".into(),
            Op::Read,
            Some("sensitive_path"),
        ),
        ("/proc/1/environ".into(), Op::Read, Some("sensitive_path")),
        ("/etc/passwd".into(), Op::Read, Some("outside_roots")),
    ];
    let mut failures = Vec::new();
    for (path, op, expected) in cases {
        let got = sb.check(path, *op);
        let code = got.as_ref().err().map(|e| e.code());
        if code != *expected {
            failures.push(format!("{path} {op:?}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The refusal names what the file is.
    let err = sb.check("innocent.txt", Op::Read).unwrap_err();
    assert!(err.to_string().contains("an SSH key"), "{err}");
    assert_eq!(
        sb.sensitive(&home.join(".ssh/id_rsa")),
        Some("an SSH key or configuration")
    );
    assert_eq!(sb.sensitive(&proj.join("src/main.rs")), None);
    assert!(sb.sensitive(Path::new("./.env")).is_some());
    assert!(sb.sensitive(&home.join("./.ssh/")).is_some());
    assert_eq!(
        sb.open_read("innocent.txt").unwrap_err().code(),
        "sensitive_path"
    );
}

#[test]
fn glob_skips_sensitive_files_and_counts_them() {
    let (_dir, home, proj, sb) = sensitive_tree();
    let outcome = sb.glob_outcome("*", None).unwrap();
    let names: Vec<_> = outcome
        .paths
        .iter()
        .map(|p| p.strip_prefix(&proj).unwrap().to_str().unwrap().to_owned())
        .collect();
    for hidden in [
        ".env",
        ".env.local",
        ".npmrc",
        "innocent.txt",
        "keys",
        "settings.txt",
        ".env.production",
    ] {
        assert!(
            !names.contains(&hidden.to_owned()),
            "{hidden} listed: {names:?}"
        );
    }
    assert!(names.contains(&".env.example".to_owned()), "{names:?}");
    assert!(names.contains(&"src".to_owned()), "{names:?}");
    assert_eq!(outcome.skipped_sensitive, 7, "{names:?}");
    let pem = sb.glob_outcome("tls/*.pem", None).unwrap();
    assert_eq!(pem.paths, vec![proj.join("tls/ca.pem")]);
    assert_eq!(pem.skipped_sensitive, 1);
    // A glob that names a secret, or starts inside a secret directory, is refused.
    assert_eq!(sb.glob(".env", None).unwrap_err().code(), "sensitive_path");
    assert_eq!(
        sb.glob("*", Some(&home.join(".ssh"))).unwrap_err().code(),
        "sensitive_path"
    );
    let from_home = sb.glob_outcome("**/*", Some(&home)).unwrap();
    assert!(from_home.paths.is_empty(), "{:?}", from_home.paths);
    assert_eq!(from_home.skipped_sensitive, 2);
}

#[test]
fn config_home_and_sensitive_keys() {
    let (_dir, home, proj, _) = sensitive_tree();
    let config: SandboxConfig = SandboxConfig {
        home: Some(home.clone()),
        sensitive: vec!["src/main.rs".into()],
        ..SandboxConfig::default()
    };
    let sb = Sandbox::from_config(&config, &proj).unwrap();
    assert_eq!(
        sb.check("src/main.rs", Op::Read).unwrap_err().code(),
        "sensitive_path"
    );
    assert_eq!(
        sb.check(home.join(".aws/credentials"), Op::Read)
            .unwrap_err()
            .code(),
        "sensitive_path"
    );
    let relative = SandboxConfig {
        home: Some("home".into()),
        ..SandboxConfig::default()
    };
    assert_eq!(
        Sandbox::from_config(&relative, &proj).unwrap_err().code(),
        "bad_root"
    );
}

fn make_git_dir(dir: &Path) {
    for d in ["objects", "refs/heads", "hooks", "info"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(dir.join("config"), "[core]\n").unwrap();
}

#[test]
fn protected_files_are_judged_by_identity() {
    let dir = tempfile::tempdir().unwrap();
    let proj = std::fs::canonicalize(dir.path()).unwrap();
    // A symlinked `.git`.
    make_git_dir(&proj.join("realgit"));
    symlink("realgit", proj.join(".git")).unwrap();
    symlink("realgit/config", proj.join("cfg_link")).unwrap();
    // A worktree whose `.git` is a `gitdir:` pointer into another git directory.
    make_git_dir(&proj.join("gitstore"));
    let wt_git = proj.join("gitstore/worktrees/wt");
    std::fs::create_dir_all(&wt_git).unwrap();
    std::fs::write(wt_git.join("HEAD"), "ref: refs/heads/wt\n").unwrap();
    std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
    std::fs::create_dir_all(proj.join("wt")).unwrap();
    std::fs::write(proj.join("wt/.git"), "gitdir: ../gitstore/worktrees/wt\n").unwrap();
    // A nested repository with a submodule.
    make_git_dir(&proj.join("nested/.git"));
    make_git_dir(&proj.join("nested/.git/modules/sub"));
    std::fs::create_dir_all(proj.join("nested/sub")).unwrap();
    std::fs::write(
        proj.join("nested/sub/.git"),
        "gitdir: ../.git/modules/sub\n",
    )
    .unwrap();
    // A bare repository used as a test fixture.
    make_git_dir(&proj.join("fixtures/repo.git"));
    // Symlinked agent and editor settings.
    std::fs::create_dir_all(proj.join("store/claude")).unwrap();
    symlink("store/claude", proj.join(".claude")).unwrap();
    symlink(".claude", proj.join("alias")).unwrap();
    std::fs::create_dir_all(proj.join("editor")).unwrap();
    symlink("editor", proj.join(".vscode")).unwrap();
    std::fs::create_dir_all(proj.join("pkg/src")).unwrap();
    symlink("../editor", proj.join("pkg/.vscode")).unwrap();
    let sb = Sandbox::builder(&proj)
        .root(&proj, Access::ReadWrite)
        .build()
        .unwrap();
    let refused = [
        ".git/config",
        ".git/hooks/pre-commit",
        "realgit/config",
        "realgit/hooks/pre-commit",
        "realgit/hooks",
        "realgit/info/attributes",
        "cfg_link",
        "wt/.git",
        "gitstore/config",
        "gitstore/worktrees/wt/commondir",
        "gitstore/worktrees/wt/config.worktree",
        "nested/.git/config",
        "nested/.git/modules/sub/config",
        "nested/.git/modules/sub/hooks/post-checkout",
        "nested/sub/.git",
        "fixtures/repo.git/config",
        "fixtures/repo.git/hooks/update",
        ".claude/settings.json",
        "alias/settings.json",
        "store/claude/settings.json",
        "store/claude/commands/x.md",
        "editor/tasks.json",
        "editor/settings.json",
        ".mcp.json",
        "pkg/.envrc",
        "pkg/.cargo/config.toml",
        ".gitconfig",
    ];
    let allowed = [
        "realgit/HEAD",
        "realgit/refs/heads/main",
        "gitstore/worktrees/wt/HEAD",
        "nested/.git/modules/sub/HEAD",
        "nested/sub/lib.rs",
        "wt/main.rs",
        "fixtures/repo.git/description",
        "editor/notes.md",
        "store/other.json",
        "Makefile",
        ".gitattributes",
        "pkg/src/lib.rs",
    ];
    let mut failures = Vec::new();
    for path in refused {
        match sb.check(path, Op::Write) {
            Err(err) if err.code() == "protected_path" => {}
            other => failures.push(format!("{path}: expected protected_path, got {other:?}")),
        }
        if sb.check(path, Op::Read).is_err() {
            failures.push(format!("{path}: a protected file must stay readable"));
        }
    }
    for path in allowed {
        if let Err(err) = sb.check(path, Op::Write) {
            failures.push(format!("{path}: expected allowed, got {err:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let err = sb
        .check("store/claude/settings.json", Op::Write)
        .unwrap_err();
    assert!(err.to_string().contains("through the link"), "{err}");
    let err = sb.check("gitstore/config", Op::Write).unwrap_err();
    assert!(err.to_string().contains("git directory"), "{err}");
}

/// How a generated repository's `.git` is made.
#[derive(Debug, Clone, Copy)]
enum GitKind {
    Dir,
    Symlink,
    Pointer,
}

fn git_kind() -> impl Strategy<Value = GitKind> {
    prop::sample::select(vec![GitKind::Dir, GitKind::Symlink, GitKind::Pointer])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Whatever a repository's `.git` is (directory, symlink, `gitdir:` pointer), however deep it
    /// is nested, and whichever name the write uses (through `.git`, the physical store, an
    /// alias symlink), its config and hooks are refused and its work tree is writable.
    #[test]
    fn git_config_and_hooks_are_protected_whatever_the_layout(
        depth in 0usize..3,
        kind in git_kind(),
        nested in any::<bool>(),
        target in prop::sample::select(vec!["config", "hooks/pre-commit", "hooks/post-merge", "info/attributes", "config.worktree"]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let proj = std::fs::canonicalize(dir.path()).unwrap();
        let work = (0..depth).fold(proj.clone(), |p, i| p.join(format!("d{i}")));
        let work = if nested {
            // The repository under test sits inside an outer repository's work tree.
            make_git_dir(&proj.join(".git"));
            work.join("inner")
        } else {
            work
        };
        std::fs::create_dir_all(&work).unwrap();
        let store = proj.join("store.d");
        let git_dir = match kind {
            GitKind::Dir => work.join(".git"),
            GitKind::Symlink | GitKind::Pointer => store.clone(),
        };
        make_git_dir(&git_dir);
        match kind {
            GitKind::Dir => {}
            GitKind::Symlink => symlink(&store, work.join(".git")).unwrap(),
            GitKind::Pointer => std::fs::write(work.join(".git"), format!("gitdir: {}\n", store.display())).unwrap(),
        }
        symlink(&git_dir, proj.join("alias")).unwrap();
        let sb = Sandbox::builder(&proj).root(&proj, Access::ReadWrite).build().unwrap();
        let mut names = vec![git_dir.join(target), proj.join("alias").join(target)];
        if !matches!(kind, GitKind::Pointer) {
            names.push(work.join(".git").join(target));
        }
        for name in names {
            let got = sb.check(&name, Op::Write);
            prop_assert_eq!(got.as_ref().err().map(|e| e.code()), Some("protected_path"), "{:?} {:?}", name, got);
        }
        prop_assert_eq!(sb.check(work.join(".git"), Op::Write).err().map(|e| e.code()), Some("protected_path"));
        prop_assert!(sb.check(work.join("src/main.rs"), Op::Write).is_ok());
        prop_assert!(sb.check(git_dir.join("HEAD"), Op::Write).is_ok());
    }
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

#[test]
fn only_regular_files_and_directories_are_allowed() {
    let t = tree();
    symlink("fifo", t.proj.join("to_fifo")).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(t.proj.join("sock")).unwrap();
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let sb = sandbox(&t, mode);
        for (path, op) in [
            ("fifo", Op::Read),
            ("fifo", Op::Write),
            ("to_fifo", Op::Read),
            ("sock", Op::Read),
            ("sock", Op::Write),
            ("fifo", Op::List),
        ] {
            let got = sb.check(path, op);
            assert_eq!(
                got.as_ref().err().map(|e| e.code()),
                Some("special_file"),
                "{path} {op:?}: {got:?}"
            );
        }
        // Never blocks: the check refuses before any open.
        assert_eq!(sb.open_read("fifo").unwrap_err().code(), "special_file");
        assert_eq!(
            sb.open_write("fifo", WriteMode::Append).unwrap_err().code(),
            "special_file"
        );
        let err = sb.check("fifo", Op::Read).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }
}

/// A FIFO swapped in between the check and the open never blocks the reader: the open is
/// non-blocking and the fd's type is checked before it is handed out.
#[test]
fn fifo_swapped_in_after_the_check_never_blocks() {
    let t = tree();
    let sb = Arc::new(sandbox(&t, ResolveMode::Auto));
    let target = t.proj.join("flip");
    std::fs::write(&target, "plain").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        let proj = t.proj.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let tmp = proj.join("flip.tmp");
                let _ = std::fs::remove_file(&tmp);
                if n.is_multiple_of(2) {
                    mkfifo(&tmp);
                } else {
                    std::fs::write(&tmp, "plain").unwrap();
                }
                std::fs::rename(&tmp, proj.join("flip")).unwrap();
                n += 1;
            }
        })
    };
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let reader = {
        let sb = sb.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let (mut opened, mut refused) = (0, 0);
            while start.elapsed() < Duration::from_millis(700) {
                match sb.open_read("flip") {
                    Ok(mut f) => {
                        let mut s = String::new();
                        f.read_to_string(&mut s).unwrap();
                        assert_eq!(s, "plain");
                        opened += 1;
                    }
                    Err(err) => {
                        assert!(
                            ["special_file", "io", "changed"].contains(&err.code()),
                            "{err:?}"
                        );
                        refused += 1;
                    }
                }
            }
            done_tx.send((opened, refused)).unwrap();
        })
    };
    let outcome = done_rx.recv_timeout(Duration::from_secs(20));
    stop.store(true, Ordering::Relaxed);
    let (opened, refused) = outcome.expect("open_read blocked on a FIFO");
    reader.join().unwrap();
    flipper.join().unwrap();
    assert!(
        opened > 0 && refused > 0,
        "opened {opened}, refused {refused}"
    );
}

/// Creates `count` nested directories named `name` below `base` (through fds: the absolute path
/// may exceed PATH_MAX) and a file `f` at the bottom; returns the relative path of `f`.
fn deep_tree(base: &Path, name: &str, count: usize) -> PathBuf {
    use rustix::fs::{Mode, OFlags};
    let mut dir = rustix::fs::open(base, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
    let mut rel = PathBuf::new();
    for _ in 0..count {
        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)).unwrap();
        dir = rustix::fs::openat(&dir, name, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
            .unwrap();
        rel.push(name);
    }
    let dir =
        rustix::fs::openat(&dir, ".", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
    let f = rustix::fs::openat(
        &dir,
        "f",
        OFlags::WRONLY | OFlags::CREATE,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    rustix::io::write(&f, b"deep").unwrap();
    rel.join("f")
}

#[test]
fn long_relative_paths_resolve_through_directory_fds() {
    let t = tree();
    let name = "d".repeat(200);
    // cwd = proj/<200>/<200>, then 19 more levels: the relative path is ~3.8 KB, the absolute
    // one ~4.3 KB, over PATH_MAX.
    let cwd_rel = deep_tree(&t.proj, &name, 2);
    let cwd = t.proj.join(cwd_rel.parent().unwrap());
    let rel = deep_tree(&cwd, &name, 19);
    assert!(rel.as_os_str().len() < 4096);
    assert!(cwd.join(&rel).as_os_str().len() > 4096);
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let sb = Sandbox::builder(&cwd)
            .root(&t.proj, Access::ReadWrite)
            .resolve_mode(mode)
            .build()
            .unwrap();
        let checked = sb.check(&rel, Op::Read).unwrap();
        assert_eq!(checked.path(), cwd.join(&rel));
        assert!(checked.exists());
        let mut s = String::new();
        sb.open_read(&rel).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "deep");
        let new = rel.with_file_name("new");
        sb.open_write(&new, WriteMode::Truncate)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        // `..` inside a long path resolves too.
        let up = rel.parent().unwrap().join("..").join(&name).join("f");
        assert_eq!(sb.check(&up, Op::Read).unwrap().path(), cwd.join(&rel));
    }
}

const MOUNT_CHILD: &str = "FS_SANDBOX_MOUNT_NS_CHILD";

fn mount_id(path: &Path) -> Option<u64> {
    rustix::fs::statx(
        rustix::fs::CWD,
        path,
        rustix::fs::AtFlags::empty(),
        rustix::fs::StatxFlags::MNT_ID,
    )
    .ok()
    .map(|stx| stx.stx_mnt_id)
}

/// Property, over generated paths through the mounted tree: an accepted path that exists is on
/// the same mount as the root that contains it or on one of the `scratch` mounts (fresh tmpfs
/// below it), and a refused read of an ordinary file on either is a false refusal.
fn mount_property(sb: &Sandbox, proj: &Path, scratch: &[PathBuf]) {
    let scratch: Vec<Option<u64>> = scratch.iter().map(|p| mount_id(p)).collect();
    let parts = prop::sample::select(vec![
        "mnt", "bind", "rootmnt", "to_mnt", "..", ".", "src", "file", "file.txt", "secret", "new",
        "link_src", "null_dev", "fifo",
    ]);
    let strategy = (
        prop::collection::vec(parts, 1..6),
        prop::sample::select(vec![Op::Read, Op::Write, Op::List]),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(300));
    runner
        .run(&strategy, |(parts, op)| {
            let path = parts.join("/");
            let real = std::fs::canonicalize(proj.join(&path)).ok();
            match sb.check(&path, op) {
                Ok(checked) => {
                    if let Some(real) = real {
                        let mount = mount_id(&real);
                        prop_assert!(
                            mount == mount_id(checked.root().path()) || scratch.contains(&mount),
                            "{} accepted on another mount",
                            path
                        );
                    }
                }
                Err(err) => {
                    if let Some(real) = real {
                        let ordinary =
                            std::fs::metadata(&real).is_ok_and(|m| m.is_file() || m.is_dir());
                        let same_mount = sb.roots().iter().any(|root| {
                            real.starts_with(root.path())
                                && (mount_id(&real) == mount_id(root.path())
                                    || scratch.contains(&mount_id(&real)))
                        });
                        prop_assert!(
                            !(op == Op::Read && ordinary && same_mount),
                            "false refusal of {}: {:?}",
                            path,
                            err
                        );
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

fn run(cmd: &str, args: &[&str]) {
    let out = std::process::Command::new(cmd).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Set to skip the mount tests on a machine where no mount namespace can be made; they then
/// print that they were skipped. Without it such a machine fails them, saying why.
const SKIP_MOUNT_TESTS: &str = "FS_SANDBOX_SKIP_MOUNT_TESTS";

/// Runs the test `name` again in a private mount namespace and reports whether this process is
/// that child (which then runs the test's body). As root the namespace is `unshare -m`; else a
/// user namespace too (`unshare -Urm`), where mounting a tmpfs is allowed. The parent fails
/// when the child fails or cannot start, unless `FS_SANDBOX_SKIP_MOUNT_TESTS` is set, in which
/// case it prints that the test was skipped.
pub(crate) fn in_mount_namespace(name: &str) -> bool {
    if std::env::var_os(MOUNT_CHILD).is_some() {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    let mut args = vec!["-m", "--propagation", "private"];
    let userns = !rustix::process::geteuid().is_root();
    if userns {
        args.extend(["-U", "-r"]);
    }
    let out = std::process::Command::new("unshare")
        .args(&args)
        .arg("--")
        .arg(&exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(MOUNT_CHILD, if userns { "userns" } else { "1" })
        .output();
    let (ok, report) = match &out {
        Ok(out) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            (
                out.status.success() && stdout.contains("1 passed"),
                format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
            )
        }
        Err(err) => (false, format!("cannot start `unshare`: {err}")),
    };
    let could_not_mount = match &out {
        Ok(out) => !String::from_utf8_lossy(&out.stdout).contains("running 1 test"),
        Err(_) => true,
    };
    if !ok && could_not_mount && std::env::var_os(SKIP_MOUNT_TESTS).is_some() {
        eprintln!(
            "SKIPPED {name}: no private mount namespace here (`unshare {}`):\n{report}",
            args.join(" ")
        );
        return false;
    }
    assert!(
        ok,
        "the mount test {name} failed or could not run in a private mount namespace (`unshare \
         {}`; set {SKIP_MOUNT_TESTS}=1 to skip it where none can be made):\n{report}",
        args.join(" ")
    );
    false
}

/// Mounts below a root, in a private mount namespace: a fresh tmpfs is crossed, a bind mount
/// is not.
#[test]
fn mounts_below_a_root_are_not_crossed() {
    if !in_mount_namespace("mounts_below_a_root_are_not_crossed") {
        return;
    }
    let t = tree();
    let p = |s: &str| t.proj.join(s);
    for d in ["mnt", "bind", "rootmnt"] {
        std::fs::create_dir(p(d)).unwrap();
    }
    let p_mnt = p("mnt").display().to_string();
    let p_bind = p("bind").display().to_string();
    let p_rootmnt = p("rootmnt").display().to_string();
    let outside = t.base.join("outside").display().to_string();
    run("mount", &["-t", "tmpfs", "tmpfs", &p_mnt]);
    run("mount", &["-t", "tmpfs", "tmpfs", &p_rootmnt]);
    // A bind mount of the same filesystem: st_dev is equal, the mount id is not.
    run("mount", &["--bind", &outside, &p_bind]);
    std::fs::write(p("mnt/file"), "tmpfs").unwrap();
    std::fs::write(p("rootmnt/file"), "root").unwrap();
    symlink("mnt/file", p("to_mnt")).unwrap();
    // A user namespace (not root) may mount a tmpfs but not make a device node.
    let null_dev = rustix::fs::mknodat(
        rustix::fs::CWD,
        p("null_dev"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(1, 3),
    );
    if let Err(err) = null_dev {
        assert!(
            std::env::var_os(MOUNT_CHILD).is_some_and(|v| v == "userns"),
            "mknod as root: {err}"
        );
        println!("SKIPPED the null_dev cases: no device node can be made here ({err})");
    }
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let sb = Sandbox::builder(&t.proj)
            .root(&t.proj, Access::ReadWrite)
            .root(p("rootmnt"), Access::ReadWrite)
            .resolve_mode(mode)
            .build()
            .unwrap();
        // `mnt` is a fresh tmpfs mounted on the project's filesystem: crossed. `bind` shows
        // `outside`: refused.
        let cases: &[(&str, Op, Option<&str>)] = &[
            ("mnt/file", Op::Read, None),
            ("mnt/file", Op::Write, None),
            ("mnt/new", Op::Write, None),
            ("mnt/new/deeper", Op::Write, None),
            ("mnt", Op::List, None),
            ("to_mnt", Op::Read, None),
            ("bind/secret", Op::Read, Some("other_filesystem")),
            ("bind/new", Op::Write, Some("other_filesystem")),
            ("bind", Op::List, Some("other_filesystem")),
            ("src/../mnt/file", Op::Read, None),
            ("rootmnt/file", Op::Read, None),
            ("rootmnt/new", Op::Write, None),
            ("file.txt", Op::Read, None),
            ("null_dev", Op::Read, Some("special_file")),
            ("null_dev", Op::Write, Some("special_file")),
        ];
        let mut failures = Vec::new();
        for (path, op, expected) in cases {
            if *path == "null_dev" && null_dev.is_err() {
                continue;
            }
            let got = sb.check(path, *op);
            if got.as_ref().err().map(|e| e.code()) != *expected {
                failures.push(format!(
                    "{mode:?} {path} {op:?}: expected {expected:?}, got {got:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        let err = sb.open_read("bind/secret").unwrap_err();
        assert_eq!(err.code(), "other_filesystem");
        assert!(err.to_string().contains("bind mount"), "{err}");
        let mut s = String::new();
        sb.open_read("mnt/file")
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "tmpfs");
        mount_property(&sb, &t.proj, &[p("mnt")]);
        let mut s = String::new();
        sb.open_read("rootmnt/file")
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "root");
    }
}

#[test]
fn hooks_moved_by_core_hooks_path_are_protected() {
    let dir = tempfile::tempdir().unwrap();
    let proj = std::fs::canonicalize(dir.path()).unwrap();
    make_git_dir(&proj.join(".git"));
    std::fs::write(
        proj.join(".git/config"),
        "[core]\n\tbare = false\n\thooksPath = .githooks\n",
    )
    .unwrap();
    std::fs::create_dir_all(proj.join(".githooks")).unwrap();
    // A worktree of the same repository, through a `gitdir:` pointer and `commondir`.
    let wt_git = proj.join(".git/worktrees/w");
    std::fs::create_dir_all(&wt_git).unwrap();
    std::fs::write(wt_git.join("HEAD"), "ref: refs/heads/w\n").unwrap();
    std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
    std::fs::create_dir_all(proj.join("w/.githooks")).unwrap();
    std::fs::write(
        proj.join("w/.git"),
        format!("gitdir: {}\n", wt_git.display()),
    )
    .unwrap();
    let sb = Sandbox::builder(&proj)
        .root(&proj, Access::ReadWrite)
        .build()
        .unwrap();
    for path in [
        ".githooks/pre-commit",
        ".githooks",
        "w/.githooks/post-merge",
    ] {
        let got = sb.check(path, Op::Write);
        assert_eq!(
            got.as_ref().err().map(|e| e.code()),
            Some("protected_path"),
            "{path}: {got:?}"
        );
    }
    for path in ["githooks.md", "src/.githooks.rs", "w/src/lib.rs"] {
        assert!(sb.check(path, Op::Write).is_ok(), "{path}");
    }
}

#[test]
fn dev_null_is_readable_and_writable_but_not_a_root() {
    let t = tree();
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let sb = sandbox(&t, mode);
        assert_eq!(
            sb.check("/dev/null", Op::Read).unwrap().path(),
            Path::new("/dev/null")
        );
        assert!(sb.check("/dev/null", Op::Write).is_ok());
        sb.open_write("/dev/null", WriteMode::Append)
            .unwrap()
            .write_all(b"gone")
            .unwrap();
        let mut s = String::new();
        sb.open_read("/dev/null")
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert!(s.is_empty());
        assert_eq!(
            sb.check("/dev/null", Op::List).unwrap_err().code(),
            "outside_roots"
        );
        assert_eq!(
            sb.check("/dev/zero", Op::Read).unwrap_err().code(),
            "outside_roots"
        );
        assert_eq!(
            sb.check("/dev", Op::List).unwrap_err().code(),
            "outside_roots"
        );
        assert!(sb.roots().iter().all(|r| r.path() != Path::new("/dev")));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// However many symlinks (relative or absolute, through directories or to the file) lead to
    /// a secret, and whatever they are called, every op on the chain's head is refused as
    /// sensitive; the same chain to an ordinary file is allowed for reading.
    #[test]
    fn symlink_chains_to_secrets_are_refused(
        hops in prop::collection::vec((any::<bool>(), any::<bool>()), 0..4),
        secret in prop::sample::select(vec!["home/.ssh/id_ed25519", "home/.aws/credentials", "proj/.env", "proj/deploy/server.key", "home/.config/gcloud/adc.json"]),
        op in prop::sample::select(vec![Op::Read, Op::Write, Op::List]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let home = base.join("home");
        let proj = base.join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let target = base.join(secret);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, "s").unwrap();
        let plain = proj.join("plain.txt");
        std::fs::write(&plain, "p").unwrap();
        let sb = Sandbox::builder(&proj)
            .root(&proj, Access::ReadWrite)
            .root(&home, Access::ReadWrite)
            .home(&home)
            .build()
            .unwrap();
        // Build the chain backwards: link_n -> ... -> link_0 -> target, each link named
        // innocently, each either absolute or relative, through a directory link or not.
        let chain = |end: &Path, tag: &str| -> PathBuf {
            let mut current = end.to_owned();
            for (i, (absolute, via_dir)) in hops.iter().enumerate() {
                let link = proj.join(format!("{tag}_link{i}"));
                if *via_dir {
                    let dir_link = proj.join(format!("{tag}_dir{i}"));
                    symlink(current.parent().unwrap(), &dir_link).unwrap();
                    current = dir_link.join(current.file_name().unwrap());
                }
                let to: PathBuf = if *absolute {
                    current.clone()
                } else {
                    pathdiff(&current, &proj)
                };
                symlink(&to, &link).unwrap();
                current = link;
            }
            current
        };
        let head = chain(&target, "s");
        let got = sb.check(&head, op);
        prop_assert_eq!(got.as_ref().err().map(|e| e.code()), Some("sensitive_path"), "{:?} -> {:?}", head, got);
        let plain_head = chain(&plain, "p");
        prop_assert!(sb.check(&plain_head, Op::Read).is_ok(), "{:?}", plain_head);
    }
}

/// `to` relative to `from_dir` (both absolute, canonical).
fn pathdiff(to: &Path, from_dir: &Path) -> PathBuf {
    let to_parts: Vec<_> = to.components().collect();
    let from_parts: Vec<_> = from_dir.components().collect();
    let common = to_parts
        .iter()
        .zip(&from_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut rel = PathBuf::new();
    for _ in common..from_parts.len() {
        rel.push("..");
    }
    for part in &to_parts[common..] {
        rel.push(part);
    }
    rel
}

/// A directory too large to list (over the scan cap) is judged name by name, with the same
/// answers.
#[test]
fn protected_identity_in_a_very_large_directory() {
    let dir = tempfile::tempdir().unwrap();
    let proj = std::fs::canonicalize(dir.path()).unwrap();
    for i in 0..4100 {
        std::fs::write(proj.join(format!("f{i}")), "").unwrap();
    }
    std::fs::create_dir_all(proj.join("store")).unwrap();
    symlink("store", proj.join(".claude")).unwrap();
    make_git_dir(&proj.join("bare.git"));
    let sb = Sandbox::builder(&proj)
        .root(&proj, Access::ReadWrite)
        .build()
        .unwrap();
    assert_eq!(
        sb.check("store/settings.json", Op::Write)
            .unwrap_err()
            .code(),
        "protected_path"
    );
    assert_eq!(
        sb.check("bare.git/config", Op::Write).unwrap_err().code(),
        "protected_path"
    );
    assert!(sb.check("f1", Op::Write).is_ok());
}

// The op names appear in refusal messages and on the command line (`agent-guard explain`):
// part of the interface, so pinned.
#[test]
fn op_names_are_stable() {
    assert_eq!(Op::Read.as_str(), "read");
    assert_eq!(Op::Write.as_str(), "write");
    assert_eq!(Op::List.as_str(), "list");
    assert_eq!(Op::ExecuteDir.as_str(), "execute-dir");
}

// The resolved path is reported and audited as text, so its spelling matters, not only its
// components (`Path` equality ignores `/./` and `//`, which hid the normalisation from the
// mutation run). Every form must come back as the one clean absolute path.
#[test]
fn resolved_paths_are_spelled_cleanly() {
    use std::os::unix::ffi::OsStrExt as _;
    let t = tree();
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let sb = sandbox(&t, mode);
        let want = t.proj.join("src/main.rs");
        let proj = t.proj.to_str().unwrap();
        for form in [
            "src/main.rs".to_owned(),
            "./src/main.rs".to_owned(),
            "src//main.rs".to_owned(),
            "src/./main.rs".to_owned(),
            "src/deep/../main.rs".to_owned(),
            format!("{proj}/src/./main.rs"),
            format!("{proj}//src/main.rs"),
        ] {
            let got = sb.check(&form, Op::Read).unwrap();
            assert_eq!(
                got.path().as_os_str().as_bytes(),
                want.as_os_str().as_bytes(),
                "{form} ({mode:?})"
            );
        }
        for (form, want) in [
            ("src/", t.proj.join("src")),
            ("src/.", t.proj.join("src")),
            (".", t.proj.clone()),
        ] {
            let got = sb.check(form, Op::List).unwrap();
            assert_eq!(
                got.path().as_os_str().as_bytes(),
                want.as_os_str().as_bytes(),
                "{form} ({mode:?})"
            );
        }
    }
}

// A missing name under a regular file is not a path that can be created. The `openat2` fast
// path and the component walk must give the same answer for it. (The kernel answers ENOTDIR
// here, not ENOENT, so the fast path's parent re-open is never reached; see docs/mutants.md.)
#[test]
fn a_name_under_a_regular_file_is_judged_alike_by_both_resolvers() {
    let t = tree();
    let auto = sandbox(&t, ResolveMode::Auto);
    let walk = sandbox(&t, ResolveMode::Walk);
    for path in ["file.txt/new", "src/main.rs/x"] {
        for op in [Op::Write, Op::Read] {
            let a = auto.check(path, op).map(|p| p.path().to_owned());
            let w = walk.check(path, op).map(|p| p.path().to_owned());
            assert_eq!(
                a.as_ref().map_err(|e| e.code()),
                w.as_ref().map_err(|e| e.code()),
                "{path} {op:?}"
            );
        }
    }
}

// The symlink budget is exactly 40 hops, as the kernel's: a chain of 40 resolves, 41 is a
// loop. Both resolvers, so the component walk's own count is what is tested.
#[test]
fn forty_symlink_hops_resolve_and_forty_one_do_not() {
    let t = tree();
    let chain = |len: usize, name: &str| {
        let dir = t.proj.join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("target"), "end").unwrap();
        for i in 0..len {
            let next = if i + 1 == len {
                "target".to_owned()
            } else {
                format!("l{}", i + 1)
            };
            symlink(next, dir.join(format!("l{i}"))).unwrap();
        }
        format!("{name}/l0")
    };
    let forty = chain(40, "c40");
    let forty_one = chain(41, "c41");
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let sb = sandbox(&t, mode);
        let ok = sb.check(&forty, Op::Read).unwrap();
        assert_eq!(ok.path(), t.proj.join("c40/target"), "{mode:?}");
        assert_eq!(
            sb.check(&forty_one, Op::Read).err().map(|e| e.code()),
            Some("symlink_loop"),
            "{mode:?}"
        );
    }
}

// `/proc/self` is a plain symlink, followed like any other; only `/proc/<x>/<y>` links are
// magic. With `/proc` as a read-only root, `/proc/self/status` is readable.
#[test]
fn proc_self_is_a_plain_symlink() {
    let sb = Sandbox::builder("/proc")
        .root("/proc", Access::ReadOnly)
        .build()
        .unwrap();
    let got = sb.check("/proc/self/status", Op::Read);
    assert!(got.is_ok(), "{:?}", got.err());
}

/// `names` reports where a path physically leads first, then the names met on the way, and
/// judges nothing: a path outside the roots still has names.
#[test]
fn names_lead_to_the_physical_file_first() {
    let t = tree();
    for mode in [ResolveMode::Auto, ResolveMode::Walk] {
        let s = sandbox(&t, mode);
        let names = s.names(t.proj.join("link_src/main.rs")).unwrap();
        assert_eq!(names.first(), Some(&t.proj.join("src/main.rs")), "{mode:?}");
        let names = s.names("to_gitconfig").unwrap();
        assert_eq!(names.first(), Some(&t.proj.join(".git/config")), "{mode:?}");
        let names = s.names(t.proj.join("link_out/new/file")).unwrap();
        assert_eq!(
            names.first(),
            Some(&t.base.join("outside/new/file")),
            "{mode:?}"
        );
        assert!(
            names.contains(&t.proj.join("link_out/new/file")),
            "{names:?}"
        );
        // No symlink: one name, the clean absolute path.
        assert_eq!(
            s.names("src/./deep/../main.rs").unwrap(),
            vec![t.proj.join("src/main.rs")]
        );
        assert_eq!(s.names("loop_a").unwrap_err().code(), "symlink_loop");
    }
}

/// `/` and the system directories are never read-write roots (a hook session started in `/`
/// would make `/etc/passwd` "inside the project"); read-only they are fine, and a project
/// below one is a root like any other.
#[test]
fn system_directories_are_never_read_write_roots() {
    for dir in ["/", "/etc", "/usr", "/var", "/bin", "/dev", "/proc", "/sys"] {
        if !Path::new(dir).is_dir() {
            continue;
        }
        let err = match Sandbox::builder("/").root(dir, Access::ReadWrite).build() {
            Ok(s) => panic!("{dir} became a read-write root: {:?}", s.roots()),
            Err(err) => err,
        };
        assert_eq!(err.code(), "bad_root", "{dir}");
        assert!(err.to_string().contains("read-only"), "{err}");
        assert!(
            Sandbox::builder("/")
                .root(dir, Access::ReadOnly)
                .build()
                .is_ok(),
            "{dir} read-only"
        );
    }
    // The default root is the cwd: a cwd of `/` is refused the same way.
    assert_eq!(
        Sandbox::builder("/").build().unwrap_err().code(),
        "bad_root"
    );
    let t = tree();
    assert!(Sandbox::builder(&t.proj).build().is_ok());
}
