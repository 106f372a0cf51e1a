//! Issue 26 item 2: stores located as their programs locate them.

use std::path::{Path, PathBuf};

use fs_sandbox::{Access, Moves, Op, RELOCATIONS, Sandbox, SandboxError};

fn base() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let home = base.join("home");
    let proj = base.join("proj");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&proj).unwrap();
    (dir, home, proj)
}

fn sandbox(home: &Path, proj: &Path, env: Vec<(String, String)>) -> Sandbox {
    Sandbox::builder(proj)
        .root(proj, Access::ReadWrite)
        .root(home, Access::ReadOnly)
        .home(home)
        .env(env)
        .build()
        .unwrap()
}

fn refused(sb: &Sandbox, path: &Path) -> Option<String> {
    match sb.check(path, Op::Read) {
        Err(SandboxError::Sensitive { what, .. }) => Some(what),
        _ => None,
    }
}

#[test]
fn every_variable_moves_its_store() {
    let (_dir, home, proj) = base();
    for entry in RELOCATIONS {
        let moved = home.join(format!("moved-{}", entry.var.to_lowercase()));
        // Harmless content: only the variable makes it a store.
        let target = match entry.moves {
            Moves::File | Moves::FileList => {
                std::fs::write(&moved, "nothing to see\n").unwrap();
                moved.clone()
            }
            Moves::Dir(names) => {
                let name = names.first().unwrap();
                let file = if *name == "**" {
                    moved.join("any/file")
                } else {
                    moved.join(name)
                };
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, "nothing to see\n").unwrap();
                file
            }
        };
        let without = sandbox(&home, &proj, vec![]);
        assert_eq!(refused(&without, &target), None, "{}", entry.var);
        let with = sandbox(
            &home,
            &proj,
            vec![(entry.var.to_owned(), moved.display().to_string())],
        );
        assert_eq!(
            refused(&with, &target).as_deref(),
            Some(entry.what),
            "{}",
            entry.var
        );
    }
}

#[test]
fn xdg_config_home_moves_every_config_store() {
    let (_dir, home, proj) = base();
    let xdg = home.join("cfg");
    for file in ["gh/hosts.yml", "containers/auth.json", "gcloud/creds.db"] {
        std::fs::create_dir_all(xdg.join(file).parent().unwrap()).unwrap();
        std::fs::write(xdg.join(file), "x\n").unwrap();
    }
    let sb = sandbox(
        &home,
        &proj,
        vec![("XDG_CONFIG_HOME".to_owned(), xdg.display().to_string())],
    );
    for file in ["gh/hosts.yml", "containers/auth.json", "gcloud/creds.db"] {
        assert!(refused(&sb, &xdg.join(file)).is_some(), "{file}");
    }
    // A tree reader of the moved directory reaches them.
    assert!(sb.sensitive_below(&xdg, false).is_some());
}

#[test]
fn a_hard_link_to_a_store_is_the_store() {
    let (_dir, home, proj) = base();
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), "[default]\n").unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "k\n").unwrap();
    std::fs::hard_link(home.join(".aws/credentials"), proj.join("notes.txt")).unwrap();
    std::fs::hard_link(home.join(".ssh/id_ed25519"), proj.join("main.rs")).unwrap();
    std::fs::write(proj.join("plain.txt"), "x\n").unwrap();
    std::fs::hard_link(proj.join("plain.txt"), proj.join("plain2.txt")).unwrap();
    let sb = sandbox(&home, &proj, vec![]);
    let what = refused(&sb, &proj.join("notes.txt")).unwrap();
    assert!(what.contains("AWS") && what.contains("hard link"), "{what}");
    // Even under a source name, which is otherwise never sniffed.
    assert!(refused(&sb, &proj.join("main.rs")).is_some());
    // A hard link between ordinary files is read as before.
    sb.check(proj.join("plain2.txt"), Op::Read).unwrap();
}

#[test]
fn a_git_store_helpers_file_is_a_store() {
    let (_dir, home, proj) = base();
    std::fs::write(
        home.join(".gitconfig"),
        "[credential]\n\thelper = store --file=~/.local/gitpw\n",
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".local")).unwrap();
    std::fs::write(home.join(".local/gitpw"), "x\n").unwrap();
    let sb = sandbox(&home, &proj, vec![]);
    assert!(refused(&sb, &home.join(".local/gitpw")).is_some());
}

#[test]
fn stores_of_unlisted_tools_and_sandboxed_browsers_are_stores() {
    let (_dir, home, proj) = base();
    let sb = sandbox(&home, &proj, vec![]);
    for file in [
        ".config/containers/auth.json",
        ".config/glab-cli/config.yml",
        "snap/firefox/common/.mozilla/firefox/p.default/logins.json",
        ".var/app/com.google.Chrome/config/google-chrome/Default/Cookies",
    ] {
        assert!(sb.sensitive(&home.join(file)).is_some(), "{file}");
    }
}
