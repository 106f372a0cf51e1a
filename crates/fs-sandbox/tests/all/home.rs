//! Issue 26 item 3: a home directory as the writable root (the agent started in `~`) and as a
//! read-only root (dotfiles and toolchains readable).

use std::path::{Path, PathBuf};

use fs_sandbox::{Access, Op, Sandbox, SandboxError};

fn home_tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(dir.path()).unwrap().join("u");
    for d in [
        ".config/systemd/user",
        ".local/bin",
        "tools/bin",
        "proj/src",
    ] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    (dir, home)
}

fn protected(sb: &Sandbox, path: &Path) -> bool {
    matches!(
        sb.check(path, Op::Write),
        Err(SandboxError::Protected { .. })
    )
}

#[test]
fn a_home_as_the_writable_root_keeps_its_startup_places_and_path() {
    let (_dir, home) = home_tree();
    let sb = Sandbox::builder(&home)
        .root(&home, Access::ReadWrite)
        .home(&home)
        .env([(
            "PATH",
            format!("{}:/usr/bin:relative/bin", home.join("tools/bin").display()),
        )])
        .build()
        .unwrap();
    for file in [
        ".config/systemd/user/agent.service",
        ".config/systemd/user/default.target.wants/x.service",
        ".config/autostart/x.desktop",
        ".local/bin/git",
        ".bashrc.d/99.sh",
        ".bash_aliases",
        ".vimrc",
        ".config/nvim/init.lua",
        ".gdbinit",
        "tools/bin/ls",
        ".bashrc",
    ] {
        assert!(protected(&sb, &home.join(file)), "{file}");
    }
    for file in ["proj/src/main.rs", "proj/notes.txt", "tools/readme.md"] {
        sb.check(home.join(file), Op::Write)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn a_project_below_a_read_only_home_is_judged_as_a_project() {
    let (_dir, home) = home_tree();
    let proj = home.join("proj");
    let sb = Sandbox::builder(&proj)
        .root(&proj, Access::ReadWrite)
        .root(&home, Access::ReadOnly)
        .home(&home)
        .env([("PATH", "/usr/bin")])
        .build()
        .unwrap();
    // A project file named like a home startup file is ordinary.
    sb.check(proj.join(".bash_aliases"), Op::Write).unwrap();
    // The home is read-only: every write there is refused.
    assert!(matches!(
        sb.check(home.join(".local/bin/x"), Op::Write),
        Err(SandboxError::ReadOnlyRoot { .. })
    ));
    // Dotfiles are readable unless they hold a secret.
    std::fs::write(home.join(".vimrc"), "set nu\n").unwrap();
    sb.check(home.join(".vimrc"), Op::Read).unwrap();
    std::fs::write(home.join(".config/deploy"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    assert!(matches!(
        sb.check(home.join(".config/deploy"), Op::Read),
        Err(SandboxError::Sensitive { .. })
    ));
}

#[test]
fn files_configuration_makes_code_are_protected() {
    let (_dir, home) = home_tree();
    let proj = home.join("proj");
    // The global git config moves every repository's hooks and includes a file.
    let global = home.join("gitconfig-global");
    std::fs::write(
        &global,
        format!(
            "[core]\n\thooksPath = {}\n[include]\n\tpath = proj/shared.inc\n",
            home.join("proj/githooks").display()
        ),
    )
    .unwrap();
    // The repository's own config includes a file in the work tree and names an fsmonitor.
    let git = proj.join(".git");
    for d in ["objects", "refs"] {
        std::fs::create_dir_all(git.join(d)).unwrap();
    }
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        git.join("config"),
        "[include]\n\tpath = ../conf/git.inc\n[core]\n\tfsmonitor = tools/monitor\n",
    )
    .unwrap();
    // direnv: the project's `.envrc` loads another file.
    std::fs::write(
        proj.join(".envrc"),
        "source_env_if_exists env/dev.sh\ndotenv\n",
    )
    .unwrap();
    // A dotfiles repository: `~/.bashrc` is a symlink to its copy.
    std::fs::create_dir_all(home.join("dotfiles")).unwrap();
    std::fs::write(home.join("dotfiles/bashrc"), "").unwrap();
    std::os::unix::fs::symlink(home.join("dotfiles/bashrc"), home.join(".bashrc")).unwrap();
    let sb = Sandbox::builder(&home)
        .root(&home, Access::ReadWrite)
        .home(&home)
        .env([
            ("PATH", "/usr/bin".to_owned()),
            ("GIT_CONFIG_GLOBAL", global.display().to_string()),
        ])
        .build()
        .unwrap();
    for file in [
        "proj/githooks/pre-commit",
        "proj/shared.inc",
        "proj/conf/git.inc",
        "proj/tools/monitor",
        "proj/env/dev.sh",
        "dotfiles/bashrc",
    ] {
        assert!(protected(&sb, &home.join(file)), "{file}");
    }
    for file in [
        "proj/conf/other.inc",
        "proj/tools/readme",
        "dotfiles/README.md",
    ] {
        sb.check(home.join(file), Op::Write)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}
