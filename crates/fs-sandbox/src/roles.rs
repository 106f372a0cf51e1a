//! Files that are code because configuration names them.
//!
//! A name list cannot know that `~/.gitconfig` says `core.hooksPath = ~/hooks`, that the
//! repository's config includes `../shared.inc`, or that `~/.bashrc` is a symlink to
//! `~/dotfiles/bashrc`: each makes an ordinary-looking file one that runs (or configures what
//! runs) later. This module follows that configuration:
//! - git: `core.hooksPath` and `core.fsmonitor` (a program) and `include.path` /
//!   `includeIf.<cond>.path` (more config) in the system, global and XDG config files, and in
//!   a repository's own config;
//! - direnv: what an `.envrc` loads (`source_env`, `source_env_if_exists`, `dotenv`,
//!   `dotenv_if_exists`, `source_url` aside);
//! - dotfiles: a protected startup file in a home directory that is a symlink protects its
//!   target (the copy in a dotfiles repository).

use std::path::{Path, PathBuf};

use crate::gitconfig;
use crate::head::read_small_text;

/// How much of a config file is read.
const CONFIG_BYTES: usize = 1024 * 1024;

/// One file or tree named by configuration, and why it is code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    pub(crate) path: PathBuf,
    pub(crate) tree: bool,
    pub(crate) why: String,
}

impl Named {
    pub(crate) fn covers(&self, physical: &Path) -> bool {
        if self.tree {
            physical.starts_with(&self.path)
        } else {
            physical == self.path
        }
    }
}

/// The git config keys that name code, and whether the value is a directory.
const GIT_CODE_KEYS: &[(&str, &str, bool, &str)] = &[
    (
        "core",
        "hookspath",
        true,
        "the hooks directory core.hooksPath names",
    ),
    (
        "core",
        "fsmonitor",
        false,
        "the program core.fsmonitor names",
    ),
    (
        "include",
        "path",
        false,
        "a config file include.path pulls in",
    ),
];

/// What one git config file names, with relative values resolved as git resolves them:
/// `include.path` against the file's directory, `core.*` against `top` (the work tree; `None`
/// for the global files, where a relative hooks path is resolved per repository by the caller).
pub(crate) fn git_named(config: &Path, top: Option<&Path>, home: Option<&Path>) -> Vec<Named> {
    let Some(text) = read_small_text(config, CONFIG_BYTES) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (section, key, tree, why) in GIT_CODE_KEYS {
        let mut values = gitconfig::values(&text, section, key);
        if *section == "include" {
            values.extend(gitconfig::values(&text, "includeif", key));
        }
        for value in values {
            // `core.fsmonitor = true` (the built-in daemon) names no file.
            if *key == "fsmonitor" && !value.contains('/') {
                continue;
            }
            let expanded = match value.strip_prefix("~/") {
                Some(rest) => match home {
                    Some(home) => home.join(rest),
                    None => continue,
                },
                None => PathBuf::from(&value),
            };
            let base = if *section == "include" {
                config.parent()
            } else {
                top
            };
            let path = if expanded.is_absolute() {
                expanded
            } else {
                match base {
                    Some(base) => base.join(expanded),
                    None => continue,
                }
            };
            let path = physical(&path);
            out.push(Named {
                path,
                tree: *tree,
                why: format!("{why} (`{value}` in `{}`)", config.display()),
            });
        }
    }
    out
}

/// The files an `.envrc` loads (`source_env x`, `dotenv_if_exists .env.dev`), resolved against
/// its directory; a directory argument means its `.envrc`.
pub(crate) fn envrc_named(envrc: &Path) -> Vec<Named> {
    let Some(text) = read_small_text(envrc, CONFIG_BYTES) else {
        return Vec::new();
    };
    let Some(dir) = envrc.parent() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(command) = words.next() else {
            continue;
        };
        if !DIRENV_LOADERS.contains(&command) {
            continue;
        }
        let arg = words
            .next()
            .map(|a| a.trim_matches(|c| c == '"' || c == '\''))
            .unwrap_or(if command.starts_with("dotenv") {
                ".env"
            } else {
                ""
            });
        if arg.is_empty() || arg.contains('$') {
            continue;
        }
        let mut path = dir.join(arg);
        if command.starts_with("source_env") && path.is_dir() {
            path = path.join(".envrc");
        }
        out.push(Named {
            path: physical(&path),
            tree: false,
            why: format!("a file `{}` loads (`{command} {arg}`)", envrc.display()),
        });
    }
    out
}

/// `path` as the judgement compares it: canonical where it exists, else its canonical parent
/// plus its name, else `..` folded lexically (a file that does not exist yet is still named).
fn physical(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut folded = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                folded.pop();
            }
            std::path::Component::CurDir => {}
            other => folded.push(other),
        }
    }
    match (folded.parent(), folded.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or(folded),
        _ => folded,
    }
}

/// direnv's stdlib functions that load another file.
pub const DIRENV_LOADERS: &[&str] = &[
    "source_env",
    "source_env_if_exists",
    "dotenv",
    "dotenv_if_exists",
];

/// The targets of symlinks in `home` whose names `is_startup` says are startup files
/// (`.bashrc -> dotfiles/bashrc`): writing the target is writing the startup file.
pub(crate) fn dotfile_targets(home: &Path, is_startup: &dyn Fn(&Path) -> bool) -> Vec<Named> {
    let Ok(entries) = std::fs::read_dir(home) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten().take(4096) {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if !kind.is_symlink() {
            continue;
        }
        let name = PathBuf::from(entry.file_name());
        // A startup directory (`.config/nvim`, `.vim`) protects the whole target tree.
        let probe = name.join("x");
        let tree = is_startup(&probe);
        if !tree && !is_startup(&name) {
            continue;
        }
        let Ok(target) = std::fs::canonicalize(entry.path()) else {
            continue;
        };
        out.push(Named {
            path: target,
            tree,
            why: format!(
                "the target of the startup file `{}`",
                entry.path().display()
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn git_config_keys_name_files_as_git_resolves_them() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let config = base.join("gitconfig");
        std::fs::write(
            &config,
            "[core]\n\thooksPath = ~/hooks\n\tfsmonitor = tools/mon\n[include]\n\tpath = shared.inc\n[includeIf \"gitdir:~/w/\"]\n\tpath = /etc/work.inc\n[core]\n\tfsmonitor = true\n",
        )
        .unwrap();
        let named = git_named(&config, Some(Path::new("/top")), Some(Path::new("/h")));
        let got: Vec<(&Path, bool)> = named.iter().map(|n| (n.path.as_path(), n.tree)).collect();
        assert_eq!(
            got,
            [
                (Path::new("/h/hooks"), true),
                (Path::new("/top/tools/mon"), false),
                (base.join("shared.inc").as_path(), false),
                (Path::new("/etc/work.inc"), false),
            ]
        );
        // Global files: a relative core value has no top to resolve against.
        let global = git_named(&config, None, Some(Path::new("/h")));
        assert_eq!(global.len(), 3);
    }

    #[test]
    fn every_direnv_loader_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let text: String = DIRENV_LOADERS
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} f{i}\n"))
            .collect::<String>()
            + "dotenv\nsource_env $HOME/x\nexport A=1\n";
        std::fs::write(base.join(".envrc"), text).unwrap();
        let named = envrc_named(&base.join(".envrc"));
        let mut want: Vec<PathBuf> = (0..DIRENV_LOADERS.len())
            .map(|i| base.join(format!("f{i}")))
            .collect();
        want.push(base.join(".env"));
        assert_eq!(
            named.iter().map(|n| n.path.clone()).collect::<Vec<_>>(),
            want
        );
    }

    #[test]
    fn a_symlinked_startup_file_protects_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("dotfiles/nvim")).unwrap();
        std::fs::write(base.join("dotfiles/bashrc"), "").unwrap();
        std::os::unix::fs::symlink(base.join("dotfiles/bashrc"), base.join(".bashrc")).unwrap();
        std::os::unix::fs::symlink(base.join("dotfiles/nvim"), base.join(".vim")).unwrap();
        std::os::unix::fs::symlink(base.join("dotfiles/bashrc"), base.join("notes")).unwrap();
        let startup = |p: &Path| p == Path::new(".bashrc") || p.starts_with(".vim/");
        let mut named = dotfile_targets(&base, &startup);
        named.sort_by(|a, b| a.path.cmp(&b.path));
        let got: Vec<(PathBuf, bool)> = named.into_iter().map(|n| (n.path, n.tree)).collect();
        assert_eq!(
            got,
            [
                (base.join("dotfiles/bashrc"), false),
                (base.join("dotfiles/nvim"), true)
            ]
        );
    }
}
