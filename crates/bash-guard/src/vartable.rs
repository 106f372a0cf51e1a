//! The code-bearing variable table: which variables change what later commands run, what
//! setting each one does, which programs read it and how they use its value. Data and the
//! pure functions that read it; `vars` judges a command against it.

use crate::verdict::Decision;

/// What setting a variable changes for the commands after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VarEffect {
    /// `NAME` exactly, or a prefix when it ends in `*`.
    pub pattern: &'static str,
    pub decision: Decision,
    /// Completes "setting `NAME` ...".
    pub effect: &'static str,
    /// Which programs read it. A prefix assignment (`NAME=v cmd`, `env NAME=v cmd`) that no
    /// program of its command reads is an assignment and nothing more.
    pub readers: Readers,
    /// The value is a command line the reader runs through the shell (a pager, an editor,
    /// an ssh command): a prefix value known here is judged as that command instead.
    pub runs: Runs,
}

/// How a reader runs a variable's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runs {
    /// Not as a command: the entry's decision holds.
    No,
    /// As a shell command line, as it is (`PAGER`: the text arrives on standard input).
    Alone,
    /// As a shell command line followed by arguments of the reader's (`EDITOR FILE`,
    /// `GIT_SSH_COMMAND HOST CMD`), which the review does not know.
    WithArgs,
    /// Not a command but the place the reader works in (`GIT_WORK_TREE`): a path read, and
    /// written when the command writes (`GIT_WORK_TREE=/ git checkout .` writes `/`).
    Place,
    /// Options for the reader: a value made only of these (a `*` entry is a prefix, whose
    /// rest is a plain word or a number) changes nothing a review must see
    /// (`NODE_OPTIONS=--max-old-space-size=4096`, `MAKEFLAGS=-j8`); any other is the entry.
    Options(&'static [&'static str]),
}

/// node options that load or run nothing.
const NODE_PLAIN: &[&str] = &[
    "--max-old-space-size=*",
    "--max-semi-space-size=*",
    "--stack-size=*",
    "--max-http-header-size=*",
    "--enable-source-maps",
    "--no-warnings",
    "--no-deprecation",
    "--pending-deprecation",
    "--throw-deprecation",
    "--trace-warnings",
    "--trace-deprecation",
    "--trace-uncaught",
    "--trace-exit",
    "--unhandled-rejections=*",
    "--dns-result-order=*",
    "--experimental-vm-modules",
    "--use-openssl-ca",
    "--use-bundled-ca",
    "--preserve-symlinks",
    "--no-addons",
    "--zero-fill-buffers",
];
/// make options that change how it runs, not what.
const MAKE_PLAIN: &[&str] = &[
    "-j*",
    "--jobs*",
    "-k",
    "--keep-going",
    "-S",
    "--no-keep-going",
    "-s",
    "--silent",
    "--quiet",
    "-w",
    "--print-directory",
    "--no-print-directory",
    "-l*",
    "--load-average*",
    "-O*",
    "--output-sync*",
    "-r",
    "--no-builtin-rules",
    "-R",
    "--no-builtin-variables",
    "-i",
    "--ignore-errors",
];
/// JVM options that size and tune it (not -javaagent, -XX:OnError=CMD, -Djava.security...).
const JAVA_PLAIN: &[&str] = &[
    "-Xmx*",
    "-Xms*",
    "-Xss*",
    "-Dfile.encoding=*",
    "-Djava.awt.headless=*",
    "-Duser.timezone=*",
    "-Duser.language=*",
    "-XX:MaxRAMPercentage=*",
    "-XX:InitialRAMPercentage=*",
    "-XX:MaxMetaspaceSize=*",
    "-XX:ReservedCodeCacheSize=*",
    "-XX:+UseG1GC",
    "-XX:+UseParallelGC",
    "-XX:+UseSerialGC",
];
/// Warning filters whose category is a builtin one (a dotted category imports its module).
const PYTHON_WARNINGS_PLAIN: &[&str] = &[
    "ignore",
    "default",
    "error",
    "always",
    "once",
    "module",
    "ignore::*",
    "default::*",
    "error::*",
    "always::*",
    "once::*",
    "module::*",
];

/// Whether every word of `value` (split at blanks and commas) is one of `plain`.
pub(crate) fn plain_options(plain: &[&str], value: &str) -> bool {
    value
        .split([' ', '\t', ','])
        .filter(|t| !t.is_empty())
        .all(|t| {
            plain.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => t.strip_prefix(prefix).is_some_and(|rest| {
                    rest.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'='))
                        || rest.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                }),
                None => t == *p,
            })
        })
}

/// The programs that read a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readers {
    /// Every program: the dynamic loader, libc, bash's own command lookup.
    Every,
    /// The programs named (`"git"`; `"git fetch"` for one subcommand; `"-git status"` takes
    /// one out), and any program whose code the review does not see (an unknown program, a
    /// build, an interpreter, a script).
    Only(&'static [&'static str]),
    /// As `Only`, but only where the program's output may be a terminal: a pager starts
    /// nowhere else (`PAGER=cat man ls | head` starts none).
    Terminal(&'static [&'static str]),
}

const fn deny(pattern: &'static str, effect: &'static str) -> VarEffect {
    VarEffect {
        pattern,
        decision: Decision::Deny,
        effect,
        readers: Readers::Every,
        runs: Runs::No,
    }
}

const fn ask(pattern: &'static str, effect: &'static str) -> VarEffect {
    VarEffect {
        pattern,
        decision: Decision::Ask,
        effect,
        readers: Readers::Every,
        runs: Runs::No,
    }
}

impl VarEffect {
    /// The value is a command line the reader runs (see [`Runs`]).
    const fn runs(self, runs: Runs) -> VarEffect {
        VarEffect { runs, ..self }
    }

    /// The entry, read only by `programs` (see [`Readers::Only`]).
    const fn by(self, programs: &'static [&'static str]) -> VarEffect {
        VarEffect {
            readers: Readers::Only(programs),
            ..self
        }
    }

    /// The entry, read only by `programs` writing to a terminal (see [`Readers::Terminal`]).
    const fn paging(self, programs: &'static [&'static str]) -> VarEffect {
        VarEffect {
            readers: Readers::Terminal(programs),
            ..self
        }
    }
}

/// Shells: they read their start-up variables whatever they run.
const SHELLS: &[&str] = &["bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];
/// Programs that start bash for code of their own (git's hooks and aliases).
const RUN_BASH: &[&str] = &["bash", "sh", "git"];
/// git's subcommands that only read local state: they start no ssh, askpass or editor.
const GIT_NET: &[&str] = &[
    "git",
    "-git status",
    "-git rev-parse",
    "-git ls-files",
    "-git ls-tree",
    "-git branch",
    "-git tag",
    "-git config",
    "-git version",
    "-git help",
    "-git var",
    "-git check-ignore",
    "-git check-attr",
    "-git count-objects",
    "-git show-ref",
    "-git for-each-ref",
    "-git describe",
    "-git merge-base",
    "-git name-rev",
    "-git add",
    "-git diff",
    "-git log",
    "-git show",
    "-git blame",
    "-git shortlog",
    "-git grep",
    "-git stash",
    "-git reflog",
];
/// git's subcommands that never open an editor.
const GIT_EDIT: &[&str] = &[
    "git",
    "-git status",
    "-git rev-parse",
    "-git ls-files",
    "-git ls-tree",
    "-git version",
    "-git help",
    "-git var",
    "-git diff",
    "-git log",
    "-git show",
    "-git blame",
    "-git shortlog",
    "-git grep",
    "-git describe",
    "-git fetch",
    "-git push",
    "-git clone",
    "-git ls-remote",
    "-git check-ignore",
    "-git count-objects",
    "-git show-ref",
    "-git for-each-ref",
];
/// Programs that start a pager on a terminal.
const PAGING: &[&str] = &[
    "man",
    "git",
    "systemctl",
    "journalctl",
    "loginctl",
    "busctl",
    "timedatectl",
    "psql",
    "mysql",
    "bat",
    "gh",
    "less",
    "more",
    "perldoc",
    "pydoc",
    "pydoc3",
    "ri",
];
/// Programs that open an editor; git only in the subcommands that edit (as `GIT_EDIT`).
const EDITING: &[&str] = &[
    "crontab",
    "systemctl",
    "sudoedit",
    "vipw",
    "visudo",
    "less",
    "fc",
    "kubectl",
    "gh",
    "mutt",
    "edit",
    "sensible-editor",
    "git",
    "-git status",
    "-git rev-parse",
    "-git ls-files",
    "-git ls-tree",
    "-git version",
    "-git help",
    "-git var",
    "-git diff",
    "-git log",
    "-git show",
    "-git blame",
    "-git shortlog",
    "-git grep",
    "-git describe",
    "-git fetch",
    "-git push",
    "-git clone",
    "-git ls-remote",
    "-git check-ignore",
    "-git count-objects",
    "-git show-ref",
    "-git for-each-ref",
];
/// Python, and what runs it. `--version` is answered while the command line is parsed, before
/// any module is imported.
const PYTHON: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pip",
    "pip3",
    "pytest",
    "uv",
    "-python --version",
    "-python -V",
    "-python3 --version",
    "-python3 -V",
];
/// Node, and what runs it. `node --version` prints before NODE_OPTIONS' `--require` loads.
const NODE: &[&str] = &[
    "node",
    "nodejs",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "-node --version",
    "-node -v",
    "-nodejs --version",
];
const PERL: &[&str] = &["perl", "perldoc", "cpan", "prove"];
const RUBY: &[&str] = &["ruby", "gem", "bundle", "rake", "irb"];
const JAVA: &[&str] = &[
    "java", "javac", "jshell", "mvn", "gradle", "kotlin", "scala",
];

const RUNS_FILE: &str = "makes the next shell run a file of commands at start-up";
const RUNS_CMD: &str = "makes a later command run a program chosen by the value";
const LOADS_LIB: &str = "makes every later program load code from the value";
const CONFIG: &str =
    "points a later program at configuration (which can run code) chosen by the value";
const INTERP: &str = "makes an interpreter load or run code chosen by the value";

/// Variables whose value changes what later commands run. Exact names before prefixes; the
/// first match wins. Every entry has a case in `tests/corpus/variables.txt`.
pub(crate) const VAR_EFFECTS: &[VarEffect] = &[
    // Names that only describe (identity, dates, terminal prompts) are harmless.
    ask("GIT_DIR", "points git at another repository")
        .by(&["git"])
        .runs(Runs::Place),
    ask("GIT_WORK_TREE", "points git at another working tree")
        .by(&["git"])
        .runs(Runs::Place),
    ask("GIT_INDEX_FILE", "points git at another index file")
        .by(&["git"])
        .runs(Runs::Place),
    VarEffect {
        pattern: "GIT_AUTHOR_*",
        decision: Decision::Allow,
        effect: "only names the author",
        readers: Readers::Every,
        runs: Runs::No,
    },
    VarEffect {
        pattern: "GIT_COMMITTER_*",
        decision: Decision::Allow,
        effect: "only names the committer",
        readers: Readers::Every,
        runs: Runs::No,
    },
    VarEffect {
        pattern: "GIT_TERMINAL_PROMPT",
        decision: Decision::Allow,
        effect: "only stops git from prompting",
        readers: Readers::Every,
        runs: Runs::No,
    },
    // What git runs to reach a remote, to ask for a password, to show or edit text: read only
    // by the subcommands that do so.
    deny(
        "GIT_SSH_COMMAND",
        "is the ssh command git runs to reach a remote",
    )
    .by(GIT_NET)
    .runs(Runs::WithArgs),
    deny("GIT_SSH", "is the ssh program git runs to reach a remote")
        .by(GIT_NET)
        .runs(Runs::WithArgs),
    deny(
        "GIT_PROXY_COMMAND",
        "is the program git runs to connect to a remote",
    )
    .by(GIT_NET),
    deny(
        "GIT_ASKPASS",
        "is the program git runs to ask for a password",
    )
    .by(GIT_NET),
    deny("GIT_PAGER", "is the pager git runs on a terminal")
        .paging(&["git"])
        .runs(Runs::Alone),
    deny("GIT_EDITOR", "is the editor git runs")
        .by(GIT_EDIT)
        .runs(Runs::WithArgs),
    deny(
        "GIT_SEQUENCE_EDITOR",
        "is the editor git runs for a rebase todo list",
    )
    .by(GIT_EDIT)
    .runs(Runs::WithArgs),
    deny(
        "GIT_*",
        "changes which programs, hooks or configuration git runs",
    )
    .by(&["git"]),
    deny("BASH_ENV", RUNS_FILE).by(RUN_BASH),
    deny("ENV", RUNS_FILE).by(RUN_BASH),
    deny(
        "PROMPT_COMMAND",
        "runs its value as a command before each prompt",
    )
    .by(SHELLS),
    deny(
        "PS0",
        "runs the command substitutions in its value before each command",
    )
    .by(SHELLS),
    deny(
        "PS1",
        "runs the command substitutions in its value at each prompt",
    )
    .by(SHELLS),
    deny(
        "PS2",
        "runs the command substitutions in its value at each prompt",
    )
    .by(SHELLS),
    deny(
        "PS4",
        "runs the command substitutions in its value on every traced command",
    )
    .by(RUN_BASH),
    deny(
        "SHELLOPTS",
        "turns on shell options (xtrace, ...) in every later shell",
    )
    .by(RUN_BASH),
    deny("BASHOPTS", "turns on shell options in every later shell").by(RUN_BASH),
    deny(
        "BASH_FUNC_*",
        "exports a function that replaces a command in every later shell",
    )
    .by(RUN_BASH),
    deny(
        "BASH_XTRACEFD",
        "sends the trace to a file descriptor chosen by the value",
    )
    .by(RUN_BASH),
    // bash's table of remembered command paths: `BASH_CMDS[ls]=/tmp/x` makes `ls` run
    // `/tmp/x` (the same as `hash -p`); `BASH_ALIASES[ls]=..` defines an alias.
    deny(
        "BASH_CMDS",
        "makes a command name run the program its value names",
    ),
    deny(
        "BASH_ALIASES",
        "makes a command name an alias for other code",
    ),
    deny("LD_*", LOADS_LIB),
    deny("DYLD_*", LOADS_LIB),
    deny("GCONV_PATH", LOADS_LIB),
    deny("PAGER", RUNS_CMD).paging(PAGING).runs(Runs::Alone),
    deny("MANPAGER", RUNS_CMD)
        .paging(&["man"])
        .runs(Runs::Alone),
    deny("SYSTEMD_PAGER", RUNS_CMD)
        .paging(&["systemctl", "journalctl", "loginctl", "busctl"])
        .runs(Runs::Alone),
    deny("EDITOR", RUNS_CMD).by(EDITING).runs(Runs::WithArgs),
    deny("VISUAL", RUNS_CMD).by(EDITING).runs(Runs::WithArgs),
    deny("BROWSER", RUNS_CMD)
        .by(&["xdg-open", "man", "git", "open", "sensible-browser"])
        .runs(Runs::WithArgs),
    deny("TERMINAL", RUNS_CMD).by(&["xdg-open", "x-terminal-emulator", "i3-sensible-terminal"]),
    deny("SSH_ASKPASS", RUNS_CMD)
        .by(&["ssh", "scp", "sftp", "ssh-add", "rsync", "git", "sshfs"])
        .runs(Runs::WithArgs),
    deny("SUDO_ASKPASS", RUNS_CMD).by(&["sudo"]),
    deny("LESSOPEN", RUNS_CMD).paging(PAGING),
    deny("LESSCLOSE", RUNS_CMD).paging(PAGING),
    deny("RUSTC_WRAPPER", RUNS_CMD)
        .by(&["cargo"])
        .runs(Runs::WithArgs),
    deny("RUSTC", RUNS_CMD).by(&["cargo"]).runs(Runs::WithArgs),
    ask("CARGO_TARGET_DIR", "moves cargo's build output").by(&["cargo"]),
    deny("CARGO_HOME", CONFIG).by(&["cargo", "rustup"]),
    deny("CARGO_TARGET_*", "sets a runner or linker that cargo runs").by(&["cargo"]),
    deny("CARGO_BUILD_RUSTC*", RUNS_CMD)
        .by(&["cargo"])
        .runs(Runs::WithArgs),
    ask("CARGO_*", "changes how cargo builds").by(&["cargo"]),
    deny("CC", RUNS_CMD)
        .by(&["make", "cmake", "cargo", "pip", "pip3", "go"])
        .runs(Runs::WithArgs),
    deny("CXX", RUNS_CMD)
        .by(&["make", "cmake", "cargo", "pip", "pip3", "go"])
        .runs(Runs::WithArgs),
    deny(
        "MAKEFLAGS",
        "passes options (`--eval`, `-f`) to every later make",
    )
    .by(&["make", "gmake"])
    .runs(Runs::Options(MAKE_PLAIN)),
    deny(
        "MAKEFILES",
        "makes make read (and run the recipes of) the makefiles it names",
    )
    .by(&["make", "gmake"]),
    deny("XDG_CONFIG_HOME", CONFIG),
    deny("RIPGREP_CONFIG_PATH", CONFIG).by(&["rg"]),
    deny("NPM_CONFIG_*", CONFIG).by(NODE),
    deny("npm_config_*", CONFIG).by(NODE),
    deny("PIP_*", CONFIG).by(PYTHON),
    deny("WGETRC", CONFIG).by(&["wget"]),
    deny("CURL_HOME", CONFIG).by(&["curl"]),
    deny("GNUPGHOME", CONFIG).by(&["gpg", "gpg2", "gpgv", "git"]),
    deny("INPUTRC", CONFIG).by(SHELLS),
    deny("PYTHONSTARTUP", INTERP).by(PYTHON),
    deny("PYTHONPATH", INTERP).by(PYTHON),
    deny("PYTHONHOME", INTERP).by(PYTHON),
    deny("PYTHONUSERBASE", INTERP).by(PYTHON),
    deny("NODE_OPTIONS", INTERP)
        .by(NODE)
        .runs(Runs::Options(NODE_PLAIN)),
    deny("NODE_PATH", INTERP).by(NODE),
    deny("PERL5OPT", INTERP).by(PERL),
    deny("PERL5LIB", INTERP).by(PERL),
    deny("PERLLIB", INTERP).by(PERL),
    deny("RUBYOPT", INTERP).by(RUBY),
    deny("RUBYLIB", INTERP).by(RUBY),
    // Options read from the environment by the program itself: the option that runs a
    // program (`man -P`, `tar --to-command`, `rsync -e`, `unzip -d /`) can come in through
    // them, so they are an effect of that program.
    deny("MANOPT", "passes options to man, whose -P/-H run a program").by(&["man"]),
    deny(
        "TAR_OPTIONS",
        "passes options to tar, whose --to-command/-I run a program",
    )
    .by(&["tar"]),
    deny(
        "UNZIP",
        "passes options to unzip (`-d DIR` extracts anywhere, `-o` overwrites)",
    )
    .by(&["unzip", "zipinfo"]),
    deny("ZIPOPT", "passes options to zip (`-TT CMD` runs a program)").by(&["zip"]),
    ask("GZIP", "passes options to gzip, which tar and zcat run too")
        .by(&["gzip", "gunzip", "zcat", "tar"]),
    deny(
        "SHELL",
        "is the shell that `flock -c`, `script` and `parallel` run the command with",
    )
    .by(&[
        "flock", "script", "parallel", "screen", "tmux", "xterm", "vim", "vi",
    ]),
    deny("RSYNC_RSH", "is the remote shell rsync runs")
        .by(&["rsync"])
        .runs(Runs::WithArgs),
    deny("RSYNC_CONNECT_PROG", RUNS_CMD).by(&["rsync"]),
    deny(
        "ZDOTDIR",
        "makes zsh run the .zshenv of that directory at start-up",
    )
    .by(&["zsh"]),
    deny(
        "PYTHONWARNINGS",
        "imports the warning category modules it names",
    )
    .by(PYTHON)
    .runs(Runs::Options(PYTHON_WARNINGS_PLAIN)),
    deny(
        "PYTHONBREAKPOINT",
        "names a callable Python imports and runs at breakpoint()",
    )
    .by(PYTHON),
    deny("PERL5DB", INTERP).by(PERL),
    deny(
        "JAVA_TOOL_OPTIONS",
        "passes -javaagent and other options that load code to every JVM",
    )
    .by(JAVA)
    .runs(Runs::Options(JAVA_PLAIN)),
    deny(
        "_JAVA_OPTIONS",
        "passes -javaagent and other options that load code to every JVM",
    )
    .by(JAVA)
    .runs(Runs::Options(JAVA_PLAIN)),
    deny(
        "JDK_JAVA_OPTIONS",
        "passes -javaagent and other options that load code to java",
    )
    .by(JAVA)
    .runs(Runs::Options(JAVA_PLAIN)),
    ask(
        "LESS",
        "passes options to less, where `+!cmd` runs a command",
    )
    .paging(PAGING),
    ask(
        "LESSKEY",
        "gives less a key file whose bindings run commands",
    )
    .paging(PAGING),
    ask("LOCPATH", "loads locale data from another directory"),
    ask("NLSPATH", "loads message catalogs from another path"),
    ask("PATH", "changes which programs later commands run"),
    ask("CDPATH", "changes where `cd` goes").by(&["cd", "pushd"]),
    ask("HOME", "changes what `~` and configuration lookups mean"),
    ask(
        "TMPDIR",
        "changes where later programs write temporary files",
    ),
    ask("IFS", "changes how later expansions split into words"),
    ask("HISTFILE", "changes which file `history` writes").by(SHELLS),
    ask("GLOBIGNORE", "changes what globs match").by(SHELLS),
];

/// The table entry for `name`, if any.
pub(crate) fn effect(name: &str) -> Option<&'static VarEffect> {
    VAR_EFFECTS
        .iter()
        .find(|e| match e.pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => e.pattern == name,
        })
}

/// Whether `list` (see [`Readers::Only`]) names `program`, or its subcommand `sub`; an
/// exclusion (`-git status`) names the subcommand or the whole command `line`.
pub(crate) fn listed(list: &[&str], program: &str, sub: Option<&str>, line: Option<&str>) -> bool {
    let full = sub.map(|s| format!("{program} {s}"));
    if list
        .iter()
        .filter_map(|e| e.strip_prefix('-'))
        .any(|e| full.as_deref() == Some(e) || line == Some(e))
    {
        return false;
    }
    list.iter()
        .any(|e| *e == program || full.as_deref() == Some(*e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_win_over_prefixes() {
        assert_eq!(effect("GIT_DIR").unwrap().decision, Decision::Ask);
        assert_eq!(effect("GIT_AUTHOR_NAME").unwrap().decision, Decision::Allow);
        assert_eq!(effect("GIT_SSH_COMMAND").unwrap().decision, Decision::Deny);
        assert_eq!(effect("LD_PRELOAD").unwrap().decision, Decision::Deny);
        assert!(effect("MY_VAR").is_none());
    }

    #[test]
    fn readers_name_programs_and_subcommands() {
        assert!(listed(GIT_NET, "git", Some("fetch"), None));
        assert!(listed(GIT_NET, "git", Some("frobnicate"), None));
        assert!(!listed(GIT_NET, "git", Some("status"), None));
        assert!(listed(GIT_NET, "git", None, None));
        assert!(!listed(GIT_NET, "ls", None, None));
        assert!(!listed(NODE, "node", None, Some("node --version")));
        assert!(plain_options(
            NODE_PLAIN,
            "--max-old-space-size=4096 --no-warnings"
        ));
        assert!(!plain_options(
            NODE_PLAIN,
            "--max-old-space-size=4096 --require ./x.js"
        ));
        assert!(plain_options(MAKE_PLAIN, "-j8 --no-print-directory"));
        assert!(!plain_options(MAKE_PLAIN, "--eval=x"));
        assert!(plain_options(
            PYTHON_WARNINGS_PLAIN,
            "ignore::DeprecationWarning,default"
        ));
        assert!(!plain_options(PYTHON_WARNINGS_PLAIN, "ignore::evil.W"));
        assert!(plain_options(
            JAVA_PLAIN,
            "-Xmx2g -XX:MaxRAMPercentage=75.0"
        ));
        assert!(!plain_options(JAVA_PLAIN, "-XX:OnError=sh"));
        assert!(listed(NODE, "node", None, Some("node a.js")));
    }
}
