//! Protected files: writes refused inside writable roots, judged by identity.
//!
//! The principle: a file is protected when its content makes a tool run code **later, outside
//! review**: git runs hooks and the commands its config names (`core.fsmonitor`, `core.pager`,
//! aliases) on ordinary read-only commands; an agent runs what its settings allow; an editor runs
//! tasks and language servers its workspace settings name when the folder is opened; a shell, a
//! Python interpreter or `direnv` run their startup files at every start. A build file
//! (`Makefile`, `build.rs`, `package.json` scripts) is NOT protected: it runs only when someone
//! asks for a build, and that run is itself a reviewed step. `.gitattributes` and `.gitmodules`
//! are not protected either: a filter or diff driver runs only when the (protected) config
//! defines it, and git ignores `update = !command` from `.gitmodules`.
//!
//! Identity, not spelling: a path is protected when any of these names it:
//! 1. the physical path, relative to its root;
//! 2. every name the path had on the way to it (the path as given, and the path as it read
//!    after each symlink met during resolution), relative to the root it is in;
//! 3. what it is inside a git directory: any ancestor that *is* a git directory (`HEAD` plus
//!    `objects/` and `refs/`, or `HEAD` plus `commondir` for a worktree), whatever it is called
//!    and however it is reached (a symlinked `.git`, a `gitdir:` pointer, a submodule's
//!    `.git/modules/x`, a bare repository), with [`GIT_DIR_PROTECTED`] relative to it;
//! 4. a protected directory name (`.claude`, `.vscode`, ...) that is a symlink, in the file's
//!    directory or one of its ancestors inside the root, pointing at a directory that holds the
//!    file: the file is judged as `<name>/<path below the target>`;
//! 5. the hooks directory the nearest repository's config names (`core.hooksPath`).

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

use crate::error::SandboxError;
use crate::head::read_small_text;
use crate::roles::{self, Named};

/// The protected patterns used unless the builder or the config replaces them.
///
/// Gitignore-ish, relative to a root: a pattern without a `/` matches that name at any depth; one
/// with a `/` is anchored at the root (`**/` makes it match at any depth); `dir/**` also protects
/// `dir` itself.
pub const DEFAULT_PROTECTED: &[&str] = &[
    // git: the `.git` entry itself (a `gitdir:` pointer file redirects everything), its config
    // and hooks, in nested repositories too. Git directories reached under another name are
    // caught by identity ([`GIT_DIR_PROTECTED`]).
    ".git",
    "**/.git/config",
    "**/.git/config.worktree",
    "**/.git/commondir",
    "**/.git/hooks/**",
    "**/.git/info/attributes",
    "**/.git/modules/**/config",
    "**/.git/modules/**/hooks/**",
    "**/.git/worktrees/*/config.worktree",
    "**/.git/worktrees/*/commondir",
    ".gitconfig",
    // Git hook managers: their scripts run on every commit.
    "**/.husky/**",
    ".pre-commit-config.yaml",
    // Agent settings: what the agent may run without asking.
    "**/.claude/**",
    "**/.codex/**",
    "**/.gemini/**",
    "**/.agent/**",
    // The guard's own state: audit log, kill switch, session ledger and allow-once grants.
    "**/.agent-guard/**",
    ".mcp.json",
    // Editors: run on opening the folder.
    "**/.vscode/tasks.json",
    "**/.vscode/settings.json",
    "**/.vscode/launch.json",
    "**/.vscode/mcp.json",
    "**/.idea/workspace.xml",
    "**/.idea/watcherTasks.xml",
    "**/.idea/runConfigurations/**",
    "**/.devcontainer/devcontainer.json",
    ".devcontainer.json",
    // Other agents' servers and hooks, started by the editor.
    "**/.cursor/mcp.json",
    "**/.cursor/hooks.json",
    // Mercurial's repository config: `[hooks]` run on every command.
    "**/.hg/hgrc",
    // Package managers and toolchains: config that swaps the program run by any later command.
    "**/.cargo/config.toml",
    "**/.cargo/config",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    // `[toolchain] path = ...` makes every cargo command run that directory's rustc.
    "rust-toolchain.toml",
    "rust-toolchain",
    // Run at every start of a shell, of direnv, of Python.
    ".envrc",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    "**/.config/fish/**",
    "*.pth",
    "sitecustomize.py",
    "usercustomize.py",
    // Read from the working directory when the debugger or REPL starts there.
    ".pdbrc",
    ".pryrc",
    ".irbrc",
    ".gdbinit",
    ".lldbinit",
    // direnv: `.envrc` sources these (`source_env_if_exists .envrc.local`).
    ".envrc.*",
    // Other agents' hooks and plugins, loaded from the project: GitHub Copilot CLI's hooks,
    // OpenCode's plugins and config (its MCP servers are commands).
    "**/.github/hooks/**",
    "**/.opencode/**",
    "opencode.json",
    "opencode.jsonc",
    // Version managers run their hooks, tasks and plugins when a shell enters the directory.
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    "**/.mise/**",
    ".tool-versions",
    // A VS Code workspace file carries settings, tasks and launch configurations.
    "*.code-workspace",
];

/// The literal first component [`HOME_PROTECTED`] patterns are anchored at (a path below a
/// home is matched as `~/<rest>`).
const HOME_MARK: &str = "~";

/// What is protected below a home directory inside a writable root (the agent started in `~`),
/// relative to the home: the places every desktop session, shell and editor reads and runs at
/// its next start. Directories on the agent's `PATH` inside a writable root are protected too
/// (a program put there replaces a command the person types).
pub const HOME_PROTECTED: &[&str] = &[
    ".config/systemd/user/**",
    ".config/autostart/**",
    ".config/environment.d/**",
    ".local/share/applications/**",
    ".local/bin/**",
    ".bashrc.d/**",
    ".bash_aliases",
    ".inputrc",
    ".xprofile",
    ".xsessionrc",
    ".xinitrc",
    ".pam_environment",
    ".tmux.conf",
    ".vimrc",
    ".vim/**",
    ".config/nvim/**",
    ".emacs",
    ".emacs.d/**",
    ".config/gdb/**",
    ".config/git/**",
    ".ssh/rc",
    ".config/containers/**",
    ".docker/**",
];

/// What is protected inside a directory that IS a git directory, relative to it.
pub const GIT_DIR_PROTECTED: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "hooks/**",
    "info/attributes",
    "modules/**/config",
    "modules/**/hooks/**",
    "worktrees/*/config.worktree",
    "worktrees/*/commondir",
];

/// How much of a git config or pointer file is read (a FIFO or a device is never opened: see
/// `head.rs`).
const CONFIG_BYTES: usize = 1024 * 1024;

/// Above this many entries a directory is not listed; its names are looked up one by one.
const SCAN_CAP: usize = 4096;

/// What one directory holds, as far as the judgement cares.
struct DirFacts {
    /// It is a git directory (`HEAD`, and `objects/` + `refs/` or a `commondir` file).
    git_dir: bool,
    /// It holds a `.git` entry (a work tree's top).
    dot_git: bool,
    /// The protected directory names in it that are symlinks.
    linked: Vec<String>,
    /// It holds an `.envrc` (direnv loads it, and what it names).
    envrc: bool,
}

/// A compiled list of root-relative patterns.
#[derive(Debug)]
pub(crate) struct Patterns {
    /// Per compiled glob, the pattern the person wrote.
    owners: Vec<String>,
    set: GlobSet,
}

impl Patterns {
    /// Every glob the patterns stand for, with the pattern each came from; an error for a
    /// pattern that is empty or does not parse.
    pub(crate) fn globs(patterns: &[String]) -> Result<Vec<(Glob, String)>, SandboxError> {
        let mut globs = Vec::new();
        for pattern in patterns {
            let trimmed = pattern.trim_start_matches('/').trim_end_matches('/');
            if trimmed.is_empty() {
                return Err(SandboxError::BadPattern {
                    pattern: pattern.clone(),
                    message: "an empty protected pattern would protect nothing".to_owned(),
                });
            }
            let mut forms = vec![trimmed.to_owned()];
            if !trimmed.contains('/') {
                forms.push(format!("**/{trimmed}"));
            }
            // `dir/**` protects the directory itself too, so it cannot be replaced wholesale.
            let extra: Vec<String> = forms
                .iter()
                .filter_map(|f| f.strip_suffix("/**").map(str::to_owned))
                .collect();
            forms.extend(extra);
            for form in forms {
                let glob = GlobBuilder::new(&form)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|err| SandboxError::BadPattern {
                        pattern: pattern.clone(),
                        message: err.kind().to_string(),
                    })?;
                globs.push((glob, pattern.clone()));
            }
        }
        Ok(globs)
    }

    pub(crate) fn compile(patterns: &[String]) -> Result<Self, SandboxError> {
        let mut builder = GlobSetBuilder::new();
        let mut owners = Vec::new();
        for (glob, owner) in Self::globs(patterns)? {
            builder.add(glob);
            owners.push(owner);
        }
        let set = builder.build().map_err(|err| SandboxError::BadPattern {
            pattern: patterns.join(", "),
            message: err.to_string(),
        })?;
        Ok(Patterns { owners, set })
    }

    /// The pattern `relative` matches, as spelled or as a case-insensitive filesystem reads it
    /// (see [`fold_name`]): on macOS (APFS, HFS+), Windows, or an ext4 `casefold` directory
    /// `.Claude/settings.json` and `.ENVRC` ARE `.claude/settings.json` and `.envrc`, and HFS+
    /// also ignores zero-width code points (`.claude\u{200b}`).
    pub(crate) fn matching(&self, relative: &Path) -> Option<&str> {
        self.matching_as(relative, true)
    }

    /// [`matching`](Patterns::matching), folding only when `fold` says the filesystem does
    /// ([`folds`]): on a case-sensitive one `.Husky/` is not `.husky/`, and no tool reads it.
    pub(crate) fn matching_as(&self, relative: &Path, fold: bool) -> Option<&str> {
        let first = self.set.matches(relative).into_iter().next().or_else(|| {
            if !fold {
                return None;
            }
            let spelled = relative.to_string_lossy();
            let folded = fold_name(&spelled);
            (folded != spelled)
                .then(|| self.set.matches(Path::new(&folded)).into_iter().next())
                .flatten()
        })?;
        self.owners.get(first).map(String::as_str)
    }
}

/// `statfs` magic numbers of filesystems that compare names without case (FAT, exFAT, NTFS,
/// SMB, HFS+) or whose folding the kernel cannot know (FUSE: ntfs-3g, ciopfs; fail closed).
pub(crate) const FOLDING_FILESYSTEMS: &[(i64, &str)] = &[
    (0x4d44, "vfat"),
    (0x2011_bab0, "exfat"),
    (0x5346_544e, "ntfs"),
    (0x7366_746e, "ntfs3"),
    (0xff53_4d42, "cifs"),
    (0xfe53_4d42, "smb2"),
    (0x517b, "smb"),
    (0x482b, "hfsplus"),
    (0x6573_5546, "fuse"),
];

/// The inode flag of an ext4/f2fs directory whose names are case-folded (`chattr +F`).
const FS_CASEFOLD_FL: u32 = 0x4000_0000;

/// Whether names in `dir` (or its deepest existing ancestor) are compared without case:
/// always on macOS; on Linux when its filesystem folds or the directory has the casefold flag.
/// A directory that cannot be examined folds (fail closed).
pub(crate) fn folds(dir: &Path) -> bool {
    if cfg!(target_os = "macos") {
        return true;
    }
    let mut at = Some(dir);
    while let Some(dir) = at {
        match rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => {
                let Ok(fs) = rustix::fs::fstatfs(&fd) else {
                    return true;
                };
                #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
                let kind = i64::from(fs.f_type as i64) & 0xffff_ffff;
                if FOLDING_FILESYSTEMS.iter().any(|(magic, _)| *magic == kind) {
                    return true;
                }
                return rustix::fs::ioctl_getflags(&fd)
                    .is_ok_and(|flags| flags.bits() & FS_CASEFOLD_FL != 0);
            }
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => at = dir.parent(),
            Err(_) => return true,
        }
    }
    true
}

/// Code points HFS+ ignores in names (git's `is_hfs_dotgit` list: zero-width joiners,
/// directional marks, the byte order mark), plus the zero-width space, which no one can see.
const HFS_IGNORED: &[char] = &[
    '\u{200c}', '\u{200d}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
    '\u{202e}', '\u{206a}', '\u{206b}', '\u{206c}', '\u{206d}', '\u{206e}', '\u{206f}', '\u{feff}',
    '\u{200b}',
];

/// A name as a case-insensitive filesystem compares it: lower case, ignored code points gone.
fn fold_name(name: &str) -> String {
    name.chars()
        .filter(|c| !HFS_IGNORED.contains(c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The protected list with what identity needs: the git-directory patterns and the directory
/// names worth looking for as symlinks.
#[derive(Debug)]
pub(crate) struct Protected {
    pub(crate) names: Patterns,
    git_dir: Patterns,
    /// Literal directory names the patterns protect below (`.claude` from `**/.claude/**`).
    linkable_dirs: Vec<String>,
    /// The home forms and [`HOME_PROTECTED`] relative to them.
    homes: Vec<PathBuf>,
    home_patterns: Patterns,
    /// The agent's `PATH` directories (absolute entries, canonical).
    path_dirs: Vec<PathBuf>,
    /// What the system, global and XDG git config and the homes' symlinked startup files name
    /// (see `roles.rs`).
    named: Vec<Named>,
}

impl Protected {
    /// Checks that every pattern parses, without compiling a set.
    ///
    /// The defaults, when the list starts with them (it does unless the policy cleared them),
    /// are not parsed again: their test compiles them all, and parsing them was most of what
    /// building a sandbox cost.
    pub(crate) fn validate(patterns: &[String]) -> Result<(), SandboxError> {
        let own = patterns
            .get(DEFAULT_PROTECTED.len()..)
            .filter(|_| patterns.iter().zip(DEFAULT_PROTECTED).all(|(p, d)| p == d))
            .unwrap_or(patterns);
        Patterns::globs(own).map(drop)
    }

    #[cfg(test)]
    pub(crate) fn compile(patterns: &[String]) -> Result<Self, SandboxError> {
        Self::compile_for(patterns, &[], &[], &[])
    }

    /// [`compile`](Protected::compile), with the home directories and `PATH` directories whose
    /// layouts are protected when a writable root contains them.
    pub(crate) fn compile_for(
        patterns: &[String],
        homes: &[PathBuf],
        path_dirs: &[PathBuf],
        git_configs: &[PathBuf],
    ) -> Result<Self, SandboxError> {
        let names = Patterns::compile(patterns)?;
        let home_patterns = Patterns::compile(
            &HOME_PROTECTED
                .iter()
                .map(|p| format!("{HOME_MARK}/{p}"))
                .collect::<Vec<_>>(),
        )?;
        let git_dir = Patterns::compile(
            &GIT_DIR_PROTECTED
                .iter()
                .map(|p| (*p).to_owned())
                .collect::<Vec<_>>(),
        )?;
        let mut linkable_dirs = Vec::new();
        for pattern in patterns {
            let mut parts = pattern
                .trim_start_matches('/')
                .split('/')
                .skip_while(|part| *part == "**");
            if let (Some(first), Some(_)) = (parts.next(), parts.next())
                && !first.contains(['*', '?', '[', '{', '\\'])
                && !linkable_dirs.iter().any(|d| d == first)
            {
                linkable_dirs.push(first.to_owned());
            }
        }
        let home = homes.first().map(PathBuf::as_path);
        let mut named: Vec<Named> = git_configs
            .iter()
            .flat_map(|config| roles::git_named(config, None, home))
            .collect();
        for home in homes {
            let startup = |relative: &Path| {
                names.matching(relative).is_some()
                    || home_patterns
                        .matching(&Path::new(HOME_MARK).join(relative))
                        .is_some()
            };
            named.extend(roles::dotfile_targets(home, &startup));
        }
        Ok(Protected {
            names,
            git_dir,
            linkable_dirs,
            homes: homes.to_vec(),
            home_patterns,
            path_dirs: path_dirs.to_vec(),
            named,
        })
    }

    /// Why a write to `physical` (inside `root`) is refused, if it is; `views` are the other
    /// names the path had on the way (absolute, lexical).
    pub(crate) fn judge(&self, physical: &Path, views: &[PathBuf], root: &Path) -> Option<String> {
        let fold = physical.parent().is_none_or(folds);
        if let Some(pattern) = self.names.matching_as(relative_to(physical, root), fold) {
            return Some(pattern.to_owned());
        }
        for home in &self.homes {
            if let Ok(below) = physical.strip_prefix(home)
                && let Some(pattern) = self
                    .home_patterns
                    .matching_as(&Path::new(HOME_MARK).join(below), fold)
            {
                return Some(format!(
                    "{pattern} (the home directory `{}` is inside the root)",
                    home.display()
                ));
            }
        }
        if let Some(named) = self.named.iter().find(|n| n.covers(physical)) {
            return Some(named.why.clone());
        }
        // A PATH directory that holds the root itself is the person's setup, not a place to
        // guard: protecting it would protect the whole project.
        if let Some(dir) = self
            .path_dirs
            .iter()
            .find(|d| physical.starts_with(d) && !root.starts_with(d))
        {
            return Some(format!(
                "a directory on the agent's PATH (`{}`): a program there replaces a command",
                dir.display()
            ));
        }
        for view in views {
            if view.components().any(|c| c == Component::ParentDir) || !view.starts_with(root) {
                continue;
            }
            if let Some(pattern) = self.names.matching_as(relative_to(view, root), fold) {
                return Some(format!("{pattern} (named `{}`)", view.display()));
            }
        }
        let mut ancestor = physical.parent();
        let mut repo_seen = false;
        while let Some(dir) = ancestor {
            let inside = dir.starts_with(root);
            let facts = self.facts(dir, inside);
            // direnv: what the `.envrc` of a directory above the file loads.
            if inside
                && facts.envrc
                && let Some(named) = roles::envrc_named(&dir.join(".envrc"))
                    .into_iter()
                    .find(|n| n.covers(physical))
            {
                return Some(named.why);
            }
            // Rule 5: the first repository above the file may move its hooks (`core.hooksPath`).
            if !repo_seen
                && facts.dot_git
                && let Some(git) = git_dir_of_work_tree(dir)
            {
                repo_seen = true;
                // What the repository's own config names: included files, fsmonitor.
                let home = self.homes.first().map(PathBuf::as_path);
                if let Some(named) = roles::git_named(&git.join("config"), Some(dir), home)
                    .into_iter()
                    .find(|n| n.covers(physical))
                {
                    return Some(named.why);
                }
                if let Some(hooks) = hooks_path(&git, dir)
                    && physical.starts_with(&hooks)
                {
                    return Some(format!(
                        "core.hooksPath `{}` of the git directory `{}`",
                        hooks.display(),
                        git.display()
                    ));
                }
            }
            if facts.git_dir
                && let Some(pattern) = self.git_dir.matching_as(relative_to(physical, dir), fold)
            {
                return Some(format!(
                    "{pattern} of the git directory `{}`",
                    dir.display()
                ));
            }
            if inside
                && let Some(pattern) = self.through_linked_dir(physical, dir, root, &facts.linked)
            {
                return Some(pattern);
            }
            ancestor = dir.parent();
        }
        None
    }

    /// What `dir` holds. Inside the root one `getdents` pass answers every question (a few
    /// syscalls instead of one `lstat` per name); above the root, or for a directory that cannot
    /// be listed or is very large, the names are looked up one by one.
    fn facts(&self, dir: &Path, inside_root: bool) -> DirFacts {
        if inside_root && let Some(facts) = self.scan(dir) {
            return facts;
        }
        let linked = if inside_root {
            self.linkable_dirs
                .iter()
                .filter(|name| {
                    std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_symlink())
                })
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        DirFacts {
            git_dir: is_git_dir(dir),
            dot_git: std::fs::symlink_metadata(dir.join(".git")).is_ok(),
            linked,
            envrc: inside_root && std::fs::symlink_metadata(dir.join(".envrc")).is_ok(),
        }
    }

    fn scan(&self, dir: &Path) -> Option<DirFacts> {
        let fd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let mut entries = Dir::new(fd).ok()?;
        let (mut head, mut objects, mut refs, mut commondir, mut dot_git) =
            (false, false, false, false, false);
        let mut envrc = false;
        let mut linked = Vec::new();
        let mut count = 0usize;
        while let Some(entry) = entries.read() {
            let entry = entry.ok()?;
            count += 1;
            if count > SCAN_CAP {
                return None;
            }
            let name = entry.file_name().to_bytes();
            let kind = entry.file_type();
            let fd = entries.fd().ok()?;
            // git follows symlinks for these (`is_git_directory` uses access/stat).
            let followed = |want: FileType| {
                kind == want
                    || matches!(kind, FileType::Symlink | FileType::Unknown)
                        && rustix::fs::statat(fd, name, AtFlags::empty())
                            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == want)
            };
            match name {
                b"HEAD" => head = true,
                b"objects" => objects = followed(FileType::Directory),
                b"refs" => refs = followed(FileType::Directory),
                b"commondir" => commondir = followed(FileType::RegularFile),
                b".git" => dot_git = true,
                b".envrc" => envrc = true,
                _ => {}
            }
            if let Some(linkable) = self.linkable_dirs.iter().find(|l| l.as_bytes() == name) {
                let is_link = kind == FileType::Symlink
                    || kind == FileType::Unknown
                        && rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(
                            |st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink,
                        );
                if is_link {
                    linked.push(linkable.clone());
                }
            }
        }
        Some(DirFacts {
            git_dir: head && ((objects && refs) || commondir),
            dot_git,
            linked,
            envrc,
        })
    }

    /// Rule 4: `dir/<name>` is a symlink (one of `linked`) to a directory holding `physical`.
    fn through_linked_dir(
        &self,
        physical: &Path,
        dir: &Path,
        root: &Path,
        linked: &[String],
    ) -> Option<String> {
        for name in linked {
            let link = dir.join(name);
            let Ok(target) = std::fs::canonicalize(&link) else {
                continue;
            };
            let Ok(below) = physical.strip_prefix(&target) else {
                continue;
            };
            let view = link.join(below);
            if let Some(pattern) = self.names.matching(relative_to(&view, root)) {
                return Some(format!("{pattern} (through the link `{}`)", link.display()));
            }
        }
        None
    }
}

/// The git directory of a work tree whose top is `dir`: `dir/.git` as a directory (or a symlink
/// to one) or a `gitdir:` pointer file; canonical.
fn git_dir_of_work_tree(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return std::fs::canonicalize(&dot_git).ok();
    }
    let text = read_small_text(&dot_git, CONFIG_BYTES)?;
    let target = text.strip_prefix("gitdir:")?.trim();
    std::fs::canonicalize(dir.join(target)).ok()
}

/// `core.hooksPath` of the repository whose git directory is `git` and work tree top `top`,
/// resolved (relative values are relative to the work tree top). Only the repository's own
/// config is read (and the common dir's, for a worktree).
fn hooks_path(git: &Path, top: &Path) -> Option<PathBuf> {
    let common = read_small_text(&git.join("commondir"), CONFIG_BYTES)
        .and_then(|c| std::fs::canonicalize(git.join(c.trim())).ok())
        .unwrap_or_else(|| git.to_owned());
    let mut value = None;
    for config in [common.join("config"), git.join("config.worktree")] {
        if let Some(text) = read_small_text(&config, CONFIG_BYTES)
            && let Some(found) = core_hooks_path(&text)
        {
            value = Some(found);
        }
    }
    let value = PathBuf::from(value?);
    let joined = top.join(value);
    Some(std::fs::canonicalize(&joined).unwrap_or(joined))
}

/// The last `hooksPath` in a `[core]` section of git config text (keys and section names are
/// case-insensitive; a quoted value loses its quotes; `#`/`;` start a comment).
fn core_hooks_path(text: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split([']', ' ', '"']).next().unwrap_or("");
            in_core = name.eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if !key.trim().eq_ignore_ascii_case("hookspath") {
            continue;
        }
        let value = value.trim();
        let value = match value.strip_prefix('"') {
            Some(quoted) => quoted.split('"').next().unwrap_or(""),
            None => value.split(['#', ';']).next().unwrap_or("").trim(),
        };
        if !value.is_empty() {
            found = Some(value.to_owned());
        }
    }
    found
}

fn relative_to<'a>(path: &'a Path, base: &Path) -> &'a Path {
    path.strip_prefix(base).unwrap_or(Path::new(""))
}

/// Git's own test (`is_git_directory`): `HEAD`, and `objects/` + `refs/` or a `commondir` file.
fn is_git_dir(dir: &Path) -> bool {
    if std::fs::symlink_metadata(dir.join("HEAD")).is_err() {
        return false;
    }
    let is_dir = |name: &str| std::fs::metadata(dir.join(name)).is_ok_and(|m| m.is_dir());
    (is_dir("objects") && is_dir("refs"))
        || std::fs::metadata(dir.join("commondir")).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;

    /// One example per default pattern (root-relative) that must be protected, and a near miss
    /// that must not.
    const EXAMPLES: &[(&str, &str, &str)] = &[
        (".git", "sub/.git", "sub/.github"),
        ("**/.git/config", "a/b/.git/config", "a/.git/configx"),
        (
            "**/.git/config.worktree",
            ".git/config.worktree",
            "config.worktree",
        ),
        ("**/.git/commondir", "w/.git/commondir", "commondir"),
        ("**/.git/hooks/**", "x/.git/hooks/pre-commit", ".git/HEAD"),
        (
            "**/.git/info/attributes",
            ".git/info/attributes",
            ".git/info/exclude",
        ),
        (
            "**/.git/modules/**/config",
            ".git/modules/a/b/config",
            ".git/modules/a/HEAD",
        ),
        (
            "**/.git/modules/**/hooks/**",
            ".git/modules/a/hooks/post-checkout",
            ".git/modules/a/index",
        ),
        (
            "**/.git/worktrees/*/config.worktree",
            ".git/worktrees/w/config.worktree",
            ".git/worktrees/w/HEAD",
        ),
        (
            "**/.git/worktrees/*/commondir",
            ".git/worktrees/w/commondir",
            ".git/worktrees/w/gitdir",
        ),
        (".gitconfig", ".gitconfig", ".gitattributes"),
        ("**/.husky/**", "web/.husky/pre-commit", "husky.md"),
        (
            ".pre-commit-config.yaml",
            ".pre-commit-config.yaml",
            ".pre-commit-hooks.yaml",
        ),
        ("**/.claude/**", "pkg/.claude/settings.json", "claude.md"),
        ("**/.codex/**", ".codex/config.toml", "codex.md"),
        ("**/.gemini/**", ".gemini/settings.json", "GEMINI.md"),
        ("**/.agent/**", ".agent/x/y", "agent.rs"),
        (
            "**/.agent-guard/**",
            ".agent-guard/audit.db",
            "agent-guard.md",
        ),
        (".mcp.json", "sub/.mcp.json", "mcp.json"),
        (
            "**/.vscode/tasks.json",
            ".vscode/tasks.json",
            ".vscode/extensions.json",
        ),
        (
            "**/.vscode/settings.json",
            "app/.vscode/settings.json",
            "settings.json",
        ),
        (
            "**/.vscode/launch.json",
            ".vscode/launch.json",
            "launch.json",
        ),
        (
            "**/.devcontainer/devcontainer.json",
            ".devcontainer/devcontainer.json",
            ".devcontainer/Dockerfile",
        ),
        (
            ".devcontainer.json",
            ".devcontainer.json",
            "devcontainer.json",
        ),
        (
            "**/.cargo/config.toml",
            "crate/.cargo/config.toml",
            "Cargo.toml",
        ),
        ("**/.cargo/config", ".cargo/config", ".cargo/registry"),
        (".npmrc", "web/.npmrc", "npmrc.md"),
        (".yarnrc", ".yarnrc", "yarn.lock"),
        (".yarnrc.yml", ".yarnrc.yml", ".yarnrc.yml.bak"),
        (".envrc", ".envrc", ".env.example"),
        (".bashrc", ".bashrc", ".bashrc.bak"),
        (".bash_profile", ".bash_profile", "bash_profile"),
        (".bash_login", ".bash_login", "bash_login"),
        (".bash_logout", ".bash_logout", "bash_logout"),
        (".profile", "src/.profile", "profile.rs"),
        (".zshrc", "src/.zshrc", "zshrc"),
        (".zshenv", ".zshenv", "zshenv"),
        (".zprofile", ".zprofile", "zprofile"),
        (".zlogin", ".zlogin", "zlogin"),
        (".zlogout", ".zlogout", "zlogout"),
        (
            "**/.config/fish/**",
            ".config/fish/config.fish",
            ".config/other/x",
        ),
        (
            "*.pth",
            ".venv/lib/python3.12/site-packages/evil.pth",
            "depth.rs",
        ),
        ("sitecustomize.py", "lib/sitecustomize.py", "customize.py"),
        ("usercustomize.py", "usercustomize.py", "user.py"),
        (
            "**/.vscode/mcp.json",
            ".vscode/mcp.json",
            ".vscode/extensions.json",
        ),
        (
            "**/.idea/workspace.xml",
            ".idea/workspace.xml",
            ".idea/modules.xml",
        ),
        (
            "**/.idea/watcherTasks.xml",
            "app/.idea/watcherTasks.xml",
            ".idea/vcs.xml",
        ),
        (
            "**/.idea/runConfigurations/**",
            ".idea/runConfigurations/Test.xml",
            ".idea/codeStyles/Project.xml",
        ),
        (
            "**/.cursor/mcp.json",
            ".cursor/mcp.json",
            ".cursor/rules/style.mdc",
        ),
        (
            "**/.cursor/hooks.json",
            ".cursor/hooks.json",
            ".cursor/README.md",
        ),
        ("**/.hg/hgrc", ".hg/hgrc", ".hgignore"),
        (
            "rust-toolchain.toml",
            "rust-toolchain.toml",
            "toolchain.toml",
        ),
        (
            "rust-toolchain",
            "crate/rust-toolchain",
            "rust-toolchain.md",
        ),
        (".pdbrc", ".pdbrc", "pdbrc.py"),
        (".pryrc", ".pryrc", "pryrc.rb"),
        (".irbrc", ".irbrc", "irbrc.rb"),
        (".gdbinit", "tools/.gdbinit", "gdbinit.md"),
        (".lldbinit", ".lldbinit", "lldbinit.txt"),
        (".envrc.*", ".envrc.local", "envrc.md"),
        (
            "**/.github/hooks/**",
            ".github/hooks/pre-tool.json",
            ".github/workflows/ci.yml",
        ),
        ("**/.opencode/**", ".opencode/plugin/x.ts", "opencode.md"),
        ("opencode.json", "opencode.json", "opencode.md"),
        ("opencode.jsonc", "web/opencode.jsonc", "opencode.jsonc.bak"),
        ("mise.toml", "mise.toml", "mise.md"),
        (".mise.toml", ".mise.toml", "mise.toml.bak"),
        ("mise.local.toml", "mise.local.toml", "mise.local.md"),
        (".mise.local.toml", "svc/.mise.local.toml", "local.toml"),
        ("**/.mise/**", ".mise/tasks/build", "mise-notes.txt"),
        (".tool-versions", ".tool-versions", "tool-versions.md"),
        (
            "*.code-workspace",
            "app.code-workspace",
            "code-workspace.md",
        ),
    ];

    /// One example below a home directory per [`HOME_PROTECTED`] entry, and a near miss.
    const HOME_EXAMPLES: &[(&str, &str, &str)] = &[
        (
            ".config/systemd/user/**",
            ".config/systemd/user/evil.service.d/override.conf",
            ".config/systemd/README",
        ),
        (
            ".config/autostart/**",
            ".config/autostart/x.desktop",
            ".config/autostart.md",
        ),
        (
            ".config/environment.d/**",
            ".config/environment.d/10-path.conf",
            ".config/environment.md",
        ),
        (
            ".local/share/applications/**",
            ".local/share/applications/firefox.desktop",
            ".local/share/recently-used.xbel",
        ),
        (".local/bin/**", ".local/bin/git", ".local/lib/x"),
        (".bashrc.d/**", ".bashrc.d/50-agent.sh", ".bashrc.md"),
        (".bash_aliases", ".bash_aliases", "proj/.bash_aliases"),
        (".inputrc", ".inputrc", "proj/.inputrc"),
        (".xprofile", ".xprofile", "proj/.xprofile"),
        (".xsessionrc", ".xsessionrc", "proj/.xsessionrc"),
        (".xinitrc", ".xinitrc", "proj/.xinitrc"),
        (
            ".pam_environment",
            ".pam_environment",
            "proj/.pam_environment",
        ),
        (".tmux.conf", ".tmux.conf", "proj/.tmux.conf"),
        (".vimrc", ".vimrc", "proj/.vimrc"),
        (".vim/**", ".vim/plugin/x.vim", "proj/.vim/x"),
        (
            ".config/nvim/**",
            ".config/nvim/init.lua",
            ".config/nvim.md",
        ),
        (".emacs", ".emacs", "proj/.emacs"),
        (".emacs.d/**", ".emacs.d/init.el", "proj/.emacs.d/init.el"),
        (".config/gdb/**", ".config/gdb/gdbinit", ".config/gdb.md"),
        (".config/git/**", ".config/git/config", ".config/gitk"),
        (".ssh/rc", ".ssh/rc", ".ssh/rc.bak"),
        (
            ".config/containers/**",
            ".config/containers/containers.conf",
            ".config/containers.md",
        ),
        (".docker/**", ".docker/cli-plugins/docker-x", "docker.md"),
    ];

    #[test]
    fn every_home_pattern_has_an_example_below_a_home_only() {
        let home = PathBuf::from("/home/u");
        let root = PathBuf::from("/home/u");
        let p = Protected::compile_for(&[], std::slice::from_ref(&home), &[], &[]).unwrap();
        for pattern in HOME_PROTECTED {
            let Some((_, hit, miss)) = HOME_EXAMPLES.iter().find(|(p, _, _)| p == pattern) else {
                panic!("no example for the home pattern {pattern}");
            };
            let verdict = p.judge(&home.join(hit), &[], &root);
            assert!(
                verdict.as_deref().is_some_and(|v| v.contains(pattern)),
                "{hit}: {verdict:?}"
            );
            assert_eq!(p.judge(&home.join(miss), &[], &root), None, "{miss}");
            // Not below a home: a project's file of that name is ordinary.
            assert_eq!(
                p.judge(&PathBuf::from("/srv/p").join(hit), &[], &root),
                None
            );
        }
    }

    #[test]
    fn case_folds_only_where_the_filesystem_folds() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("probe"), "").unwrap();
        let folding = root.join("PROBE").exists();
        assert_eq!(folds(&root), folding);
        assert_eq!(folds(&root.join("missing/deeper")), folding);
        let p = Protected::compile(
            &DEFAULT_PROTECTED
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert!(
            p.judge(&root.join(".husky/pre-commit"), &[], &root)
                .is_some()
        );
        assert_eq!(
            p.judge(&root.join(".Husky/pre-commit"), &[], &root)
                .is_some(),
            folding
        );
    }

    #[test]
    fn path_directories_inside_a_root_are_protected() {
        let bin = PathBuf::from("/home/u/p/tools/bin");
        let p = Protected::compile_for(&[], &[], std::slice::from_ref(&bin), &[]).unwrap();
        let root = Path::new("/home/u/p");
        assert!(p.judge(&bin.join("ls"), &[], root).is_some());
        assert_eq!(p.judge(Path::new("/home/u/p/tools/x"), &[], root), None);
        // A PATH entry holding the root itself protects nothing.
        let p = Protected::compile_for(&[], &[], &[PathBuf::from("/home/u")], &[]).unwrap();
        assert_eq!(p.judge(Path::new("/home/u/p/a.txt"), &[], root), None);
    }

    #[test]
    fn validation_skips_only_the_defaults_it_starts_with() {
        let defaults: Vec<String> = DEFAULT_PROTECTED.iter().map(|p| (*p).to_owned()).collect();
        assert!(Protected::validate(&defaults).is_ok());
        for bad in ["[", "", "a/**b{"] {
            let mut after = defaults.clone();
            after.push(bad.to_owned());
            assert!(
                Protected::validate(&after).is_err(),
                "{bad:?} after the defaults"
            );
            // Cleared, or the defaults not first: every pattern is parsed.
            let mut before = vec![bad.to_owned()];
            before.extend(defaults.iter().cloned());
            assert!(Protected::validate(&before).is_err(), "{bad:?} first");
            assert!(
                Protected::validate(&[bad.to_owned()]).is_err(),
                "{bad:?} alone"
            );
        }
    }

    #[test]
    fn every_default_pattern_has_a_passing_example_and_near_miss() {
        let patterns: Vec<String> = DEFAULT_PROTECTED.iter().map(|p| (*p).to_owned()).collect();
        let compiled = Patterns::compile(&patterns).unwrap();
        for pattern in DEFAULT_PROTECTED {
            let Some((_, hit, miss)) = EXAMPLES.iter().find(|(p, _, _)| p == pattern) else {
                panic!("no example for the protected pattern {pattern}");
            };
            assert_eq!(compiled.matching(Path::new(hit)), Some(*pattern), "{hit}");
            assert_eq!(compiled.matching(Path::new(miss)), None, "{miss}");
        }
        for ordinary in [
            "Makefile",
            "build.rs",
            "package.json",
            ".gitattributes",
            ".gitmodules",
            "src/main.rs",
        ] {
            assert_eq!(compiled.matching(Path::new(ordinary)), None, "{ordinary}");
        }
    }

    #[test]
    fn names_a_case_insensitive_filesystem_folds_are_protected() {
        let patterns: Vec<String> = DEFAULT_PROTECTED.iter().map(|p| (*p).to_owned()).collect();
        let compiled = Patterns::compile(&patterns).unwrap();
        for (spelled, pattern) in [
            (".ENVRC", ".envrc"),
            (".Claude/settings.json", "**/.claude/**"),
            (".GIT/config", "**/.git/config"),
            ("sub/.Git/Hooks/pre-commit", "**/.git/hooks/**"),
            (".claude\u{200b}/settings.json", "**/.claude/**"),
            (".\u{200c}git/config", "**/.git/config"),
            (".VSCode/Tasks.json", "**/.vscode/tasks.json"),
            ("MCP/.MCP.json", ".mcp.json"),
        ] {
            assert_eq!(
                compiled.matching(Path::new(spelled)),
                Some(pattern),
                "{spelled}"
            );
        }
        assert_eq!(compiled.matching(Path::new("SRC/Main.rs")), None);
    }

    #[test]
    fn git_dir_patterns_match_inside_a_git_directory() {
        let git: Vec<String> = GIT_DIR_PROTECTED.iter().map(|p| (*p).to_owned()).collect();
        let compiled = Patterns::compile(&git).unwrap();
        for hit in [
            "config",
            "hooks",
            "hooks/pre-push",
            "info/attributes",
            "modules/m/config",
            "commondir",
        ] {
            assert!(compiled.matching(Path::new(hit)).is_some(), "{hit}");
        }
        for miss in [
            "HEAD",
            "index",
            "refs/heads/main",
            "objects/ab/cd",
            "info/exclude",
            "description",
        ] {
            assert_eq!(compiled.matching(Path::new(miss)), None, "{miss}");
        }
    }

    #[test]
    fn hooks_path_is_read_from_the_core_section() {
        let cases = [
            ("[core]\n\thooksPath = .githooks\n", Some(".githooks")),
            ("[Core]\nHOOKSPATH=\"hooks dir\" # x\n", Some("hooks dir")),
            (
                "[core]\nhooksPath = a ; comment\n[core]\nhookspath = b\n",
                Some("b"),
            ),
            ("[alias]\nhooksPath = x\n", None),
            ("[core]\nbare = false\n", None),
        ];
        for (text, expected) in cases {
            assert_eq!(core_hooks_path(text).as_deref(), expected, "{text}");
        }
    }

    #[test]
    fn linkable_dirs_come_from_the_patterns() {
        let p = Protected::compile(&[
            "**/.claude/**".into(),
            ".bashrc".into(),
            "a*/x".into(),
            "/.tool/cfg".into(),
        ])
        .unwrap();
        assert_eq!(p.linkable_dirs, [".claude", ".tool"]);
    }
}
