//! Credential stores located as their programs locate them.
//!
//! `~/.aws/credentials` is where the AWS CLI looks unless `AWS_SHARED_CREDENTIALS_FILE` says
//! otherwise; `~/.config/gh/hosts.yml` unless `GH_CONFIG_DIR` or `XDG_CONFIG_HOME` does. The
//! sensitive table names the defaults; this table names what moves them, and the sandbox reads
//! the variables from the environment it was built in (a hook process inherits the agent's, so
//! the agent's programs read the same values). Three class rules cover what no entry names:
//! - every `~/.config/...` and `~/.local/share/...` entry of the sensitive table moves with
//!   `XDG_CONFIG_HOME` / `XDG_DATA_HOME` (the XDG base directories);
//! - a file git's `store` credential helper is told to use (`credential.helper = store
//!   --file=PATH`, in the system, global or XDG git config) is a store;
//! - a hard link to a store is the store (see `Sensitive::identity`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::head::read_small_text;
use crate::sensitive::DEFAULT_SENSITIVE;

/// How a variable moves a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Moves {
    /// The value is the store file.
    File,
    /// The value is a `:`-separated list of store files (`KUBECONFIG`).
    FileList,
    /// The value is a directory holding these names; `**` = the whole directory is the store.
    Dir(&'static [&'static str]),
}

/// One variable that moves a credential store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Relocation {
    /// The environment variable the program reads.
    pub var: &'static str,
    /// What its value names.
    pub moves: Moves,
    /// What the store holds, for messages.
    pub what: &'static str,
}

const fn file(var: &'static str, what: &'static str) -> Relocation {
    Relocation {
        var,
        moves: Moves::File,
        what,
    }
}

const fn dir(var: &'static str, names: &'static [&'static str], what: &'static str) -> Relocation {
    Relocation {
        var,
        moves: Moves::Dir(names),
        what,
    }
}

/// The variables that move credential stores, each as its program reads it.
pub const RELOCATIONS: &[Relocation] = &[
    file(
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS credentials (AWS_SHARED_CREDENTIALS_FILE)",
    ),
    file(
        "AWS_CONFIG_FILE",
        "AWS configuration with credentials (AWS_CONFIG_FILE)",
    ),
    file(
        "GOOGLE_APPLICATION_CREDENTIALS",
        "a Google Cloud service-account key (GOOGLE_APPLICATION_CREDENTIALS)",
    ),
    dir(
        "CLOUDSDK_CONFIG",
        &["**"],
        "Google Cloud credentials (CLOUDSDK_CONFIG)",
    ),
    dir(
        "AZURE_CONFIG_DIR",
        &["**"],
        "Azure credentials (AZURE_CONFIG_DIR)",
    ),
    dir(
        "DOCKER_CONFIG",
        &["config.json"],
        "Docker registry credentials (DOCKER_CONFIG)",
    ),
    file(
        "REGISTRY_AUTH_FILE",
        "container registry credentials (REGISTRY_AUTH_FILE: podman, buildah, skopeo)",
    ),
    Relocation {
        var: "KUBECONFIG",
        moves: Moves::FileList,
        what: "a Kubernetes credential (KUBECONFIG)",
    },
    file("PGPASSFILE", "PostgreSQL passwords (PGPASSFILE)"),
    file("MYSQL_PWD_FILE", "MySQL passwords (MYSQL_PWD_FILE)"),
    dir(
        "GH_CONFIG_DIR",
        &["hosts.yml"],
        "the GitHub CLI's token (GH_CONFIG_DIR)",
    ),
    dir(
        "GLAB_CONFIG_DIR",
        &["config.yml"],
        "the GitLab CLI's token (GLAB_CONFIG_DIR)",
    ),
    dir("GNUPGHOME", &["**"], "a GnuPG keyring (GNUPGHOME)"),
    dir(
        "PASSWORD_STORE_DIR",
        &["**"],
        "a pass password store (PASSWORD_STORE_DIR)",
    ),
    dir(
        "CARGO_HOME",
        &["credentials.toml", "credentials"],
        "a crates.io token (CARGO_HOME)",
    ),
    file(
        "NPM_CONFIG_USERCONFIG",
        "an npm token (NPM_CONFIG_USERCONFIG)",
    ),
    file("NETRC", "machine passwords (NETRC)"),
    file("HISTFILE", "a shell history (HISTFILE: typed secrets)"),
    file(
        "VAULT_TOKEN_FILE",
        "a HashiCorp Vault token (VAULT_TOKEN_FILE)",
    ),
    file(
        "TF_CLI_CONFIG_FILE",
        "a Terraform Cloud token (TF_CLI_CONFIG_FILE)",
    ),
    file("SOPS_AGE_KEY_FILE", "age private keys (SOPS_AGE_KEY_FILE)"),
    dir(
        "CODEX_HOME",
        &["auth.json"],
        "Codex's login token (CODEX_HOME)",
    ),
    dir(
        "CLAUDE_CONFIG_DIR",
        &[".credentials.json"],
        "Claude Code's login token (CLAUDE_CONFIG_DIR)",
    ),
    dir(
        "XDG_RUNTIME_DIR",
        &["containers/auth.json"],
        "container registry credentials (podman's default auth file)",
    ),
];

/// XDG base directories and the home-relative default each replaces: every sensitive entry
/// below the default moves with the variable.
pub const XDG_BASES: &[(&str, &str)] = &[
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_STATE_HOME", ".local/state"),
];

/// The git config files whose `credential.helper` names a store file, as git reads them:
/// the system file, then `GIT_CONFIG_GLOBAL` or `~/.gitconfig`, and the XDG one.
const WHAT_GIT_STORE: &str = "stored git passwords (named by credential.helper store --file)";

/// One located store: a file, or a whole tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Located {
    pub(crate) path: PathBuf,
    pub(crate) tree: bool,
    pub(crate) what: &'static str,
}

/// The stores the environment `env` moves, for a process whose cwd is `cwd` and home `home`.
pub(crate) fn locate(
    env: &dyn Fn(&str) -> Option<OsString>,
    cwd: &Path,
    home: Option<&Path>,
) -> Vec<Located> {
    let mut out = Vec::new();
    let value = |var: &str| -> Option<OsString> { env(var).filter(|v| !v.is_empty()) };
    let absolute = |v: &Path| -> PathBuf { cwd.join(v) };
    for entry in RELOCATIONS {
        let Some(raw) = value(entry.var) else {
            continue;
        };
        match entry.moves {
            Moves::File => out.push(Located {
                path: absolute(Path::new(&raw)),
                tree: false,
                what: entry.what,
            }),
            Moves::FileList => {
                for part in std::env::split_paths(&raw).filter(|p| !p.as_os_str().is_empty()) {
                    out.push(Located {
                        path: absolute(&part),
                        tree: false,
                        what: entry.what,
                    });
                }
            }
            Moves::Dir(names) => {
                let base = absolute(Path::new(&raw));
                for name in names {
                    out.push(if *name == "**" {
                        Located {
                            path: base.clone(),
                            tree: true,
                            what: entry.what,
                        }
                    } else {
                        Located {
                            path: base.join(name),
                            tree: false,
                            what: entry.what,
                        }
                    });
                }
            }
        }
    }
    for (var, default) in XDG_BASES {
        let Some(base) = value(var).map(PathBuf::from).filter(|b| b.is_absolute()) else {
            continue;
        };
        out.extend(xdg_moved(&base, default));
    }
    out.extend(git_credential_stores(env, home));
    out
}

/// The sensitive entries below `~/<default>`, at `base` instead. Only entries whose rest is
/// literal (or a literal directory with `/**`) move: a glob in the middle has no one place.
fn xdg_moved(base: &Path, default: &str) -> Vec<Located> {
    let prefix = format!("~/{default}/");
    DEFAULT_SENSITIVE
        .iter()
        .filter_map(|entry| {
            let rest = entry.pattern.strip_prefix(&prefix)?;
            let (rest, tree) = match rest.strip_suffix("/**") {
                Some(dir) => (dir, true),
                None => (rest, false),
            };
            (!rest.contains(['*', '?', '[', '{', '\\'])).then(|| Located {
                path: base.join(rest),
                tree,
                what: entry.what,
            })
        })
        .collect()
}

/// The files git's `store` helper is configured to use in the system, global and XDG config.
fn git_credential_stores(
    env: &dyn Fn(&str) -> Option<OsString>,
    home: Option<&Path>,
) -> Vec<Located> {
    let mut out = Vec::new();
    for config in git_config_files(env, home) {
        let Some(text) = read_small_text(&config, CONFIG_BYTES) else {
            continue;
        };
        for helper in crate::gitconfig::values(&text, "credential", "helper") {
            if let Some(path) = store_file(&helper, home) {
                out.push(Located {
                    path,
                    tree: false,
                    what: WHAT_GIT_STORE,
                });
            }
        }
    }
    out
}

/// The git config files every repository reads, as git finds them: the system file
/// (`GIT_CONFIG_SYSTEM` or `/etc/gitconfig`), the global one (`GIT_CONFIG_GLOBAL` or
/// `~/.gitconfig`) and the XDG one.
pub(crate) fn git_config_files(
    env: &dyn Fn(&str) -> Option<OsString>,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    let set = |var: &str| env(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut files =
        vec![set("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig"))];
    match set("GIT_CONFIG_GLOBAL") {
        Some(global) => files.push(global),
        None => files.extend(home.map(|h| h.join(".gitconfig"))),
    }
    match set("XDG_CONFIG_HOME").filter(|p| p.is_absolute()) {
        Some(xdg) => files.push(xdg.join("git/config")),
        None => files.extend(home.map(|h| h.join(".config/git/config"))),
    }
    files
}

/// How much of a git config file is read.
const CONFIG_BYTES: usize = 1024 * 1024;

/// The `--file` of a `store` helper value (`store --file=~/x`, `store --file /x`), `~/`
/// expanded as git-credential-store does.
pub(crate) fn store_file(helper: &str, home: Option<&Path>) -> Option<PathBuf> {
    let mut words = helper.split_whitespace();
    let program = words.next()?;
    if program != "store" && program != "git-credential-store" {
        return None;
    }
    let mut file = None;
    while let Some(word) = words.next() {
        if let Some(value) = word.strip_prefix("--file=") {
            file = Some(value.to_owned());
        } else if word == "--file" {
            file = words.next().map(str::to_owned);
        }
    }
    let file = file?;
    let file = file.trim_matches(|c| c == '"' || c == '\'');
    match file.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None => Some(PathBuf::from(file)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    #[test]
    fn every_relocation_places_its_store() {
        for entry in RELOCATIONS {
            let env = env_of(&[(entry.var, "/moved/here")]);
            let found = locate(&env, Path::new("/cwd"), None);
            let mine: Vec<&Located> = found.iter().filter(|l| l.what == entry.what).collect();
            assert!(!mine.is_empty(), "{}", entry.var);
            match entry.moves {
                Moves::File | Moves::FileList => {
                    assert_eq!(mine[0].path, Path::new("/moved/here"), "{}", entry.var);
                    assert!(!mine[0].tree);
                }
                Moves::Dir(names) => {
                    assert_eq!(mine.len(), names.len(), "{}", entry.var);
                    assert!(mine.iter().all(|l| l.path.starts_with("/moved/here")));
                }
            }
        }
    }

    #[test]
    fn lists_and_relative_values_resolve_as_the_program_reads_them() {
        let env = env_of(&[("KUBECONFIG", "/a/one:kube/two::"), ("PGPASSFILE", "")]);
        let found = locate(&env, Path::new("/cwd"), None);
        let paths: Vec<&Path> = found.iter().map(|l| l.path.as_path()).collect();
        assert_eq!(paths, [Path::new("/a/one"), Path::new("/cwd/kube/two")]);
    }

    #[test]
    fn xdg_bases_move_every_entry_below_their_default() {
        let env = env_of(&[("XDG_CONFIG_HOME", "/x/cfg"), ("XDG_DATA_HOME", "/x/data")]);
        let found = locate(&env, Path::new("/cwd"), None);
        for (path, tree) in [
            ("/x/cfg/gh/hosts.yml", false),
            ("/x/cfg/gcloud", true),
            ("/x/cfg/git/credentials", false),
            ("/x/cfg/containers/auth.json", false),
            ("/x/cfg/glab-cli/config.yml", false),
            ("/x/data/keyrings", true),
        ] {
            assert!(
                found
                    .iter()
                    .any(|l| l.path == Path::new(path) && l.tree == tree),
                "{path}"
            );
        }
        // A relative XDG value is ignored, as the specification says.
        let env = env_of(&[("XDG_CONFIG_HOME", "rel")]);
        assert!(locate(&env, Path::new("/cwd"), None).is_empty());
    }

    #[test]
    fn the_store_helpers_file_is_a_store() {
        let home = Path::new("/home/u");
        for (helper, want) in [
            ("store --file=~/notes/creds", Some("/home/u/notes/creds")),
            ("store --file /srv/x", Some("/srv/x")),
            ("git-credential-store --file=\"/q/y\"", Some("/q/y")),
            ("store", None),
            ("cache --timeout=300", None),
            ("!f() { cat /x; }; f", None),
        ] {
            assert_eq!(
                store_file(helper, Some(home)).as_deref(),
                want.map(Path::new),
                "{helper}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".gitconfig"),
            "[credential \"https://git.example.com\"]\n\thelper = store --file=~/.cache/gitpw\n",
        )
        .unwrap();
        let found = locate(&env_of(&[]), Path::new("/cwd"), Some(dir.path()));
        assert!(
            found
                .iter()
                .any(|l| l.path == dir.path().join(".cache/gitpw") && l.what == WHAT_GIT_STORE)
        );
    }
}
