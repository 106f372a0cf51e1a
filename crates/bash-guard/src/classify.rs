//! Knowledge of commands: which are read-only, which options make them write or run code,
//! which wrap another command, which are catastrophic.

use std::path::Path;

use crate::analyze::{StdinKind, Walker, display_words};
use crate::judge::PathAccess;
use crate::verdict::Decision;
use crate::words::Decoded;

/// Read-only whatever their arguments (no paths, no writing options).
const PURE: &[&str] = &[
    "echo",
    "printf",
    "pwd",
    "true",
    "false",
    ":",
    "sleep",
    "whoami",
    "id",
    "uname",
    "nproc",
    "seq",
    "expr",
    "test",
    "[",
    "basename",
    "dirname",
    "printenv",
    "which",
    "type",
    "locale",
    "arch",
    "groups",
    "tty",
    "uptime",
    "free",
    "cal",
    "getconf",
    "logname",
    "users",
    "who",
    "ps",
    "jobs",
    "exit",
    "return",
    "break",
    "continue",
    "shift",
    "wait",
    "unset",
    "set",
    "shopt",
    "read",
    "getopts",
    "umask",
    "ulimit",
    "let",
    "dirs",
    "times",
    "caller",
    "tr",
    "yes",
    "env-print",
    "hash",
    "help",
    "realpath",
    "readlink",
    "df",
    "history",
    "mapfile",
    "readarray",
    "declare",
    "typeset",
    "local",
    "readonly",
    "export",
];

/// Readers: every positional argument is a path that is read.
const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "wc",
    "ls",
    "stat",
    "file",
    "du",
    "diff",
    "cmp",
    "comm",
    "join",
    "paste",
    "nl",
    "tac",
    "rev",
    "od",
    "hexdump",
    "strings",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "sha224sum",
    "sha384sum",
    "b2sum",
    "cksum",
    "sum",
    "base64",
    "base32",
    "fold",
    "fmt",
    "expand",
    "unexpand",
    "cut",
    "column",
    "numfmt",
    "tree",
    "zcat",
    "look",
    "tsort",
    "uniq",
    "sort",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "jq",
    "xxd",
    "bat",
    "info",
    "shasum",
    "lsattr",
];

const PRIVILEGE: &[&str] = &[
    "sudo", "su", "doas", "pkexec", "run0", "chroot", "setcap", "visudo", "passwd", "chpasswd",
    "useradd", "userdel", "usermod", "groupadd", "groupdel", "newgrp", "sg",
];
const SYSTEM: &[&str] = &[
    "mkfs",
    "mke2fs",
    "mkswap",
    "fdisk",
    "sfdisk",
    "cfdisk",
    "parted",
    "gdisk",
    "sgdisk",
    "cgdisk",
    "cryptsetup",
    "lvremove",
    "vgremove",
    "pvremove",
    "wipefs",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "telinit",
    "kexec",
    "swapoff",
    "swapon",
    "mount",
    "umount",
    "insmod",
    "rmmod",
    "modprobe",
    "iptables",
    "ip6tables",
    "nft",
    "ufw",
    "sysctl",
    "crontab",
    "at",
    "batch",
    "killall5",
    "timedatectl",
    "hwclock",
    "systemctl",
    "service",
    "apt",
    "apt-get",
    "dpkg",
    "yum",
    "dnf",
    "rpm",
    "pacman",
    "zypper",
    "apk",
    "snap",
    "launchctl",
    "dmsetup",
    "losetup",
    "cryptsetup",
    "debugfs",
    "blkdiscard",
    "hdparm",
];
const INTERACTIVE: &[&str] = &[
    "vi",
    "vim",
    "nvim",
    "view",
    "vimdiff",
    "nano",
    "pico",
    "emacs",
    "joe",
    "mcedit",
    "micro",
    "less",
    "more",
    "most",
    "pg",
    "man",
    "top",
    "htop",
    "btop",
    "atop",
    "iotop",
    "glances",
    "nmon",
    "tmux",
    "screen",
    "mc",
    "ranger",
    "nnn",
    "vifm",
    "tig",
    "lazygit",
    "fzf",
    "dialog",
    "whiptail",
    "fc",
    "ed",
    "ex",
    "irb",
    "ghci",
    "sqlite3",
    "mysql",
    "psql",
    "redis-cli",
    "mongo",
];
const NETWORK: &[&str] = &[
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "ssh",
    "scp",
    "sftp",
    "telnet",
    "ftp",
    "tftp",
    "lftp",
    "dig",
    "nslookup",
    "host",
    "whois",
    "ping",
    "ping6",
    "traceroute",
    "mtr",
    "nmap",
    "aria2c",
    "http",
    "https",
    "ssh-keyscan",
    "ssh-copy-id",
    "rsh",
    "rlogin",
    "mosh",
    "httpie",
    "xh",
    "axel",
    "ncftp",
    "smbclient",
    "openssl",
    "gh",
    "hub",
];
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "csh", "tcsh", "busybox",
];
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "perl",
    "node",
    "nodejs",
    "ruby",
    "php",
    "lua",
    "luajit",
    "Rscript",
    "deno",
    "bun",
    "tclsh",
    "osascript",
    "pwsh",
    "powershell",
    "julia",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "java",
    "jshell",
    "groovy",
    "scala",
    "erl",
    "elixir",
    "guile",
    "racket",
];
/// Builds and tests: side effects inside the project.
const BUILD: &[&str] = &[
    "cargo",
    "make",
    "cmake",
    "ninja",
    "meson",
    "rustc",
    "rustup",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "ld",
    "go",
    "javac",
    "mvn",
    "gradle",
    "pytest",
    "tox",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "pip",
    "pip3",
    "poetry",
    "uv",
    "bundle",
    "gem",
    "rake",
    "docker",
    "podman",
    "kubectl",
    "terraform",
    "dotnet",
    "swift",
    "zig",
    "bazel",
    "mix",
    "stack",
    "cabal",
];
/// Writers: positionals are paths written.
const WRITERS: &[&str] = &[
    "rm",
    "rmdir",
    "mkdir",
    "touch",
    "chmod",
    "chown",
    "chgrp",
    "truncate",
    "shred",
    "unlink",
    "mkfifo",
    "mknod",
    "cp",
    "mv",
    "ln",
    "install",
    "tee",
    "split",
    "csplit",
    "patch",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "bzip2",
    "xz",
    "unxz",
    "zstd",
    "rsync",
    "dd",
    "sed",
    "kill",
    "pkill",
    "killall",
    "xdg-open",
    "open",
    "date",
    "hostname",
    "git",
    "find",
    "xargs",
    "env",
    "timeout",
    "nice",
    "nohup",
    "stdbuf",
    "command",
    "builtin",
    "exec",
    "time",
    "watch",
    "eval",
    "source",
    ".",
    "cd",
    "pushd",
    "popd",
    "alias",
    "trap",
    "ionice",
    "chrt",
    "taskset",
    "flock",
    "setsid",
    "unbuffer",
    "script",
    "strace",
    "ltrace",
    "gdb",
    "nsenter",
    "unshare",
    "firejail",
    "caffeinate",
];

/// Whether a function with this name would shadow a command this crate knows about.
pub(crate) fn is_known_command(name: &str) -> bool {
    [
        PURE,
        READERS,
        PRIVILEGE,
        SYSTEM,
        INTERACTIVE,
        NETWORK,
        SHELLS,
        INTERPRETERS,
        BUILD,
        WRITERS,
    ]
    .iter()
    .any(|list| list.contains(&name))
        || crate::table::spec(name).is_some()
        || name.starts_with("mkfs.")
}

pub(crate) fn check_env_name(w: &mut Walker<'_>, name: &str, sub: &str) {
    crate::vars::check_set(w, name, sub);
}

/// Credential stores, by absolute lexically-normalised path.
pub(crate) fn credential_store(abs: &Path, home: Option<&str>) -> Option<&'static str> {
    let s = abs.to_str()?;
    const SYSTEM_SECRETS: &[&str] = &[
        "/etc/shadow",
        "/etc/gshadow",
        "/etc/sudoers",
        "/etc/shadow-",
        "/etc/master.passwd",
    ];
    if SYSTEM_SECRETS
        .iter()
        .any(|p| s == *p || s.starts_with(&format!("{p}/")))
        || s.starts_with("/etc/ssh/ssh_host_")
    {
        return Some("a system credential store");
    }
    const HOME_SECRETS: &[&str] = &[
        ".ssh",
        ".aws",
        ".config/gcloud",
        ".gnupg",
        ".kube",
        ".docker/config.json",
        ".netrc",
        ".git-credentials",
        ".pgpass",
        ".azure",
        ".config/gh",
        ".npmrc",
        ".pypirc",
        ".cargo/credentials",
        ".cargo/credentials.toml",
        ".password-store",
        ".vault-token",
        ".terraform.d/credentials.tfrc.json",
    ];
    let under = |base: &str| {
        HOME_SECRETS.iter().any(|p| {
            let full = format!("{base}/{p}");
            s == full || s.starts_with(&format!("{full}/"))
        })
    };
    if let Some(h) = home
        && under(h.trim_end_matches('/'))
    {
        return Some("a credential store in the home directory");
    }
    // Other users' homes and root's too.
    let mut parts = s.split('/').skip(1);
    if let (Some("home"), Some(user)) = (parts.next(), parts.next())
        && under(&format!("/home/{user}"))
    {
        return Some("a credential store in a home directory");
    }
    if under("/root") {
        return Some("root's credential store");
    }
    None
}

/// Files that run code later when written (shell rc files, git hooks and config).
pub(crate) fn runs_code_later(abs: &Path) -> Option<&'static str> {
    const RC: &[&str] = &[
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
        ".inputrc",
        ".kshrc",
        ".cshrc",
        ".tcshrc",
        ".xprofile",
        ".xinitrc",
        ".envrc",
    ];
    let name = abs.file_name()?.to_str()?;
    if RC.contains(&name) {
        return Some("a shell startup file");
    }
    let s = abs.to_str()?;
    if s.contains("/.git/hooks/") || s.ends_with("/.git/hooks") || s.ends_with("/.git/config") {
        return Some("git configuration or a git hook");
    }
    if s.contains("/.config/fish/")
        || s.starts_with("/etc/profile")
        || s.starts_with("/etc/bash")
        || s.contains("/.config/autostart/")
        || s.contains("/.config/systemd/")
    {
        return Some("a startup file");
    }
    None
}

fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Finding codes of commands whose arguments run as code this analyzer does not read: their
/// text goes through the catastrophic-text backstop.
const OPAQUE: &[&str] = &[
    "unknown_command",
    "runs_program",
    "inline_code",
    "interpreter",
    "runs_script",
    "wrapper",
    "traces",
];

/// Whether a yq expression calls `load(...)`, `load_str(...)` or another `load_*` operator,
/// which read the file they name (a field such as `.download_url` does not).
fn yq_loads(expr: &str) -> bool {
    expr.match_indices("load").any(|(i, _)| {
        let before = expr.get(..i).and_then(|b| b.chars().next_back());
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return false;
        }
        let rest = expr.get(i + 4..).unwrap_or("");
        let rest = rest.strip_prefix('_').map_or(rest, |r| {
            r.trim_start_matches(|c: char| c.is_ascii_alphanumeric())
        });
        rest.trim_start().starts_with('(')
    })
}

/// Classifies one decoded simple command.
pub(crate) fn classify(w: &mut Walker<'_>, argv: &[Decoded], sub: &str, stdin: &StdinKind) {
    let before = w.findings.len();
    classify_inner(w, argv, sub, stdin);
    let new = w.findings.get(before..).unwrap_or(&[]);
    let opaque = new.iter().any(|f| OPAQUE.contains(&f.code));
    if opaque && new.iter().all(|f| f.decision != Decision::Deny) {
        let mut text = sub.to_owned();
        if let StdinKind::Literal(t) = stdin {
            text.push('\n');
            text.push_str(t);
        }
        // `bash <(echo 'rm -rf ~')`: the script is a process substitution's output, spelled
        // in the command string being walked.
        if sub.contains("/dev/fd/")
            && let Some(source) = w.sources.last()
        {
            text.push('\n');
            text.push_str(source);
        }
        if let Some(what) = crate::backstop::catastrophic(&text) {
            w.add(
                Decision::Deny,
                "catastrophic_text",
                sub,
                format!("code this command runs holds {what}"),
            );
        }
    }
}

/// Programs that run the rest of their arguments as a command line: busybox and toybox
/// applets, the dynamic loader, `/proc/self/exe` (the shell itself).
fn runs_argv(raw: &str, name: &str) -> bool {
    matches!(name, "busybox" | "toybox")
        || name.starts_with("ld-linux")
        || name == "ld.so"
        || (name.starts_with("ld-") && name.contains(".so"))
        || raw == "/proc/self/exe"
        || raw.starts_with("/proc/") && raw.ends_with("/exe")
}

fn classify_inner(w: &mut Walker<'_>, argv: &[Decoded], sub: &str, stdin: &StdinKind) {
    let Some(first) = argv.first() else { return };
    if first.dynamic {
        w.add(
            Decision::Deny,
            "dynamic_command",
            sub,
            "the command name is only known at run time (a variable or command substitution), so it cannot be reviewed".to_owned(),
        );
        return;
    }
    let raw = first.text.as_str();
    let name = base_name(raw);
    let args = argv.get(1..).unwrap_or(&[]);
    if runs_argv(raw, name) {
        if raw.starts_with("/proc/") {
            return shell(w, "bash", args, sub, stdin);
        }
        // The loader's own options come first; `--preload`/`--audit` load code.
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if matches!(
                t,
                "--preload" | "--audit" | "--library-path" | "--inhibit-rpath" | "--argv0"
            ) {
                if t != "--library-path" && t != "--argv0" {
                    w.add(
                        Decision::Deny,
                        "loads_library",
                        sub,
                        format!("`{name} {t}` loads a library into the program"),
                    );
                    return;
                }
                i += 2;
                continue;
            }
            if t.starts_with("--") {
                i += 1;
                continue;
            }
            break;
        }
        return run_inner(w, args.get(i..).unwrap_or(&[]), sub, stdin, name);
    }
    if let Some(done) = special(w, name, args, sub, stdin) {
        return done;
    }
    // A jq program that imports or includes a module reads a file named inside the program
    // (`import "/home/u/.docker/config" as $c;` loads that JSON), which the table cannot see.
    // The Go yq's `load("FILE")` (and its `load_str`, `load_xml` ...) reads FILE the same way.
    if matches!(name, "jq" | "yq")
        && args.iter().any(|a| {
            let t = a.text.as_str();
            t.contains("import")
                || t.contains("include")
                || t.contains("modulemeta")
                || (name == "yq" && yq_loads(t))
        })
    {
        w.add(
            Decision::Ask,
            "jq_module",
            sub,
            "the `jq` program imports or includes a module file, which is not reviewed here"
                .to_owned(),
        );
    }
    // A recursive search narrowed to secret files (`grep -r KEY --include=.env .`,
    // `rg -g '.env*' KEY`) reads exactly those files.
    if matches!(name, "grep" | "egrep" | "fgrep" | "rg" | "ag") {
        let mut prev: Option<&str> = None;
        for a in args {
            let t = a.text.as_str();
            let glob = t
                .strip_prefix("--include=")
                .or_else(|| t.strip_prefix("--glob="))
                .or_else(|| t.strip_prefix("--iglob="))
                .or_else(|| t.strip_prefix("-g").filter(|g| !g.is_empty()))
                .or_else(|| {
                    matches!(prev, Some("--include" | "-g" | "--glob" | "--iglob")).then_some(t)
                });
            prev = Some(t);
            if let Some(g) = glob
                && let Some(secret) = SECRET_NAMES
                    .iter()
                    .find(|n| glob_match(g.trim_start_matches('!'), n, true))
                && !g.starts_with('!')
            {
                w.add(
                    Decision::Ask,
                    "secret_file",
                    sub,
                    format!("`{name}` searches only files named like `{secret}`, which usually hold secrets (API keys, passwords)"),
                );
                break;
            }
        }
    }
    // A command the table denies is denied by any path to it (`./target/debug/agent-guard`).
    if let Some(spec) = crate::table::spec(name)
        && spec.class == crate::table::Class::Deny
    {
        return table_command(w, name, spec, args, sub);
    }
    // `./tool`, `bin/tool`, or an absolute path inside the project: project code, whatever
    // its name (a `bin/ls` there is not the system `ls`).
    let project_code = raw.contains('/')
        && (!raw.starts_with('/') || {
            let cwd = w
                .cwd
                .clone()
                .unwrap_or_else(|| std::path::PathBuf::from("/"));
            w.judged = true;
            matches!(
                w.judge.judge(raw, PathAccess::Read, &cwd),
                crate::judge::PathVerdict::Inside | crate::judge::PathVerdict::Root
            ) && !raw.starts_with("/usr/")
                && !raw.starts_with("/bin/")
                && !raw.starts_with("/sbin/")
        });
    if project_code {
        w.add(
            Decision::Ask,
            "runs_program",
            sub,
            format!("runs `{raw}`, project code that cannot be reviewed"),
        );
        return;
    }
    if raw.contains('/') && !is_known_command(name) {
        w.add(
            Decision::Ask,
            "runs_program",
            sub,
            format!("runs the program `{raw}`, which cannot be reviewed"),
        );
        return;
    }
    if w.an.config.deny_commands.iter().any(|d| d == name) {
        w.add(
            Decision::Deny,
            "policy_deny",
            sub,
            format!("the policy denies `{name}`"),
        );
        return;
    }
    if w.an.config.ask_commands.iter().any(|d| d == name) {
        w.add(
            Decision::Ask,
            "policy_ask",
            sub,
            format!("the policy asks before `{name}`"),
        );
    }
    if w.functions.contains(name) {
        w.add(
            Decision::Allow,
            "function_call",
            sub,
            format!("calls the function `{name}` defined above"),
        );
        return;
    }
    if !raw.contains('/') && crate::builtins::builtin(w, name, args, sub, stdin) {
        return;
    }
    let dyn_args = args.iter().any(|a| a.dynamic);
    // The command table decides for the commands it describes; a `fallback` entry only for the
    // forms it claims (`cargo metadata`, `top -b`), the rest left to the lists below.
    if !matches!(name, "find" | "sed")
        && !PRIVILEGE.contains(&name)
        && let Some(spec) = crate::table::spec(name)
        && crate::table::claims(spec, args)
    {
        if dyn_args {
            dynamic_args(w, sub, name);
        }
        return table_command(w, name, spec, args, sub);
    }
    if PRIVILEGE.contains(&name) {
        w.add(
            Decision::Deny,
            "privilege_escalation",
            sub,
            format!("`{name}` runs with other privileges"),
        );
        return;
    }
    if SYSTEM.contains(&name) || name.starts_with("mkfs.") {
        if name == "crontab" && args.iter().all(|a| a.text == "-l") && !args.is_empty() {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "lists the crontab".to_owned(),
            );
            return;
        }
        w.add(
            Decision::Deny,
            "system_change",
            sub,
            format!(
                "`{name}` changes the system (disks, boot, services, packages or scheduled jobs)"
            ),
        );
        return;
    }
    if INTERACTIVE.contains(&name) {
        w.add(
            Decision::Deny,
            "interactive",
            sub,
            format!("`{name}` is interactive and needs a terminal the agent does not have"),
        );
        return;
    }
    if NETWORK.contains(&name) {
        // A client the command table describes (curl, wget: `class = "network"`) has the files
        // its options name judged too; the table's class still leaves the transfer to the
        // network policy.
        if let Some(spec) = crate::table::spec(name) {
            if dyn_args {
                dynamic_args(w, sub, name);
            }
            return table_command(w, name, spec, args, sub);
        }
        network(w, sub, name);
        return;
    }
    if PURE.contains(&name) {
        match name {
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for a in args {
                    if let Some((n, _)) = a.text.split_once('=') {
                        check_env_name(w, n, sub);
                    }
                }
            }
            "hash" if args.iter().any(|a| a.text.starts_with("-p")) => {
                w.add(
                    Decision::Ask,
                    "hash_alias",
                    sub,
                    "`hash -p` makes a name run another program".to_owned(),
                );
                return;
            }
            _ => {}
        }
        w.add(
            Decision::Allow,
            "read_only",
            sub,
            format!("`{name}` only prints or inspects"),
        );
        return;
    }
    if SHELLS.contains(&name) {
        shell(w, name, args, sub, stdin);
        return;
    }
    if matches!(name, "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk") {
        return crate::awk::awk(w, name, args, sub);
    }
    if INTERPRETERS.contains(&name) {
        let code: String = args
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let piped = match stdin {
            StdinKind::Literal(t) => t.as_str(),
            _ => "",
        };
        if let Some(what) = crate::backstop::catastrophic(&format!("{code}\n{piped}")) {
            w.add(
                Decision::Deny,
                "catastrophic_text",
                sub,
                format!("the code `{name}` runs holds {what}"),
            );
            return;
        }
        let inline = args.iter().any(|a| {
            matches!(
                a.text.as_str(),
                "-c" | "-e" | "-E" | "-r" | "--eval" | "-p" | "--print"
            )
        });
        let (code, msg) = if name.contains("awk") {
            (
                "awk_program",
                "an awk program can run commands and write files (`system()`, `print >`)"
                    .to_owned(),
            )
        } else if inline {
            (
                "inline_code",
                format!("`{name}` runs inline code that this analyzer does not review"),
            )
        } else {
            (
                "interpreter",
                format!("`{name}` runs a program that this analyzer does not review"),
            )
        };
        w.add(Decision::Ask, code, sub, msg);
        if let Some(a) = args.iter().find(|a| !a.text.starts_with('-')) {
            w.path(a, PathAccess::Read, sub, "program");
        }
        return;
    }
    if READERS.contains(&name) {
        reader(w, name, args, sub, dyn_args);
        return;
    }
    if BUILD.contains(&name) {
        build(w, name, args, sub);
        return;
    }
    if WRITERS.contains(&name) {
        writer(w, name, args, sub, stdin, dyn_args);
        return;
    }
    w.add(
        Decision::Ask,
        "unknown_command",
        sub,
        format!("`{name}` is not a command this analyzer knows to be read-only"),
    );
}

pub(crate) fn network(w: &mut Walker<'_>, sub: &str, what: &str) {
    if w.an.config.block_network {
        w.add(Decision::Deny, "network", sub, format!("`{what}` uses the network, which is blocked (to be asked instead: `block_network = false` under [bash] in the policy, or AGENT_BLOCK_NETWORK=false in the environment the agent runs in)"));
    } else {
        w.add(
            Decision::Ask,
            "network",
            sub,
            format!("`{what}` uses the network"),
        );
    }
}

pub(crate) fn dynamic_args(w: &mut Walker<'_>, sub: &str, name: &str) {
    w.add(Decision::Ask, "dynamic_argument", sub, format!("an argument of `{name}` is only known at run time; it could be an option that writes or runs code"));
}

/// Commands whose read-only forms are known (false denies otherwise), and wrappers that run
/// a command string. `None` leaves the command to the lists.
fn special(
    w: &mut Walker<'_>,
    name: &str,
    args: &[Decoded],
    sub: &str,
    stdin: &StdinKind,
) -> Option<()> {
    let first = args
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str());
    let has = |o: &str| args.iter().any(|a| a.text == o);
    let only_version = !args.is_empty()
        && args.iter().all(|a| {
            !a.dynamic
                && matches!(
                    a.text.as_str(),
                    "--version" | "-V" | "-v" | "--help" | "-h" | "version"
                )
        });
    match name {
        // An interactive program's own `--version` or `--help` only prints (`vim --version`,
        // `psql --help`); its short forms mean other things (`vim -v` is Vi mode).
        _ if INTERACTIVE.contains(&name)
            && !args.is_empty()
            && args
                .iter()
                .all(|a| !a.dynamic && matches!(a.text.as_str(), "--version" | "--help")) =>
        {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                format!("`{name}` only prints its version or help"),
            );
        }
        _ if only_version && (INTERPRETERS.contains(&name) || BUILD.contains(&name)) => {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                format!("`{name}` only prints its version or help"),
            );
        }
        "unzip"
            if args.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "-l" | "-v" | "-t" | "-Z" | "-lv" | "-tq" | "-lq"
                )
            }) && !args.iter().any(|a| a.dynamic || a.text == "-d") =>
        {
            if let Some(f) = args.iter().find(|a| !a.text.starts_with('-')) {
                w.path(f, PathAccess::Read, sub, "archive");
            }
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "`unzip` only lists or tests the archive".to_owned(),
            );
        }
        "man"
            if !args.iter().any(|a| {
                a.dynamic
                    || matches!(
                        a.text.as_str(),
                        "-P" | "--pager"
                            | "-H"
                            | "--html"
                            | "-l"
                            | "--local-file"
                            | "-C"
                            | "--config-file"
                    )
                    || a.text.starts_with("--pager=")
                    || a.text.starts_with("-P")
                    // `--html=BROWSER` and `-HBROWSER` run the browser; `-lFILE`, `-CFILE`,
                    // `--config-file=F`, `--local-file` abbreviations and every other long
                    // option with a value (`--preprocessor=`, `--troff-device=`) are not
                    // a plain page lookup.
                    || a.text.starts_with("--html")
                    || a.text.starts_with("-H")
                    || a.text.starts_with("--loc")
                    || a.text.starts_with("--con")
                    || a.text.starts_with("--pa")
                    || a.text.starts_with("--pr")
                    || (a.text.starts_with("-l") && !a.text.starts_with("--"))
                    || (a.text.starts_with("-C") && !a.text.starts_with("--"))
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.get(1..).is_some_and(|c| c.contains(['P', 'H', 'l', 'C', 'p', 'X', 'Z', 't', 'T'])))
            }) =>
        {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "`man` prints a manual page".to_owned(),
            );
        }
        "systemctl"
            if matches!(
                first,
                Some(
                    "status"
                        | "show"
                        | "cat"
                        | "list-units"
                        | "list-unit-files"
                        | "list-timers"
                        | "list-sockets"
                        | "is-active"
                        | "is-enabled"
                        | "is-failed"
                        | "list-dependencies"
                        | "help"
                )
            ) =>
        {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "this `systemctl` subcommand only reports".to_owned(),
            );
        }
        "openssl"
            if matches!(
                first,
                Some(
                    "x509"
                        | "req"
                        | "version"
                        | "list"
                        | "asn1parse"
                        | "verify"
                        | "crl"
                        | "pkey"
                        | "rsa"
                        | "ec"
                        | "dgst"
                        | "ciphers"
                        | "errstr"
                        | "pkcs7"
                        | "pkcs12"
                        | "storeutl"
                        | "help"
                        | "md5"
                        | "sha1"
                        | "sha224"
                        | "sha256"
                        | "sha384"
                        | "sha512"
                        | "base64"
                        | "rand"
                        | "prime"
                        | "passwd"
                )
            ) && !args.iter().any(|a| {
                a.dynamic
                    || matches!(
                        openssl_option(&a.text).0,
                        "-engine"
                            | "-provider"
                            | "-provider-path"
                            | "-keyout"
                            | "-signkey"
                            | "-new"
                            | "-newkey"
                            | "-export"
                            | "-rand"
                            | "-writerand"
                            | "-config"
                            | "-sign"
                    )
            }) =>
        {
            // OpenSSL 3 reads `-opt VALUE`, `-opt=VALUE` and `--opt`; every operand and every
            // value that may name a file is judged (`-passin file:PATH` reads PATH).
            let mut i = 1;
            while let Some(a) = args.get(i) {
                i += 1;
                let (opt, attached) = openssl_option(&a.text);
                if opt.is_empty() {
                    w.path(a, PathAccess::Read, sub, "openssl input");
                    continue;
                }
                let role = match opt {
                    "-in" | "-CAfile" | "-CApath" | "-inkey" | "-key" | "-CAkey" | "-CA"
                    | "-cert" | "-certfile" | "-signature" | "-prverify" | "-verify"
                    | "-untrusted" | "-kfile" | "-genconf" | "-oid" | "-CAserial"
                    | "-extfile" | "-chainCAfile" | "-crl" | "-nameopt_file" => {
                        Some(PathAccess::Read)
                    }
                    "-out" => Some(PathAccess::Write),
                    "-passin" | "-passout" | "-pass" | "-password" => None,
                    // Flags and values that are not files (-subj, -days, -noout, -sha256 ...).
                    _ => continue,
                };
                let value = crate::words::option_value(a, attached, true, args, &mut i);
                let Some(value) = value else { continue };
                match role {
                    Some(access) => w.path(&value, access, sub, "openssl file"),
                    None => {
                        if let Some(path) = value.text.strip_prefix("file:") {
                            let d = Decoded {
                                text: path.to_owned(),
                                ..value.clone()
                            };
                            w.path(&d, PathAccess::Read, sub, "openssl password file");
                        }
                    }
                }
            }
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "this `openssl` subcommand only reads and prints".to_owned(),
            );
        }
        // Only the TLS clients and servers talk to the network; the rest make keys, encrypt
        // or convert files, which a person reviews.
        "openssl" if !matches!(first, Some("s_client" | "s_server" | "s_time" | "ocsp")) => {
            w.add(
                Decision::Ask,
                "writes_files",
                sub,
                "this `openssl` subcommand may make keys or write files".to_owned(),
            );
        }
        "sqlite3" if has("-readonly") => {
            let operands: Vec<&Decoded> =
                args.iter().filter(|a| !a.text.starts_with('-')).collect();
            // Every operand after the database is run in turn: SQL, or a dot-command
            // (`.shell`, `.load`, `.output`) when it starts with `.`; each must be one
            // plain query (a second statement after `;` could be `VACUUM INTO 'file'`).
            let safe = |sql: &str| {
                let q = sql.to_ascii_lowercase();
                let q = q.trim_start();
                let one_statement = q
                    .split_once(';')
                    .is_none_or(|(_, rest)| rest.trim().is_empty());
                one_statement
                    && (q.starts_with("select")
                        || q.starts_with("explain")
                        || q.starts_with("with"))
                    && ![
                        "load_extension",
                        "writefile",
                        "readfile",
                        "edit(",
                        "fts3_tokenizer",
                        "attach",
                        ".shell",
                        ".system",
                        "zipfile",
                        "vacuum",
                    ]
                    .iter()
                    .any(|bad| q.contains(bad))
            };
            let safe_sql = operands.len() >= 2 && operands.iter().skip(1).all(|a| safe(&a.text));
            if !safe_sql
                || operands.iter().any(|a| a.dynamic)
                || args
                    .iter()
                    .any(|a| matches!(a.text.as_str(), "-cmd" | "-init" | "-interactive"))
            {
                w.add(
                    Decision::Ask,
                    "database",
                    sub,
                    "`sqlite3` with SQL that is not a plain read-only query".to_owned(),
                );
            } else {
                if let Some(db) = operands.first() {
                    w.path(db, PathAccess::Read, sub, "database");
                }
                w.add(
                    Decision::Allow,
                    "read_only",
                    sub,
                    "a read-only query on a read-only database".to_owned(),
                );
            }
        }
        "psql" | "mysql" | "sqlite3"
            if has("-c")
                || has("-e")
                || args.iter().any(|a| a.text.starts_with("--command"))
                || (name == "sqlite3" && args.len() >= 2) =>
        {
            w.add(
                Decision::Ask,
                "database",
                sub,
                format!("`{name}` runs a query against a database"),
            );
        }
        n if (n == "mkfs" || n.starts_with("mkfs.") || n == "mke2fs" || n == "mkswap")
            && args.last().is_some_and(|a| {
                !a.dynamic && !a.text.starts_with("/dev/") && !a.text.starts_with('-')
            }) =>
        {
            if let Some(img) = args.last() {
                w.path(img, PathAccess::Write, sub, "file-system image");
            }
            w.add(
                Decision::Ask,
                "writes_files",
                sub,
                format!("`{name}` formats an image file"),
            );
        }
        "flock" => {
            // flock [options] FILE|DIR (-c CMD | CMD ARGS...) ; flock [options] FD
            let mut i = 0;
            while let Some(a) = args.get(i) {
                let t = a.text.as_str();
                if a.dynamic {
                    dynamic_wrapped(w, sub, name);
                    return Some(());
                }
                if matches!(t, "-c" | "--command") {
                    match args.get(i + 1) {
                        Some(c) if !c.dynamic => w.script(&c.text.clone(), stdin.clone()),
                        _ => dynamic_wrapped(w, sub, name),
                    }
                    return Some(());
                }
                if matches!(
                    t,
                    "-w" | "--wait" | "--timeout" | "-E" | "--conflict-exit-code"
                ) {
                    i += 2;
                    continue;
                }
                if t.starts_with('-') {
                    i += 1;
                    continue;
                }
                break;
            }
            let lock = args.get(i);
            let rest = args.get(i + 1..).unwrap_or(&[]);
            if let Some(l) = lock
                && !l.text.bytes().all(|b| b.is_ascii_digit())
            {
                w.path(l, PathAccess::Write, sub, "lock file");
            }
            match rest.first() {
                Some(c) if matches!(c.text.as_str(), "-c" | "--command") => match rest.get(1) {
                    Some(c) if !c.dynamic => w.script(&c.text.clone(), stdin.clone()),
                    _ => dynamic_wrapped(w, sub, name),
                },
                Some(_) => run_inner(w, rest, sub, stdin, name),
                None => w.add(Decision::Allow, "read_only", sub, "takes a lock".to_owned()),
            }
        }
        "script" => {
            let mut i = 0;
            let mut out: Option<&Decoded> = None;
            let mut ran = false;
            while let Some(a) = args.get(i) {
                let t = a.text.as_str();
                i += 1;
                if matches!(t, "-c" | "--command") {
                    match args.get(i) {
                        Some(c) if !c.dynamic => w.script(&c.text.clone(), StdinKind::Terminal),
                        _ => dynamic_wrapped(w, sub, name),
                    }
                    ran = true;
                    i += 1;
                } else if matches!(
                    t,
                    "-I" | "-O"
                        | "-B"
                        | "-T"
                        | "-t"
                        | "--log-in"
                        | "--log-out"
                        | "--log-io"
                        | "--log-timing"
                ) {
                    if let Some(f) = args.get(i) {
                        w.path(f, PathAccess::Write, sub, "script log");
                    }
                    i += 1;
                } else if !t.starts_with('-') {
                    out = Some(a);
                }
            }
            let typescript = Decoded {
                text: "typescript".to_owned(),
                ..Decoded::default()
            };
            w.path(
                out.unwrap_or(&typescript),
                PathAccess::Write,
                sub,
                "typescript",
            );
            if !ran {
                w.add(
                    Decision::Deny,
                    "interactive",
                    sub,
                    "`script` without -c starts an interactive shell".to_owned(),
                );
            }
        }
        "strace" | "ltrace" => {
            let mut i = 0;
            while let Some(a) = args.get(i) {
                let t = a.text.as_str();
                if a.dynamic {
                    dynamic_wrapped(w, sub, name);
                    return Some(());
                }
                if !t.starts_with('-') {
                    break;
                }
                i += 1;
                if matches!(t, "-p" | "--attach") {
                    w.add(
                        Decision::Deny,
                        "attaches_process",
                        sub,
                        format!("`{name} -p` attaches to another process"),
                    );
                    return Some(());
                }
                if matches!(t, "-o" | "--output") {
                    if let Some(f) = args.get(i) {
                        w.path(f, PathAccess::Write, sub, "trace output");
                    }
                    i += 1;
                } else if matches!(
                    t,
                    "-e" | "-s"
                        | "-u"
                        | "-E"
                        | "-a"
                        | "-b"
                        | "-I"
                        | "-O"
                        | "-S"
                        | "-X"
                        | "-P"
                        | "-U"
                        | "-n"
                        | "-A"
                        | "-l"
                        | "-L"
                        | "-x"
                ) && t.len() == 2
                {
                    i += 1;
                }
            }
            w.add(
                Decision::Ask,
                "traces",
                sub,
                format!("`{name}` traces the program it runs"),
            );
            run_inner(w, args.get(i..).unwrap_or(&[]), sub, stdin, name);
        }
        "parallel" => {
            let sep = args
                .iter()
                .position(|a| matches!(a.text.as_str(), ":::" | "::::" | ":::+" | "::::+"));
            let cmd_end = sep.unwrap_or(args.len());
            // The argument files (`-a F`, `--arg-file=F`, `:::: F...`) are read, and their
            // lines become arguments the command prints or uses.
            let mut in_files = false;
            for (k, a) in args.iter().enumerate() {
                let t = a.text.as_str();
                if k >= cmd_end && matches!(t, ":::" | "::::" | ":::+" | "::::+") {
                    in_files = t.starts_with("::::");
                    continue;
                }
                let file = if in_files {
                    Some(a.clone())
                } else if k >= cmd_end {
                    None
                } else if let Some(v) = t
                    .strip_prefix("--arg-file=")
                    .or_else(|| t.strip_prefix("-a").filter(|v| !v.is_empty()))
                {
                    Some(Decoded {
                        text: v.to_owned(),
                        ..a.clone()
                    })
                } else if matches!(t, "-a" | "--arg-file") {
                    args.get(k + 1).cloned()
                } else {
                    None
                };
                if let Some(f) = file {
                    w.path(&f, PathAccess::Read, sub, "argument file");
                }
            }
            let mut i = 0;
            while let Some(a) = args.get(i) {
                if i >= cmd_end || !a.text.starts_with('-') {
                    break;
                }
                i += 1;
                if matches!(
                    a.text.as_str(),
                    "-j" | "--jobs"
                        | "-S"
                        | "--sshlogin"
                        | "--arg-file"
                        | "-a"
                        | "--colsep"
                        | "-C"
                        | "-d"
                        | "--delimiter"
                        | "-n"
                        | "-N"
                        | "--timeout"
                        | "--joblog"
                        | "--results"
                        | "--tmpdir"
                        | "-I"
                        | "--tag-string"
                        | "--env"
                ) {
                    i += 1;
                }
            }
            if args.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "-S" | "--sshlogin" | "--sshloginfile" | "--slf"
                )
            }) {
                network(w, sub, "parallel --sshlogin");
                return Some(());
            }
            let mut inner: Vec<Decoded> = args.get(i..cmd_end).unwrap_or(&[]).to_vec();
            if inner.is_empty() {
                w.add(
                    Decision::Deny,
                    "shell_stdin",
                    sub,
                    "`parallel` without a command runs its input lines as commands".to_owned(),
                );
                return Some(());
            }
            inner.push(Decoded {
                dynamic: true,
                ..Decoded::default()
            });
            let mut text = display_words(args.get(i..cmd_end).unwrap_or(&[]));
            for a in args.get(cmd_end..).unwrap_or(&[]) {
                text.push(' ');
                text.push_str(&a.text);
            }
            if let Some(what) = crate::backstop::catastrophic(&text) {
                w.add(
                    Decision::Deny,
                    "catastrophic_text",
                    sub,
                    format!("`parallel` would run {what}"),
                );
                return Some(());
            }
            if inner.len() == 2 && inner.first().is_some_and(|f| f.text.contains(' ')) {
                // `parallel 'cmd {}' ::: a b`: the command is a shell string, run per argument.
                let s = inner.first().map(|f| f.text.clone()).unwrap_or_default();
                let values: Vec<&Decoded> = args
                    .get(cmd_end..)
                    .unwrap_or(&[])
                    .iter()
                    .filter(|a| !a.text.starts_with(":::"))
                    .take(16)
                    .collect();
                let from_file =
                    sep.is_some_and(|p| args.get(p).is_some_and(|a| a.text.starts_with("::::")));
                if values.is_empty() || from_file || values.iter().any(|v| v.dynamic) {
                    dynamic_args(w, sub, name);
                    w.script(&s.replace("{}", "x"), StdinKind::Terminal);
                } else {
                    for v in values {
                        w.script(&s.replace("{}", &v.text), StdinKind::Terminal);
                    }
                }
                return Some(());
            }
            run_inner(w, &inner, sub, &StdinKind::Terminal, name);
        }
        _ => return None,
    }
    Some(())
}

/// A command judged by the command table and the option interpreter: its options' effects,
/// its operands' roles, then its decision class.
fn table_command(
    w: &mut Walker<'_>,
    name: &str,
    spec: &crate::table::CommandSpec,
    args: &[Decoded],
    sub: &str,
) {
    let p = crate::table::interpret(spec, args);
    let saved_cwd = w.cwd.clone();
    table_judge(w, name, spec, &p, sub);
    w.cwd = saved_cwd;
}

fn table_judge(
    w: &mut Walker<'_>,
    name: &str,
    spec: &crate::table::CommandSpec,
    p: &crate::table::Parsed<'_>,
    sub: &str,
) {
    use crate::table::{Class, Destroys, Operands};
    if spec.class == Class::Deny {
        w.add(
            Decision::Deny,
            "denied_command",
            sub,
            format!(
                "`{name}`: {}",
                spec.reason
                    .as_deref()
                    .unwrap_or("the command table denies it")
            ),
        );
        return;
    }
    let mut pattern_given = false;
    let mut recursive = false;
    let mut target_dirs: Vec<&Decoded> = Vec::new();
    let mut operands_written = false;
    let mut operands_read = false;
    let mut offline = false;
    let mut wrote = false;
    // Judged once the whole option list is read: the archive's access depends on the mode, and
    // a directory change applies to operands (the archive opens where the command started).
    let mut chdirs: Vec<&Decoded> = Vec::new();
    let mut archives: Vec<&Decoded> = Vec::new();
    let mut mode: Option<&crate::table::Mode> = None;
    for g in &p.opts {
        let e = g.spec.effects;
        let opt = g.spec.display();
        if e.config {
            match g.values.last() {
                Some(v) if v.dynamic => {
                    w.add(
                        Decision::Deny,
                        "git_config_exec",
                        sub,
                        format!("`{name} {opt}` sets configuration only known at run time, which may make it run a program"),
                    );
                    return;
                }
                Some(v) => config_override(w, name, &opt, &v.text.to_ascii_lowercase(), spec, sub),
                None => w.add(
                    Decision::Ask,
                    "missing_value",
                    sub,
                    format!("`{opt}` of `{name}` has no value"),
                ),
            }
        }
        if e.network {
            return network(w, sub, &format!("{name} {opt}"));
        }
        offline |= e.offline;
        // Effects that deny the whole command, in the order they are checked.
        let denying = [
            (e.exec, "exec_option", "runs another program"),
            (e.system, "system_change", "changes the system"),
            (
                e.destroys,
                "destroys_system",
                "removes the safety net that keeps it off the root filesystem",
            ),
        ];
        if let Some((_, code, what)) = denying.into_iter().find(|(on, _, _)| *on) {
            w.add(Decision::Deny, code, sub, format!("`{name} {opt}` {what}"));
            return;
        }
        let target = g.values.last();
        let takes_value = g.spec.arity != crate::table::Arity::Flag;
        if (e.read || e.file_list || e.write || e.target_dir) && takes_value && target.is_none() {
            w.add(
                Decision::Ask,
                "missing_value",
                sub,
                format!("`{opt}` of `{name}` has no value"),
            );
        }
        // `KIND=PATH` (E): the path is what follows the `=`; a bare KIND names no file.
        let target = match target.filter(|_| e.kind_path) {
            Some(v) => {
                if let Some((_, path)) = v.text.split_once('=') {
                    let named = Decoded {
                        text: path.to_owned(),
                        ..v.clone()
                    };
                    if e.read {
                        w.path(&named, PathAccess::Read, sub, &format!("`{opt}` file"));
                    }
                    if e.write {
                        w.path(&named, PathAccess::Write, sub, &format!("`{opt}` output"));
                        wrote = true;
                    }
                }
                None
            }
            None => target,
        };
        if let Some(v) = target.filter(|_| takes_value) {
            if e.data_file
                && let Some(file) = crate::table::data_file(&v.text).filter(|f| !f.is_empty())
            {
                let named = Decoded {
                    text: file.to_owned(),
                    ..v.clone()
                };
                w.path(&named, PathAccess::Read, sub, &format!("`{opt}` file"));
            }
            if e.read || e.file_list {
                w.path(v, PathAccess::Read, sub, &format!("`{opt}` file"));
            }
            if e.chdir {
                w.path(v, PathAccess::Read, sub, &format!("`{opt}` directory"));
                chdirs.push(v);
            }
            if e.archive {
                archives.push(v);
            }
            if e.write {
                w.path(v, PathAccess::Write, sub, &format!("`{opt}` output"));
                wrote = true;
            }
            if e.target_dir {
                target_dirs.push(v);
            }
        }
        // A flag that writes has no value: it makes every operand written (`install -d`,
        // `rsync --remove-source-files`).
        if e.write && !takes_value {
            operands_written = true;
        }
        if e.in_place {
            operands_written = true;
            w.add(
                Decision::Ask,
                "writes_files",
                sub,
                format!("`{name} {opt}` edits its files in place"),
            );
        }
        // A flag that reads makes every operand a path read (`git diff --no-index A B`).
        if e.read && !takes_value {
            operands_read = true;
        }
        if e.file_list {
            w.add(
                Decision::Ask,
                "files_from_list",
                sub,
                format!(
                    "`{name} {opt}` reads files named in another file, which cannot be reviewed"
                ),
            );
        }
        if e.long_running {
            w.add(
                Decision::Ask,
                "long_running",
                sub,
                format!("`{name} {opt}` keeps running until it is stopped"),
            );
        }
        if e.ask {
            w.add(
                Decision::Ask,
                "option_side_effect",
                sub,
                format!("`{name} {opt}` has a side effect"),
            );
        }
        pattern_given |= e.pattern;
        recursive |= e.recursive;
        if e.mode {
            let m = g.spec.long.as_deref().and_then(|l| spec.modes.get(l));
            if mode.is_some() && mode != m {
                w.add(
                    Decision::Ask,
                    "unknown_option",
                    sub,
                    format!("`{name}` is given two modes; which one it runs cannot be told"),
                );
            }
            mode = m.or(mode);
        }
    }
    let class = mode.map_or(spec.class, |m| m.class);
    let role = mode.map_or(spec.operands, |m| m.operands);
    let default_out = mode.map_or(spec.default_out.as_ref(), |m| m.default_out.as_ref());
    for a in archives {
        if a.text == "-" {
            continue;
        }
        match mode.map(|m| m.archive) {
            Some(crate::table::PathAccessKind::Read) => {
                w.path(a, PathAccess::Read, sub, "archive");
            }
            // Without a mode the archive may be written (the command fails, but the table
            // cannot tell which way).
            _ => {
                w.path(a, PathAccess::Write, sub, "archive");
                wrote = true;
            }
        }
    }
    for d in chdirs {
        w.cwd = if d.dynamic {
            None
        } else {
            w.cwd
                .as_ref()
                .map(|c| crate::analyze::normalize(&c.join(&d.text)))
        };
    }
    for u in &p.unknown {
        w.add(
            Decision::Ask,
            "unknown_option",
            sub,
            format!("`{name}` has no option `{u}` in the command table; an unknown option may write or run code"),
        );
    }
    if !spec.subs.is_empty()
        && let Some(first) = p.operands.first()
    {
        let rest = p.operands.get(1..).unwrap_or(&[]);
        let full = format!("{name} {}", first.text);
        let found = (!first.dynamic)
            .then(|| spec.subs.get(first.text.as_str()))
            .flatten()
            .or_else(|| spec.subs.get("*"));
        match found {
            Some(subspec) => {
                let q = crate::table::interpret(subspec, rest);
                return table_judge(w, &full, subspec, &q, sub);
            }
            // A parent whose operands are names (`git config user.name`, old style) takes a
            // word that is not a subcommand as its own operand.
            None if spec.operands == Operands::Names && !first.dynamic => {}
            None => {
                w.add(
                    Decision::Ask,
                    "unknown_subcommand",
                    sub,
                    format!("`{full}` is not a subcommand the command table knows (it may be an alias, which can run anything)"),
                );
                return;
            }
        }
    }
    if class == Class::Network && !offline {
        return network(w, sub, name);
    }
    if spec.remote
        && p.operands.iter().any(|a| {
            a.text.contains("://") || a.text.split('/').next().is_some_and(|h| h.contains(':'))
        })
    {
        return network(w, sub, &format!("{name} to a host"));
    }
    let mut reads: Vec<&Decoded> = Vec::new();
    let mut writes: Vec<&Decoded> = Vec::new();
    let mut operands: Vec<&Decoded> = p.operands.iter().collect();
    match role {
        Operands::PatternRead if !pattern_given && !operands.is_empty() => {
            operands.remove(0);
            reads = operands;
        }
        Operands::Read | Operands::PatternRead => reads = operands,
        Operands::Data | Operands::Names => {
            if operands_read {
                reads = operands;
            }
        }
        Operands::ReadWriteLast => {
            if operands.len() >= 2 {
                writes.extend(operands.pop());
            }
            reads = operands;
        }
        Operands::Write => writes = operands,
        Operands::WriteFirst => writes.extend(operands.first().copied()),
        Operands::DataFirstWrite => {
            if !pattern_given && !operands.is_empty() {
                operands.remove(0);
            }
            writes = operands;
        }
        Operands::Copy => {
            if target_dirs.is_empty() && operands.len() >= 2 {
                writes.extend(operands.pop());
            }
            reads = operands;
        }
        Operands::ReadPrefix => {
            let mut it = operands.into_iter();
            reads.extend(it.next());
            writes.extend(it.next());
            // Operands past the prefix are an error for split: nothing runs.
        }
        Operands::ReadFirst => reads.extend(operands.first().copied()),
        Operands::Keys => {
            for o in operands {
                let found = o.text.split_once('=').and_then(|(k, v)| {
                    spec.keys
                        .iter()
                        .find(|(key, _)| key == k)
                        .map(|(key, e)| (key.as_str(), *e, v))
                });
                match found {
                    Some((key, e, v)) if e.read || e.write => {
                        let value = Decoded {
                            text: v.to_owned(),
                            ..o.clone()
                        };
                        let access = if e.write {
                            wrote = true;
                            PathAccess::Write
                        } else {
                            PathAccess::Read
                        };
                        w.path(&value, access, sub, &format!("`{key}=` file"));
                    }
                    Some(_) => {}
                    None => w.add(
                        Decision::Ask,
                        "unknown_option",
                        sub,
                        format!("`{name}` has no operand `{}` in the command table; an unknown operand may write or run code", o.text),
                    ),
                }
            }
        }
    }
    if operands_written {
        writes.append(&mut reads);
    }
    writes.extend(target_dirs);
    for r in reads {
        if r.text != "-" {
            w.path(r, PathAccess::Read, sub, "argument");
            if recursive {
                w.tree_read(r, sub, name);
            }
        }
    }
    if writes.is_empty()
        && !wrote
        && let Some(out) = default_out
    {
        let out = Decoded {
            text: out.clone(),
            ..Decoded::default()
        };
        w.path(&out, PathAccess::Write, sub, "default output");
        wrote = true;
    }
    for t in &writes {
        if t.text == "-" && matches!(role, Operands::Write | Operands::ReadPrefix) {
            continue;
        }
        // Writing into /dev/null changes nothing (`tee /dev/null`); removing or moving it
        // does, so a command that destroys its operands is still judged.
        if t.text == "/dev/null" && spec.destroys.is_none() && !t.dynamic {
            continue;
        }
        wrote = true;
        if let Some(d) = spec.destroys {
            let destructive = recursive || d == Destroys::Always;
            if recursive && t.dynamic {
                w.add(
                    Decision::Deny,
                    "destroys_unknown",
                    sub,
                    format!(
                        "`{name}` recursively on a target only known at run time could destroy anything"
                    ),
                );
                continue;
            }
            if destructive && !t.dynamic && is_catastrophic_target(w, t) {
                w.add(
                    Decision::Deny,
                    "destroys_system",
                    sub,
                    format!(
                        "`{name}` on `{}` destroys the system, the home directory or the project",
                        t.text
                    ),
                );
                continue;
            }
        }
        w.path(t, PathAccess::Write, sub, "argument");
    }
    // `git config KEY VALUE` (old style, names as operands) sets KEY: a key that makes the
    // command run a program is judged like `-c KEY=VALUE`.
    if role == Operands::Names
        && !pattern_given
        && p.operands.len() >= 2
        && !spec.exec_config.is_empty()
        && let Some(key) = p.operands.first()
    {
        if key.dynamic {
            dynamic_args(w, sub, name);
        } else if config_key_runs(spec, &key.text.to_ascii_lowercase()) {
            w.add(
                Decision::Deny,
                "git_config_exec",
                sub,
                format!(
                    "`{name}` sets `{}`, a key that makes git run a program later, outside review",
                    key.text
                ),
            );
        }
    }
    match class {
        Class::Write if wrote => w.add(
            Decision::Ask,
            "writes_files",
            sub,
            format!(
                "`{name}` {}",
                spec.reason.as_deref().unwrap_or("changes files")
            ),
        ),
        Class::Write
            if !matches!(role, Operands::Data | Operands::Names)
                || (role == Operands::Names && (p.operands.is_empty() || pattern_given)) =>
        {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                format!("`{name}` names nothing to write"),
            )
        }
        Class::Write => w.add(
            Decision::Ask,
            "writes_files",
            sub,
            format!(
                "`{name}` {}",
                spec.reason.as_deref().unwrap_or("changes files")
            ),
        ),
        _ => w.add(
            Decision::Allow,
            "read_only",
            sub,
            format!("`{name}` only reads"),
        ),
    }
}

/// `-c key=value`: configuration whose key makes the command run a program is denied, any
/// other override asks (it still changes the command's configuration).
fn config_override(
    w: &mut Walker<'_>,
    name: &str,
    opt: &str,
    kv: &str,
    spec: &crate::table::CommandSpec,
    sub: &str,
) {
    let key = kv.split_once('=').map_or(kv, |(k, _)| k);
    if config_key_runs(spec, key) {
        w.add(
            Decision::Deny,
            "git_config_exec",
            sub,
            format!("`{name} {opt} {kv}` makes {name} run a program that cannot be reviewed"),
        );
    } else {
        w.add(
            Decision::Ask,
            "git_config_override",
            sub,
            format!("`{name} {opt} {kv}` changes {name}'s configuration for this command"),
        );
    }
}

/// Whether the configuration `key` (lowercased) is one of `spec`'s `exec_config` patterns.
fn config_key_runs(spec: &crate::table::CommandSpec, key: &str) -> bool {
    spec.exec_config.iter().any(|pat| {
        if let Some(prefix) = pat.strip_suffix('*') {
            key.starts_with(prefix)
        } else if let Some(suffix) = pat.strip_prefix('*') {
            key.ends_with(suffix)
        } else {
            key == pat
        }
    })
}

/// A wrapper's argument known only at run time, where it may be the command it runs.
/// GNU env's options: (short letter or `\0`, long name, arity: 0 flag, 1 required value,
/// 2 optional attached value).
const ENV_OPTS: &[(char, &str, u8)] = &[
    ('a', "argv0", 1),
    ('i', "ignore-environment", 0),
    ('0', "null", 0),
    ('u', "unset", 1),
    ('C', "chdir", 1),
    ('S', "split-string", 1),
    ('v', "debug", 0),
    ('\0', "block-signal", 2),
    ('\0', "default-signal", 2),
    ('\0', "ignore-signal", 2),
    ('\0', "list-signal-handling", 0),
    ('\0', "help", 0),
    ('\0', "version", 0),
];

/// GNU xargs' options (`0a:E:e::i::I:l::L:n:oprs:txP:d:` and their long names): the value
/// arity of each, so that the command xargs runs is found where xargs finds it.
/// (short letter, long name, arity: 0 flag, 1 required value, 2 optional attached value)
const XARGS_OPTS: &[(char, &str, u8)] = &[
    ('0', "null", 0),
    ('a', "arg-file", 1),
    ('d', "delimiter", 1),
    ('E', "", 1),
    ('e', "eof", 2),
    ('I', "", 1),
    ('i', "replace", 2),
    ('L', "", 1),
    ('l', "max-lines", 2),
    ('n', "max-args", 1),
    ('o', "open-tty", 0),
    ('p', "interactive", 0),
    ('r', "no-run-if-empty", 0),
    ('s', "max-chars", 1),
    ('t', "verbose", 0),
    ('x', "exit", 0),
    ('P', "max-procs", 1),
    ('\0', "process-slot-var", 1),
    ('\0', "show-limits", 0),
    ('\0', "help", 0),
    ('\0', "version", 0),
];

/// Reads xargs' options with getopt_long semantics (clusters, attached and separate values,
/// `--long=value`, unambiguous abbreviations) and judges the argument file. Returns the index
/// of the command's first word and the replace string of `-I`/`-i`, or `None` when a finding
/// already decided (a run-time word, `-p`, an unknown or ambiguous option).
fn xargs_options(
    w: &mut Walker<'_>,
    args: &[Decoded],
    sub: &str,
    name: &str,
) -> Option<(usize, Option<String>)> {
    let mut i = 0;
    let mut replace = None;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if a.dynamic {
            dynamic_wrapped(w, sub, name);
            return None;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        i += 1;
        if t == "--" {
            break;
        }
        // (option, its value) pairs this argument holds.
        let mut found: Vec<(char, &str, Option<Decoded>)> = Vec::new();
        if let Some(long) = t.strip_prefix("--") {
            let (key, attached) = match long.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (long, None),
            };
            let exact = XARGS_OPTS.iter().find(|o| o.1 == key);
            let prefixed: Vec<_> = XARGS_OPTS
                .iter()
                .filter(|o| !o.1.is_empty() && o.1.starts_with(key))
                .collect();
            let Some(&(c, long_name, arity)) = exact.or(match prefixed.as_slice() {
                [one] => Some(*one),
                _ => None,
            }) else {
                w.add(
                    Decision::Ask,
                    "unknown_option",
                    sub,
                    format!(
                        "`{name}` has no option `{t}` this analyzer knows (or it is ambiguous)"
                    ),
                );
                return None;
            };
            let value = crate::words::option_value(a, attached, arity == 1, args, &mut i);
            found.push((c, long_name, value));
        } else {
            let body = t.get(1..).unwrap_or("");
            for (at, c) in body.char_indices() {
                let rest = body.get(at + c.len_utf8()..).unwrap_or("");
                let Some(&(_, long_name, arity)) = XARGS_OPTS.iter().find(|o| o.0 == c) else {
                    w.add(
                        Decision::Ask,
                        "unknown_option",
                        sub,
                        format!("`{name}` has no option `-{c}` this analyzer knows"),
                    );
                    return None;
                };
                if arity == 0 {
                    found.push((c, long_name, None));
                    continue;
                }
                let value = if !rest.is_empty() {
                    Some(Decoded {
                        text: rest.to_owned(),
                        ..a.clone()
                    })
                } else if arity == 1 {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    None
                };
                found.push((c, long_name, value));
                break;
            }
        }
        for (c, _, value) in found {
            match c {
                'p' => {
                    w.add(
                        Decision::Deny,
                        "interactive",
                        sub,
                        "`xargs -p` prompts on a terminal".to_owned(),
                    );
                    return None;
                }
                // `-i` alone replaces `{}`.
                'I' | 'i' => {
                    replace = Some(value.map_or_else(|| "{}".to_owned(), |v| v.text));
                }
                'a' => match value {
                    Some(f) => w.path(&f, PathAccess::Read, sub, "argument file"),
                    None => {
                        w.add(
                            Decision::Ask,
                            "missing_value",
                            sub,
                            format!("`{name} -a` without its file"),
                        );
                        return None;
                    }
                },
                _ => {}
            }
        }
    }
    Some((i, replace))
}

/// An openssl argument as `(option, attached value)`: `--out=F` and `-out=F` are `-out` with
/// `F`; an operand gives an empty option.
fn openssl_option(text: &str) -> (&str, Option<&str>) {
    if !text.starts_with('-') || text == "-" {
        return ("", None);
    }
    let body = text.strip_prefix("--").map_or(text, |b| {
        // `--out` is `-out`: keep one dash.
        text.get(1..).filter(|_| !b.is_empty()).unwrap_or(text)
    });
    match body.split_once('=') {
        Some((o, v)) => (o, Some(v)),
        None => (body, None),
    }
}

pub(crate) fn dynamic_wrapped(w: &mut Walker<'_>, sub: &str, name: &str) {
    w.add(
        Decision::Deny,
        "dynamic_command",
        sub,
        format!("an argument of `{name}` before the command it runs is only known at run time: it may be that command, which cannot be reviewed"),
    );
}

fn reader(w: &mut Walker<'_>, name: &str, args: &[Decoded], sub: &str, dyn_args: bool) {
    if let Some(spec) = table_spec(w, name, sub, dyn_args) {
        table_command(w, name, spec, args, sub);
    }
}

/// The table entry of a command its caller knows to be there; asks (and gives none) when the
/// table lacks it. Arguments only known at run time are reported first.
fn table_spec(
    w: &mut Walker<'_>,
    name: &str,
    sub: &str,
    dyn_args: bool,
) -> Option<&'static crate::table::CommandSpec> {
    if dyn_args {
        dynamic_args(w, sub, name);
    }
    let spec = crate::table::spec(name);
    if spec.is_none() {
        w.add(
            Decision::Ask,
            "unknown_command",
            sub,
            format!("the command table has no `{name}`"),
        );
    }
    spec
}

fn build(w: &mut Walker<'_>, name: &str, args: &[Decoded], sub: &str) {
    let verb = args
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str())
        .unwrap_or("");
    let installs = match name {
        "npm" | "yarn" | "pnpm" => matches!(
            verb,
            "install" | "i" | "ci" | "add" | "update" | "upgrade" | "publish" | "login"
        ),
        "pip" | "pip3" | "uv" | "poetry" => matches!(
            verb,
            "install" | "add" | "download" | "sync" | "upload" | "publish"
        ),
        "cargo" => matches!(
            verb,
            "install" | "publish" | "login" | "search" | "add" | "update"
        ),
        "go" => matches!(verb, "get" | "install"),
        "gem" | "bundle" => matches!(verb, "install" | "update" | "push"),
        "docker" | "podman" => matches!(verb, "pull" | "push" | "login"),
        "npx" => true,
        _ => false,
    };
    if installs {
        network(w, sub, &format!("{name} {verb}"));
        return;
    }
    if name == "cargo"
        && let Some(bin) = cargo_run_target(args)
        && let Some(spec) = crate::table::spec(bin)
        && spec.class == crate::table::Class::Deny
    {
        return table_command(w, bin, spec, &[], sub);
    }
    if matches!(name, "docker" | "podman")
        && args
            .iter()
            .any(|a| a.text == "--privileged" || a.text.starts_with("/:") || a.text == "--pid=host")
    {
        w.add(
            Decision::Deny,
            "privilege_escalation",
            sub,
            format!("`{name}` with host access is root on the host"),
        );
        return;
    }
    w.add(
        Decision::Ask,
        "build",
        sub,
        format!("`{name}` builds, tests or runs project code, which has side effects"),
    );
}

/// The package or binary `cargo run` runs (`-p NAME`, `--package=NAME`, `--bin NAME` ...), read
/// up to the `--` that starts the program's own arguments.
fn cargo_run_target(args: &[Decoded]) -> Option<&str> {
    let end = args
        .iter()
        .position(|a| a.text == "--")
        .unwrap_or(args.len());
    let args = args.get(..end)?;
    // Any `run` word, not only the first operand: `cargo +nightly run`, `cargo --manifest-path
    // M run` put other words first.
    if !args.iter().any(|a| matches!(a.text.as_str(), "run" | "r")) {
        return None;
    }
    let mut it = args.iter().map(|a| a.text.as_str());
    while let Some(t) = it.next() {
        for (short, long) in [("-p", "--package"), ("", "--bin"), ("", "--example")] {
            if (!short.is_empty() && t == short) || t == long {
                return it.next();
            }
            if let Some(v) = t.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
                return Some(v);
            }
            if let Some(v) = t
                .strip_prefix(short)
                .filter(|v| !short.is_empty() && !v.is_empty() && !t.starts_with("--"))
            {
                return Some(v);
            }
        }
    }
    None
}

fn shell(w: &mut Walker<'_>, name: &str, args: &[Decoded], sub: &str, stdin: &StdinKind) {
    let mut i = 0;
    let mut script: Option<&Decoded> = None;
    let mut file: Option<&Decoded> = None;
    let mut interactive = false;
    while let Some(a) = args.get(i) {
        i += 1;
        let t = a.text.as_str();
        if a.dynamic {
            w.add(Decision::Deny, "dynamic_script", sub, format!("an argument of `{name}` is only known at run time, so the script cannot be reviewed"));
            return;
        }
        if t == "-c" || (t.starts_with('-') && !t.starts_with("--") && t.contains('c')) {
            if t.contains('i') {
                interactive = true;
            }
            script = args.get(i);
            break;
        }
        if t == "-i" || (t.starts_with('-') && !t.starts_with("--") && t.contains('i')) {
            interactive = true;
        }
        if t == "-s" {
            continue;
        }
        if t == "--rcfile" || t == "--init-file" || t == "-o" || t == "+o" || t == "-O" || t == "+O"
        {
            i += 1;
            continue;
        }
        if t.starts_with('-') || t.starts_with('+') {
            continue;
        }
        file = Some(a);
        break;
    }
    if interactive {
        w.add(
            Decision::Deny,
            "interactive",
            sub,
            format!("`{name} -i` is an interactive shell"),
        );
        return;
    }
    if let Some(s) = script {
        if s.dynamic {
            w.add(
                Decision::Deny,
                "dynamic_script",
                sub,
                format!("the script given to `{name} -c` is only known at run time"),
            );
            return;
        }
        let text = s.text.clone();
        w.script(&text, StdinKind::Terminal);
        return;
    }
    if let Some(f) = file {
        w.path(f, PathAccess::Read, sub, "script");
        w.add(
            Decision::Ask,
            "runs_script",
            sub,
            format!(
                "`{name}` runs the script `{}`, which is not reviewed",
                f.text
            ),
        );
        return;
    }
    match stdin {
        StdinKind::Literal(text) => {
            let text = text.clone();
            w.script(&text, StdinKind::Terminal);
        }
        StdinKind::Pipe | StdinKind::Dynamic => w.add(
            Decision::Deny,
            "shell_stdin",
            sub,
            format!("`{name}` reads its script from standard input, which cannot be reviewed"),
        ),
        StdinKind::Terminal => w.add(
            Decision::Deny,
            "interactive",
            sub,
            format!("`{name}` without a script is an interactive shell"),
        ),
    }
}

fn run_inner(w: &mut Walker<'_>, inner: &[Decoded], sub: &str, stdin: &StdinKind, what: &str) {
    if inner.is_empty() {
        w.add(
            Decision::Allow,
            "read_only",
            sub,
            format!("`{what}` without a command only prints"),
        );
        return;
    }
    let display = display_words(inner);
    // `timeout 5 NAME=value cmd` runs a program called `NAME=value`; judge it as the
    // assignment a reader takes it for, so wrapping never hides one.
    if let Some(first) = inner.first()
        && let Some((name, _)) = first.text.split_once('=')
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'%')
    {
        check_env_name(w, name, &display);
    }
    classify(w, inner, &display, stdin);
}

fn writer(
    w: &mut Walker<'_>,
    name: &str,
    args: &[Decoded],
    sub: &str,
    stdin: &StdinKind,
    dyn_args: bool,
) {
    match name {
        "find" => return find(w, args, sub, dyn_args),
        "sed" => return sed(w, args, sub, dyn_args),
        _ => {}
    }
    if let Some(spec) = crate::table::spec(name).filter(|s| !s.fallback) {
        if dyn_args {
            dynamic_args(w, sub, name);
        }
        return table_command(w, name, spec, args, sub);
    }
    match name {
        "env" => {
            let mut i = 0;
            let mut chdir: Option<Decoded> = None;
            while let Some(a) = args.get(i) {
                let t = a.text.as_str();
                if a.dynamic {
                    return dynamic_wrapped(w, sub, name);
                }
                if t == "--" {
                    i += 1;
                    break;
                }
                if t.starts_with('-') && t != "-" {
                    i += 1;
                    // (letter, value) pairs of this argument, getopt_long style.
                    let mut found: Vec<(char, Option<Decoded>)> = Vec::new();
                    if let Some(long) = t.strip_prefix("--") {
                        let (key, attached) = match long.split_once('=') {
                            Some((k, v)) => (k, Some(v)),
                            None => (long, None),
                        };
                        let exact = ENV_OPTS.iter().find(|o| o.1 == key);
                        let prefixed: Vec<_> = ENV_OPTS
                            .iter()
                            .filter(|o| !key.is_empty() && o.1.starts_with(key))
                            .collect();
                        let Some(&(c, _, arity)) = exact.or(match prefixed.as_slice() {
                            [one] => Some(*one),
                            _ => None,
                        }) else {
                            w.add(
                                Decision::Ask,
                                "unknown_option",
                                sub,
                                format!("`env` has no option `{t}` this analyzer knows (or it is ambiguous)"),
                            );
                            return;
                        };
                        let value =
                            crate::words::option_value(a, attached, arity == 1, args, &mut i);
                        found.push((c, value));
                    } else {
                        let body = t.get(1..).unwrap_or("");
                        for (at, c) in body.char_indices() {
                            let rest = body.get(at + c.len_utf8()..).unwrap_or("");
                            let Some(&(_, _, arity)) =
                                ENV_OPTS.iter().find(|o| o.0 == c && o.0 != '\0')
                            else {
                                w.add(
                                    Decision::Ask,
                                    "unknown_option",
                                    sub,
                                    format!("`env` has no option `-{c}` this analyzer knows"),
                                );
                                return;
                            };
                            if arity != 1 {
                                found.push((c, None));
                                continue;
                            }
                            let value = if rest.is_empty() {
                                i += 1;
                                args.get(i - 1).cloned()
                            } else {
                                Some(Decoded {
                                    text: rest.to_owned(),
                                    ..a.clone()
                                })
                            };
                            found.push((c, value));
                            break;
                        }
                    }
                    for (c, value) in found {
                        match c {
                            'C' => chdir = value,
                            // `-S STRING` splits STRING into the command and its first
                            // arguments; the rest of env's arguments follow.
                            'S' => {
                                let Some(v) = value else {
                                    w.add(
                                        Decision::Ask,
                                        "missing_value",
                                        sub,
                                        "`env -S` without its string".to_owned(),
                                    );
                                    return;
                                };
                                if v.dynamic {
                                    return dynamic_wrapped(w, sub, name);
                                }
                                let rest: Vec<String> =
                                    args.iter().skip(i).map(|a| a.text.clone()).collect();
                                let text = format!("{} {}", v.text, rest.join(" "));
                                w.script(&text, stdin.clone());
                                return;
                            }
                            _ => {}
                        }
                    }
                    continue;
                }
                if let Some((n, _)) = t.split_once('=') {
                    check_env_name(w, n, sub);
                    i += 1;
                    continue;
                }
                break;
            }
            let saved = w.cwd.clone();
            if let Some(d) = &chdir {
                w.path(d, PathAccess::Read, sub, "directory");
                w.cwd = if d.dynamic {
                    None
                } else {
                    w.cwd
                        .as_ref()
                        .map(|c| crate::analyze::normalize(&c.join(&d.text)))
                };
            }
            run_inner(w, args.get(i..).unwrap_or(&[]), sub, stdin, name);
            w.cwd = saved;
        }
        "timeout" | "nice" | "ionice" | "stdbuf" | "nohup" | "time" | "command" | "builtin"
        | "exec" | "setsid" | "flock" | "taskset" | "chrt" | "caffeinate" | "unbuffer" => {
            if name == "nohup" {
                // nohup exists to outlive the session that started it (issue 14 item 8).
                w.add(
                    Decision::Ask,
                    "long_running",
                    sub,
                    "`nohup` keeps the command running after the session ends".to_owned(),
                );
            }
            let mut i = 0;
            let with_arg: &[&str] = match name {
                "timeout" => &["-s", "--signal", "-k", "--kill-after"],
                "nice" => &["-n", "--adjustment"],
                "ionice" => &["-c", "-n", "-p"],
                "stdbuf" => &["-i", "-o", "-e"],
                "exec" => &["-a"],
                _ => &[],
            };
            while let Some(a) = args.get(i) {
                let t = a.text.as_str();
                if a.dynamic {
                    return dynamic_wrapped(w, sub, name);
                }
                if !t.starts_with('-') || t == "-" {
                    break;
                }
                i += 1;
                if t == "--" {
                    break;
                }
                if with_arg.contains(&t) {
                    i += 1;
                }
                if name == "setsid" && (t == "-f" || t == "--fork") {
                    w.add(
                        Decision::Ask,
                        "background",
                        sub,
                        "`setsid -f` leaves the command running in the background".to_owned(),
                    );
                }
                if name == "command" && (t == "-v" || t == "-V") {
                    w.add(
                        Decision::Allow,
                        "read_only",
                        sub,
                        "`command -v` only looks a name up".to_owned(),
                    );
                    return;
                }
            }
            if matches!(name, "timeout" | "flock" | "chrt" | "taskset") {
                // duration, lock file, priority, cpu mask
                if args.get(i).is_some_and(|a| a.dynamic) {
                    dynamic_args(w, sub, name);
                }
                i += 1;
            }
            let inner = args.get(i..).unwrap_or(&[]);
            if name == "exec" && inner.is_empty() {
                w.add(
                    Decision::Allow,
                    "redirect_only",
                    sub,
                    "`exec` only changes redirections".to_owned(),
                );
                return;
            }
            if inner.is_empty() {
                w.add(
                    Decision::Ask,
                    "wrapper",
                    sub,
                    format!("`{name}` without a command"),
                );
                return;
            }
            run_inner(w, inner, sub, stdin, name)
        }
        "xargs" => {
            let Some((i, replace)) = xargs_options(w, args, sub, name) else {
                return;
            };
            let mut inner: Vec<Decoded> = args.get(i..).unwrap_or(&[]).to_vec();
            // With -I R every word holding R gets a line of stdin in its place at run time
            // (`xargs -I@ bash -c 'echo @'` runs whatever the input says).
            if let Some(r) = replace.filter(|r| !r.is_empty()) {
                for word in &mut inner {
                    if word.text.contains(r.as_str()) {
                        word.dynamic = true;
                    }
                }
            }
            if inner.is_empty() {
                inner.push(Decoded {
                    text: "echo".to_owned(),
                    ..Decoded::default()
                });
            }
            // The arguments xargs appends come from stdin: unknown to the review.
            inner.push(Decoded {
                text: String::new(),
                dynamic: true,
                ..Decoded::default()
            });
            run_inner(w, &inner, sub, &StdinKind::Terminal, name)
        }
        "watch" => {
            let mut i = 0;
            while let Some(a) = args.get(i) {
                let t = a.text.as_str();
                if !t.starts_with('-') {
                    break;
                }
                i += 1;
                if matches!(t, "-n" | "--interval" | "-d" | "--differences") && t != "-d" {
                    i += 1;
                }
            }
            w.add(
                Decision::Ask,
                "repeats",
                sub,
                "`watch` repeats the command until it is stopped".to_owned(),
            );
            let text: Vec<String> = args.iter().skip(i).map(|a| a.text.clone()).collect();
            if args.iter().skip(i).any(|a| a.dynamic) {
                return dynamic_args(w, sub, name);
            }
            w.script(&text.join(" "), StdinKind::Terminal);
        }
        "eval" | "trap" => {
            if dyn_args {
                w.add(
                    Decision::Deny,
                    "dynamic_script",
                    sub,
                    format!("`{name}` runs text only known at run time"),
                );
                return;
            }
            let parts: Vec<String> = if name == "trap" {
                if args.len() < 2 || args.first().is_some_and(|a| a.text.starts_with('-')) {
                    w.add(
                        Decision::Allow,
                        "read_only",
                        sub,
                        "lists or resets traps".to_owned(),
                    );
                    return;
                }
                args.first()
                    .map(|a| vec![a.text.clone()])
                    .unwrap_or_default()
            } else {
                args.iter().map(|a| a.text.clone()).collect()
            };
            w.script(&parts.join(" "), stdin.clone());
        }
        "source" | "." => {
            if let Some(f) = args.first() {
                let t = f.text.as_str();
                let stdin_file = matches!(t, "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "-");
                if stdin_file && let StdinKind::Literal(text) = stdin {
                    let text = text.clone();
                    w.script(&text, StdinKind::Terminal);
                    return;
                }
                if f.dynamic || stdin_file || t.starts_with("/dev/fd/") || t.starts_with("/proc/") {
                    w.add(
                        Decision::Deny,
                        "dynamic_script",
                        sub,
                        format!("`{name}` runs code that is the output of a command or input only known at run time"),
                    );
                    return;
                }
                w.path(f, PathAccess::Read, sub, "sourced file");
            }
            w.add(Decision::Ask, "source_file", sub, format!("`{name}` runs the commands of a file in this shell; its contents cannot be reviewed from the command line"));
        }
        "cd" | "pushd" | "popd" => {
            match (
                name,
                args.iter().find(|a| !a.text.starts_with('-') || a.dynamic),
            ) {
                ("popd", _) => w.cwd = None,
                (_, None) => {
                    w.cwd = w.an.home.as_ref().map(std::path::PathBuf::from);
                }
                (_, Some(d)) if d.dynamic => w.cwd = None,
                // With CDPATH set, a relative `cd dir` may land in any CDPATH entry.
                (_, Some(d))
                    if w.cdpath && !d.text.starts_with('/') && !d.text.starts_with('.') =>
                {
                    w.cwd = None;
                }
                (_, Some(d)) => {
                    w.path(d, PathAccess::Read, sub, "directory");
                    w.cwd = w
                        .cwd
                        .as_ref()
                        .map(|c| crate::analyze::normalize(&c.join(&d.text)));
                }
            }
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "changes the working directory".to_owned(),
            );
        }
        "alias" => {
            if args.iter().any(|a| a.text.contains('=')) {
                w.add(
                    Decision::Deny,
                    "alias_definition",
                    sub,
                    "an alias changes what later command names run".to_owned(),
                );
            } else {
                w.add(
                    Decision::Allow,
                    "read_only",
                    sub,
                    "lists aliases".to_owned(),
                );
            }
        }
        "hostname" => {
            if args.iter().any(|a| !a.text.starts_with('-')) {
                w.add(
                    Decision::Deny,
                    "system_change",
                    sub,
                    "`hostname NAME` renames the machine".to_owned(),
                );
            } else {
                w.add(
                    Decision::Allow,
                    "read_only",
                    sub,
                    "prints the host name".to_owned(),
                );
            }
        }
        "kill" | "pkill" | "killall" => {
            if args.iter().any(|a| a.text == "-1" || a.text == "1") {
                w.add(
                    Decision::Deny,
                    "system_change",
                    sub,
                    "signals every process (or init)".to_owned(),
                );
                return;
            }
            w.add(
                Decision::Ask,
                "signal",
                sub,
                format!("`{name}` stops other processes"),
            );
        }
        "zip" | "unzip" | "gzip" | "gunzip" | "bzip2" | "xz" | "unxz" | "zstd" | "patch"
        | "xdg-open" | "open" | "script" | "strace" | "ltrace" | "gdb" | "nsenter" | "unshare"
        | "firejail" => {
            if args.iter().any(|a| {
                a.text.starts_with("--to-command")
                    || a.text.starts_with("--checkpoint-action")
                    || a.text.starts_with("--use-compress-program")
                    || a.text == "-I"
                    || a.text.starts_with("--rsh-command")
                    || a.text.starts_with("--info-script")
                    || a.text.starts_with("--new-volume-script")
            }) {
                w.add(
                    Decision::Deny,
                    "exec_option",
                    sub,
                    format!("this option of `{name}` runs another program"),
                );
                return;
            }
            for p in args.iter().filter(|a| !a.text.starts_with('-')) {
                w.path(p, PathAccess::Read, sub, "argument");
            }
            if matches!(name, "nsenter" | "unshare") {
                w.add(
                    Decision::Deny,
                    "privilege_escalation",
                    sub,
                    format!("`{name}` changes namespaces"),
                );
                return;
            }
            w.add(
                Decision::Ask,
                "writes_files",
                sub,
                format!("`{name}` creates or changes files"),
            );
        }
        _ => w.add(
            Decision::Ask,
            "unknown_command",
            sub,
            format!("`{name}` is not a command this analyzer knows to be read-only"),
        ),
    }
}

fn is_catastrophic_target(w: &mut Walker<'_>, p: &Decoded) -> bool {
    let t = p.text.trim_end_matches('/');
    // An unquoted glob for every entry (`*`) or every hidden entry (`.*`, `.[!.]*`, `.??*`:
    // `.git` and the dotfiles) of a directory stands for that directory.
    const ALL: &[&str] = &["*", ".*", ".[!.]*", ".[^.]*", ".??*"];
    let t = if p.glob {
        ALL.iter()
            .find_map(|g| {
                t.strip_suffix(g)
                    .and_then(|d| d.strip_suffix('/'))
                    .or_else(|| (t == *g).then_some("."))
            })
            .unwrap_or(t)
    } else {
        t.strip_suffix("/*")
            .or_else(|| (t == "*").then_some("."))
            .unwrap_or(t)
    };
    let t = if t.is_empty() { "/" } else { t };
    let abs = match &w.cwd {
        Some(c) => crate::analyze::normalize(&c.join(t)),
        None => crate::analyze::normalize(&Path::new("/").join(t)),
    };
    let s = abs.to_string_lossy();
    let top = [
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root",
        "/sbin", "/srv", "/sys", "/usr", "/var", "/tmp", "/mnt", "/media", "/Users", "/System",
    ];
    if top.contains(&s.as_ref()) {
        return true;
    }
    if w.an
        .home
        .as_deref()
        .is_some_and(|h| h.trim_end_matches('/') == s)
    {
        return true;
    }
    let probe = Decoded {
        text: t.to_owned(),
        ..Decoded::default()
    };
    w.is_root(&probe)
}

/// File names that hold secrets, which a `find -name` test may select for `-exec`.
const SECRET_NAMES: &[&str] = &[
    ".env",
    ".env.local",
    ".env.production",
    ".envrc",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
    "credentials",
    "credentials.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "secrets.yaml",
    "server.key",
    "private.pem",
];

/// fnmatch(3) without flags: `*`, `?`, `[set]` (`!`/`^` negate), `\` quotes; `fold` ignores
/// case (`-iname`). Iterative with one backtrack point, so no input can make it slow.
fn glob_match(pattern: &str, name: &str, fold: bool) -> bool {
    let norm = |s: &str| -> Vec<char> {
        if fold {
            s.to_lowercase().chars().collect()
        } else {
            s.chars().collect()
        }
    };
    let (p, n) = (norm(pattern), norm(name));
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let c = n.get(ni).copied();
        match p.get(pi).copied() {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => {
                pi += 1;
                ni += 1;
                continue;
            }
            Some('[') => {
                // A bracket expression up to its `]` (a `]` first is a member).
                let mut j = pi + 1;
                let negate = matches!(p.get(j), Some('!' | '^'));
                if negate {
                    j += 1;
                }
                let start = j;
                let mut matched = false;
                while let Some(&q) = p.get(j) {
                    if q == ']' && j > start {
                        break;
                    }
                    if p.get(j + 1) == Some(&'-')
                        && let Some(&hi) = p.get(j + 2)
                        && hi != ']'
                    {
                        matched |= c.is_some_and(|c| q <= c && c <= hi);
                        j += 3;
                        continue;
                    }
                    matched |= c == Some(q);
                    j += 1;
                }
                if p.get(j) == Some(&']') && matched != negate {
                    pi = j + 1;
                    ni += 1;
                    continue;
                }
            }
            Some('\\') if p.get(pi + 1).copied() == c => {
                pi += 2;
                ni += 1;
                continue;
            }
            Some(q) if Some(q) == c => {
                pi += 1;
                ni += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p.get(pi..).unwrap_or(&[]).iter().all(|c| *c == '*')
}

/// `find`: options, start points and primaries from the table (`table::interpret_expression`);
/// what stays code is what a primary's effect means here: `-exec`'s words are a command judged
/// like any other, with a lone `{}` standing for a found path under the start points.
fn find(w: &mut Walker<'_>, args: &[Decoded], sub: &str, dyn_args: bool) {
    let Some(spec) = table_spec(w, "find", sub, dyn_args) else {
        return;
    };
    let e = crate::table::interpret_expression(spec, args);
    for u in &e.unknown {
        w.add(
            Decision::Ask,
            "unknown_option",
            sub,
            format!("`find` has no primary or option `{u}` in the command table; an unknown one may write or run code"),
        );
    }
    for t in &e.unterminated {
        w.add(
            Decision::Deny,
            "parse_error",
            sub,
            format!("`find {t}` is missing its value or its `;`"),
        );
    }
    let dot = Decoded {
        text: ".".to_owned(),
        ..Decoded::default()
    };
    let starts: Vec<&Decoded> = if e.operands.is_empty() {
        vec![&dot]
    } else {
        e.operands.iter().collect()
    };
    let mut writes = false;
    // `-exec cmd {}` runs cmd on every file found below the start points, not on the start
    // point only: a tree that holds credential stores (`/`, the home directory) is refused
    // as `grep -r` is, and a name test that selects secrets (`-name .env`, `-name 'id_*'`)
    // is judged as reading such a file below each start point.
    if e.primaries.iter().any(|(p, _)| p.effects.exec) {
        for s in &starts {
            w.tree_read(s, sub, "find -exec");
        }
        let secret_names: Vec<&str> = e
            .primaries
            .iter()
            .filter(|(p, _)| {
                matches!(
                    p.name.as_str(),
                    "name" | "iname" | "path" | "ipath" | "wholename" | "iwholename"
                )
            })
            .filter_map(|(p, values)| {
                let pattern = values.first()?;
                let base = pattern.text.rsplit('/').next().unwrap_or("");
                let fold = p.name.starts_with('i');
                SECRET_NAMES
                    .iter()
                    .find(|n| glob_match(base, n, fold))
                    .copied()
            })
            .collect();
        for name in secret_names {
            for s in &starts {
                let d = Decoded {
                    text: format!("{}/{name}", s.text.trim_end_matches('/')),
                    ..(*s).clone()
                };
                w.path(&d, PathAccess::Read, sub, "file found by name");
            }
        }
    }
    for (p, values) in &e.primaries {
        let fx = p.effects;
        let what = format!("`-{}`", p.name.trim_end_matches('*'));
        if fx.prompts {
            w.add(
                Decision::Deny,
                "interactive",
                sub,
                format!("`find {what}` prompts on a terminal"),
            );
        }
        if fx.exec {
            let inner: Vec<Decoded> = values
                .iter()
                .map(|b| {
                    if b.text == "{}" {
                        Decoded {
                            text: starts
                                .first()
                                .map_or_else(|| ".".to_owned(), |s| s.text.clone()),
                            ..Decoded::default()
                        }
                    } else if b.text.contains("{}") {
                        // `{}` inside a larger word splices a file name into code: unknown.
                        Decoded {
                            text: String::new(),
                            dynamic: true,
                            ..Decoded::default()
                        }
                    } else {
                        b.clone()
                    }
                })
                .collect();
            if inner.is_empty() {
                w.add(
                    Decision::Deny,
                    "parse_error",
                    sub,
                    format!("`find {what}` without a command"),
                );
            } else {
                let display = display_words(&inner);
                classify(w, &inner, &display, &StdinKind::Terminal);
            }
            continue;
        }
        if fx.write && values.is_empty() {
            writes = true;
            w.add(
                Decision::Ask,
                "writes_files",
                sub,
                format!("`find {what}` removes files"),
            );
        }
        if let Some(v) = values.first() {
            if fx.write {
                w.path(v, PathAccess::Write, sub, "output file");
            }
            if fx.read || fx.file_list {
                w.path(v, PathAccess::Read, sub, &format!("{what} file"));
            }
        }
        if fx.file_list {
            w.add(
                Decision::Ask,
                "files_from_list",
                sub,
                format!(
                    "`find {what}` takes its start points from a file, which cannot be reviewed"
                ),
            );
        }
    }
    for s in starts {
        w.path(
            s,
            if writes {
                PathAccess::Write
            } else {
                PathAccess::Read
            },
            sub,
            "start point",
        );
    }
    w.add(
        Decision::Allow,
        "read_only",
        sub,
        "`find` only lists".to_owned(),
    );
}

/// `sed`: its options from the table; its script (a language, like awk's) read by sed.rs.
fn sed(w: &mut Walker<'_>, args: &[Decoded], sub: &str, dyn_args: bool) {
    let Some(spec) = table_spec(w, "sed", sub, dyn_args) else {
        return;
    };
    let p = crate::table::interpret(spec, args);
    // A P option gives the script (-e TEXT) or names a file holding it (-f FILE, also R);
    // without one the first operand is the script.
    let mut scripts: Vec<&Decoded> = Vec::new();
    let mut from_file = false;
    for g in p.opts.iter().filter(|g| g.spec.effects.pattern) {
        if g.spec.effects.read {
            from_file = true;
        } else {
            scripts.extend(g.values.last());
        }
    }
    if scripts.is_empty() && !from_file {
        scripts.extend(p.operands.first());
    }
    if from_file {
        w.add(
            Decision::Ask,
            "sed_script_file",
            sub,
            "the sed script is in a file that cannot be reviewed".to_owned(),
        );
    }
    for s in scripts {
        if s.dynamic {
            w.add(
                Decision::Ask,
                "sed_unreadable",
                sub,
                "the sed script is only known at run time".to_owned(),
            );
            continue;
        }
        match crate::sed::scan(&s.text) {
            Ok(effects) => {
                if effects.exec {
                    w.add(
                        Decision::Deny,
                        "sed_exec",
                        sub,
                        "the sed script runs shell commands (`e` command or `s///e`)".to_owned(),
                    );
                }
                for f in effects.writes {
                    w.path(
                        &Decoded {
                            text: f,
                            ..Decoded::default()
                        },
                        PathAccess::Write,
                        sub,
                        "sed `w` file",
                    );
                }
                for f in effects.reads {
                    w.path(
                        &Decoded {
                            text: f,
                            ..Decoded::default()
                        },
                        PathAccess::Read,
                        sub,
                        "sed `r` file",
                    );
                }
            }
            Err(e) => w.add(
                Decision::Ask,
                "sed_unreadable",
                sub,
                format!("cannot review the sed script: {e}"),
            ),
        }
    }
    // The operands, -f's file, -i and unknown options: the table's judgement.
    let saved_cwd = w.cwd.clone();
    table_judge(w, "sed", spec, &p, sub);
    w.cwd = saved_cwd;
}
