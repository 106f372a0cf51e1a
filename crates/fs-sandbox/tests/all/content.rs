//! Issue 26 item 1 (secrets by content) and issue 29 item 1 (no judgement blocks on a FIFO).

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use fs_sandbox::{Access, Op, Sandbox, SandboxError};

use super::mkfifo;

/// A home given as a read-only root and a project as the writable root.
fn layout() -> (tempfile::TempDir, PathBuf, PathBuf, Sandbox) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let home = base.join("home");
    let proj = base.join("proj");
    for d in ["home/deploy", "proj/src", "proj/keys"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    for (f, text) in [
        (
            "home/deploy/prod-access",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n",
        ),
        ("home/deploy/prod-access.pub", "ssh-ed25519 AAAAC3Nza u@h\n"),
        ("home/notes.txt", "nothing here\n"),
        ("proj/keys/ci", "-----BEGIN RSA PRIVATE KEY-----\nMII\n"),
        ("proj/keys/ci.pub", "ssh-rsa AAAAB3Nza u@h\n"),
        // A test fixture in source: the project's own code is read without a sniff.
        (
            "proj/src/fixture.rs",
            "const K: &str = \"-----BEGIN PRIVATE KEY-----\";\n",
        ),
        ("proj/src/main.rs", "fn main() {}\n"),
    ] {
        std::fs::write(base.join(f), text).unwrap();
    }
    let sb = Sandbox::builder(&proj)
        .root(&proj, Access::ReadWrite)
        .root(&home, Access::ReadOnly)
        .home(&home)
        .build()
        .unwrap();
    (dir, home, proj, sb)
}

fn sensitive_what(result: Result<fs_sandbox::SandboxPath, SandboxError>) -> Option<String> {
    match result {
        Err(SandboxError::Sensitive { what, .. }) => Some(what),
        _ => None,
    }
}

#[test]
fn a_private_key_under_an_ordinary_name_is_refused_by_content() {
    let (_dir, home, proj, sb) = layout();
    let what = sensitive_what(sb.check(home.join("deploy/prod-access"), Op::Read)).unwrap();
    assert!(what.contains("private-key"), "{what}");
    assert!(sensitive_what(sb.check(proj.join("keys/ci"), Op::Read)).is_some());
    // Outside every root: a secret is a deny, not a question to a person.
    let outside = tempfile::tempdir().unwrap();
    let stray = outside.path().join("backup");
    std::fs::write(&stray, "-----BEGIN EC PRIVATE KEY-----\n").unwrap();
    assert!(sensitive_what(sb.check(&stray, Op::Read)).is_some());
    std::fs::write(&stray, "plain\n").unwrap();
    assert!(matches!(
        sb.check(&stray, Op::Read),
        Err(SandboxError::OutsideRoots { .. })
    ));
}

#[test]
fn public_halves_and_plain_files_stay_readable() {
    let (_dir, home, proj, sb) = layout();
    for path in [
        home.join("deploy/prod-access.pub"),
        home.join("notes.txt"),
        proj.join("keys/ci.pub"),
        proj.join("src/main.rs"),
        // Plainly source inside the project: not sniffed, read as before.
        proj.join("src/fixture.rs"),
    ] {
        sb.check(&path, Op::Read)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

#[test]
fn source_outside_the_project_is_sniffed() {
    let (_dir, home, _proj, sb) = layout();
    let leaked = home.join("deploy/key.rs");
    std::fs::write(&leaked, "-----BEGIN PRIVATE KEY-----\nMII\n").unwrap();
    assert!(sensitive_what(sb.check(&leaked, Op::Read)).is_some());
}

#[derive(Debug)]
struct Tokens;

impl fs_sandbox::ContentSniffer for Tokens {
    fn secret_in(&self, head: &[u8], _: fs_sandbox::SniffScope) -> Option<String> {
        head.windows(4)
            .any(|w| w == b"ghp_")
            .then(|| "github-token".to_owned())
    }
}

#[test]
fn a_wired_sniffer_names_its_detector() {
    let (_dir, home, proj, _) = layout();
    let sb = Sandbox::builder(&proj)
        .root(&proj, Access::ReadWrite)
        .root(&home, Access::ReadOnly)
        .home(&home)
        .content_sniffer(std::sync::Arc::new(Tokens))
        .build()
        .unwrap();
    let hosts = proj.join("glab-config.yml");
    std::fs::write(&hosts, "token: ghp_abc\n").unwrap();
    let what = sensitive_what(sb.check(&hosts, Op::Read)).unwrap();
    assert!(what.contains("github-token"), "{what}");
    // Writes are not sniffed: overwriting is judged as a write.
    sb.check(&hosts, Op::Write).unwrap();
}

/// Runs `f` on a thread; a judgement that blocks fails the test instead of hanging it.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the judgement blocked (a FIFO was opened for reading)")
}

#[test]
fn a_fifo_named_like_a_key_never_blocks_the_check() {
    let (_dir, home, proj, sb) = layout();
    let sb = std::sync::Arc::new(sb);
    for fifo in [
        proj.join("x.pem"),
        home.join("y.pem"),
        proj.join("data.cfg"),
    ] {
        mkfifo(&fifo);
        let (judge, path) = (sb.clone(), fifo.clone());
        let result = within(move || judge.check(&path, Op::Read).map(|p| p.path().to_owned()));
        assert!(result.is_err(), "{}: {result:?}", fifo.display());
        let (judge, path) = (sb.clone(), fifo.clone());
        let _ = within(move || judge.sensitive(&path));
    }
}

#[test]
fn a_fifo_named_dot_git_never_blocks_the_protected_judgement() {
    let (_dir, _home, proj, sb) = layout();
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    mkfifo(&proj.join("sub/.git"));
    let sb = std::sync::Arc::new(sb);
    let path = proj.join("sub/file.txt");
    let result = within(move || sb.check(&path, Op::Write).map(|p| p.path().to_owned()));
    assert_eq!(result.unwrap(), proj.join("sub/file.txt"));
}
