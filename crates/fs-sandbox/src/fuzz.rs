//! The fuzz target's body, public so `cargo test` can run it on the committed corpus.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::sandbox::{Access, Op, Sandbox};

struct Fixture {
    sandbox: Sandbox,
}

/// A small tree in the temp dir (`fs-sandbox-fuzz-fixture`): `root/{a/b, file, fifo, in -> a,
/// out -> <outside>, loop -> loop, abs -> <root>/a}` and `outside/secret`. Built once per
/// process.
fn fixture() -> Option<&'static Fixture> {
    static FIXTURE: OnceLock<Option<Fixture>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            // One fixed directory, built idempotently, so repeated runs do not litter the temp dir.
            let base = std::env::temp_dir().join("fs-sandbox-fuzz-fixture");
            let root = base.join("root");
            let outside = base.join("outside");
            std::fs::create_dir_all(root.join("a/b")).ok()?;
            std::fs::create_dir_all(&outside).ok()?;
            std::fs::write(root.join("file"), b"x").ok()?;
            std::fs::write(outside.join("secret"), b"s").ok()?;
            let fifo = root.join("fifo");
            if std::fs::symlink_metadata(&fifo).is_err() {
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &fifo,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    0,
                )
                .ok()?;
            }
            let links: [(&str, PathBuf); 4] = [
                ("in", PathBuf::from("a")),
                ("out", outside.clone()),
                ("loop", PathBuf::from("loop")),
                ("abs", root.join("a")),
            ];
            for (name, target) in links {
                let link = root.join(name);
                match std::os::unix::fs::symlink(target, &link) {
                    Ok(()) => {}
                    Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(_) => return None,
                }
            }
            let sandbox = Sandbox::builder(&root)
                .root(&root, Access::ReadWrite)
                .build()
                .ok()?;
            Some(Fixture { sandbox })
        })
        .as_ref()
}

/// Checks `data` as a path for every op and asserts the sandbox's invariants: no panic, and an
/// accepted path is inside a root and, when it exists, canonicalises to itself and is a regular
/// file or a directory.
#[doc(hidden)]
pub fn check_path(data: &[u8]) {
    let fixture = fixture();
    assert!(
        fixture.is_some(),
        "the fuzz fixture tree could not be built in the temp dir"
    );
    let Some(fixture) = fixture else { return };
    let path = Path::new(OsStr::from_bytes(data));
    for op in [Op::Read, Op::Write, Op::List, Op::ExecuteDir] {
        let Ok(checked) = fixture.sandbox.check(path, op) else {
            continue;
        };
        let root = checked.root().path();
        assert!(
            checked.path().starts_with(root),
            "accepted path escaped its root"
        );
        if let Ok(real) = std::fs::canonicalize(checked.path()) {
            assert!(
                real.starts_with(root),
                "accepted path leads outside its root"
            );
            assert_eq!(real, checked.path(), "resolution disagrees with the kernel");
            let kind = std::fs::metadata(&real).map(|m| m.is_file() || m.is_dir());
            assert!(kind.unwrap_or(true), "accepted a special file");
        }
    }
}
