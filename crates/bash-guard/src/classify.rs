//! Knowledge of commands: which are read-only, which options make them write or run code,
//! which wrap another command, which are catastrophic.

use std::path::Path;

use crate::judge::PathAccess;
use crate::table::classes::{
    BUILD_BIT, INTERACTIVE_BIT, INTERPRETERS_BIT, NETWORK_BIT, PRIVILEGE_BIT, PURE_BIT,
    READERS_BIT, SHELLS_BIT, SYSTEM_BIT, WRITERS_BIT,
};
use crate::verdict::Decision;
use crate::walker::{StdinKind, Walker, display_words};
use crate::words::Decoded;

/// Whether a function with this name would shadow a command this crate knows about.
pub(crate) fn is_known_command(name: &str) -> bool {
    crate::table::classes::of(name) != 0
        || crate::table::spec(name).is_some()
        || name.starts_with("mkfs.")
}

pub(crate) fn check_env_name(w: &mut Walker<'_>, name: &str, sub: &str) {
    crate::vars::check_set(w, name, sub);
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
    // Programs that give the command they run a terminal of its own (a pseudo-terminal): its
    // output is a terminal again, whatever this command's is (`script -qc 'git log' /dev/null
    // | cat` starts git's pager).
    let piped = w.stdout_piped;
    if argv
        .first()
        .is_some_and(|a| matches!(base_name(&a.text), "script" | "unbuffer" | "expect"))
    {
        w.stdout_piped = false;
    }
    classify_inner(w, argv, sub, stdin);
    w.stdout_piped = piped;
    if !w.env.is_empty() {
        crate::vars::program_reads(w, argv, before);
    }
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
    // Each simple command looks its name up once in the class lists and once in the table.
    let class = crate::table::classes::of(name);
    let in_class = |bit: u16| class & bit != 0;
    let table_spec = crate::table::spec(name);
    if let Some(done) = special(w, name, class, args, sub, stdin) {
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
    if let Some(spec) = table_spec
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
    if w.config.deny_commands.iter().any(|d| d == name) {
        w.add(
            Decision::Deny,
            "policy_deny",
            sub,
            format!("the policy denies `{name}`"),
        );
        return;
    }
    if w.config.ask_commands.iter().any(|d| d == name) {
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
    // find, sed, env and xargs have table entries for their options but rules in code.
    if !matches!(name, "find" | "sed" | "env" | "xargs")
        && !in_class(PRIVILEGE_BIT)
        && let Some(spec) = table_spec
        && crate::table::claims(spec, args)
    {
        // A wrapper's run-time words are judged where they fall (its data, or the command).
        if dyn_args && spec.operands != crate::table::Operands::Command {
            dynamic_args(w, sub, name);
        }
        return table_command_in(w, name, spec, args, sub, stdin);
    }
    if in_class(PRIVILEGE_BIT) {
        w.add(
            Decision::Deny,
            "privilege_escalation",
            sub,
            format!("`{name}` runs with other privileges"),
        );
        return;
    }
    let system = in_class(SYSTEM_BIT);
    let interactive = !system && in_class(INTERACTIVE_BIT);
    // A listed command the table describes is judged by its entry (systemctl: its reporting
    // subcommands are data there, the rest change the system; man: prints a page).
    if (system || interactive)
        && let Some(spec) = table_spec.filter(|s| !s.fallback)
    {
        if dyn_args {
            dynamic_args(w, sub, name);
        }
        return table_command_in(w, name, spec, args, sub, stdin);
    }
    if system || name.starts_with("mkfs.") {
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
    if interactive && batch_mode(w, name, args, sub, stdin) {
        return;
    }
    if interactive {
        w.add(
            Decision::Deny,
            "interactive",
            sub,
            format!("`{name}` is interactive and needs a terminal the agent does not have"),
        );
        return;
    }
    if in_class(NETWORK_BIT) {
        // A client the command table describes (curl, wget: `class = "network"`) has the files
        // its options name judged too; the table's class still leaves the transfer to the
        // network policy.
        if let Some(spec) = table_spec {
            if dyn_args {
                dynamic_args(w, sub, name);
            }
            return table_command(w, name, spec, args, sub);
        }
        network(w, sub, name);
        return;
    }
    if in_class(PURE_BIT) {
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
    if in_class(SHELLS_BIT) {
        shell(w, name, args, sub, stdin);
        return;
    }
    if matches!(name, "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk") {
        return crate::awk::awk(w, name, args, sub);
    }
    if in_class(INTERPRETERS_BIT) {
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
    if in_class(READERS_BIT) {
        reader(w, name, args, sub, dyn_args);
        return;
    }
    if in_class(BUILD_BIT) {
        build(w, name, args, sub);
        return;
    }
    if in_class(WRITERS_BIT) {
        writer(w, name, args, sub, stdin, dyn_args);
        return;
    }
    w.add(
        Decision::Ask,
        "unknown_command",
        sub,
        format!("`{name}` is not a command this analyzer knows to be read-only"),
    );
    unknown_program(w, args, sub, stdin);
}

/// What an unknown program may do with its arguments, judged from their shape. Unknown is not
/// harmless: words that parse as a command (`setarch x86_64 rm -rf ~`, `prlimit --nofile=9
/// rm ...`, `rustup run stable rm ...`) may be run by it, as a wrapper runs them, and a path
/// that is a credential store is read (`shuf ~/.aws/credentials`), as `cat` would. Nor is it
/// catastrophic: only the refusals of these readings are kept, the unknown program already
/// asks, and words that are only data cost nothing.
fn unknown_program(w: &mut Walker<'_>, args: &[Decoded], sub: &str, stdin: &StdinKind) {
    let before = w.findings.len();
    for a in args.iter().filter(|a| !a.dynamic) {
        let text = match a.text.strip_prefix("--") {
            Some(opt) => opt.split_once('=').map_or("", |(_, v)| v),
            None if a.text.starts_with('-') => "",
            None => a.text.as_str(),
        };
        if text.is_empty() || text.contains("://") {
            continue;
        }
        let path = Decoded {
            text: text.to_owned(),
            ..a.clone()
        };
        w.path(&path, PathAccess::Read, sub, "argument");
    }
    // Every word that names a known command starts a tail judged as the command a wrapper
    // runs (a few, so a long argument list stays cheap).
    let mut tails = 0;
    for (k, a) in args.iter().enumerate() {
        if tails >= 8 {
            break;
        }
        if a.dynamic || a.text.starts_with('-') || a.text.contains('=') {
            continue;
        }
        let name = base_name(&a.text);
        if !is_known_command(name) || w.functions.contains(name) {
            continue;
        }
        tails += 1;
        let tail = args.get(k..).unwrap_or(&[]);
        let saved = w.cwd.clone();
        let display = display_words(tail);
        classify(w, tail, &display, stdin);
        w.cwd = saved;
    }
    // A tail that reaches the network or needs a terminal is weak evidence that the words
    // are a command (`make ssh`, `cargo build -p curl` name targets): those refusals are the
    // policy's and the terminal's, not harm, and the unknown program still asks.
    let mut index = 0;
    w.findings.retain(|f| {
        index += 1;
        index <= before
            || (f.decision == Decision::Deny && !matches!(f.code, "network" | "interactive"))
    });
}

/// The batch forms of terminal programs, which need no terminal: `top -b` prints the process
/// table, a pager whose output is not a terminal copies its files as `cat` does, `tmux ls` and
/// `screen -ls` list sessions, `fc -l` lists history; an editor in batch mode (`vim -es`,
/// `ex -s`, `ed`, `emacs --batch`, `nvim --headless`) runs the editing commands it is given,
/// which are code this analyzer does not read. `false` leaves the program interactive.
fn batch_mode(
    w: &mut Walker<'_>,
    name: &str,
    args: &[Decoded],
    sub: &str,
    stdin: &StdinKind,
) -> bool {
    if args.iter().any(|a| a.dynamic) {
        return false;
    }
    let flag = |c: char| {
        args.iter()
            .any(|a| a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains(c))
    };
    let has = |o: &str| args.iter().any(|a| a.text == o);
    match name {
        "top" if flag('b') => {
            if !flag('n') {
                w.add(
                    Decision::Ask,
                    "long_running",
                    sub,
                    "`top -b` without `-n` keeps printing until it is stopped".to_owned(),
                );
            }
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "`top -b` prints the process table".to_owned(),
            );
            true
        }
        "less" | "more" | "most" | "pg" if w.stdout_piped => {
            for a in args.iter().filter(|a| !a.text.starts_with(['-', '+'])) {
                w.path(a, PathAccess::Read, sub, "file");
            }
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                format!("`{name}` writing to a pipe copies its files, as `cat` does"),
            );
            true
        }
        "tmux"
            if matches!(
                args.first().map(|a| a.text.as_str()),
                Some("ls" | "list-sessions" | "list-windows" | "list-panes" | "has-session")
            ) =>
        {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "lists tmux sessions".to_owned(),
            );
            true
        }
        "screen" if args.len() == 1 && (has("-ls") || has("-list")) => {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "lists screen sessions".to_owned(),
            );
            true
        }
        "fc" if flag('l') => {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                "lists the history".to_owned(),
            );
            true
        }
        "vim" | "vi" | "nvim" | "ex" | "view" | "ed" | "emacs"
            if (name == "ed" || name == "ex") && flag('s')
                || (flag('e') || flag('E')) && flag('s')
                || has("-es")
                || has("-Es")
                || has("--batch")
                || has("--script")
                || has("--headless") =>
        {
            w.add(
                Decision::Ask,
                "inline_code",
                sub,
                format!("`{name}` in batch mode runs editing commands (which can run programs and write files) that this analyzer does not review"),
            );
            // An ex or ed command `!CMD` (given by `-c CMD`, `+CMD`, or a line of a script
            // fed on standard input; ex's may follow a line range) runs CMD in a shell: judged.
            let mut commands: Vec<String> = Vec::new();
            let mut prev_c = false;
            for a in args {
                let t = a.text.as_str();
                if prev_c {
                    commands.push(t.to_owned());
                } else if let Some(c) = t.strip_prefix('+') {
                    commands.push(c.to_owned());
                }
                prev_c = t == "-c" || t == "--cmd";
            }
            if let StdinKind::Literal(script) = stdin {
                commands.extend(script.lines().map(str::to_owned));
            }
            for c in &commands {
                let c = c.trim_start_matches([':', ' ', '\t']);
                // A range before it: line numbers, marks, `.`, `$`, `%`, `,`, `;`, `+`, `-`.
                let range = c
                    .find(|ch: char| {
                        !(ch.is_ascii_digit()
                            || matches!(ch, '.' | '$' | '%' | ',' | ';' | '+' | '-' | '\''))
                    })
                    .unwrap_or(c.len());
                if let Some(shell) = c.get(range..).and_then(|r| r.strip_prefix('!')) {
                    w.script(shell, StdinKind::Terminal);
                }
            }
            for a in args.iter().filter(|a| !a.text.starts_with(['-', '+'])) {
                w.path(a, PathAccess::Read, sub, "file");
            }
            true
        }
        _ => false,
    }
}

pub(crate) use crate::walker::network;

pub(crate) fn dynamic_args(w: &mut Walker<'_>, sub: &str, name: &str) {
    w.add(Decision::Ask, "dynamic_argument", sub, format!("an argument of `{name}` is only known at run time; it could be an option that writes or runs code"));
}

/// Commands whose read-only forms are known (false denies otherwise), and wrappers that run
/// a command string. `None` leaves the command to the lists.
fn special(
    w: &mut Walker<'_>,
    name: &str,
    class: u16,
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
        _ if class & INTERACTIVE_BIT != 0
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
        _ if only_version && class & (INTERPRETERS_BIT | BUILD_BIT) != 0 => {
            w.add(
                Decision::Allow,
                "read_only",
                sub,
                format!("`{name}` only prints its version or help"),
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
                    | "-untrusted" | "-kfile" | "-genconf" | "-oid" | "-CAserial" | "-extfile"
                    | "-chainCAfile" | "-crl" | "-nameopt_file" => Some(PathAccess::Read),
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
    table_command_in(w, name, spec, args, sub, &StdinKind::Terminal);
}

/// As [`table_command`], for a command whose standard input is `stdin` (a wrapper passes it
/// on to the command it runs).
fn table_command_in(
    w: &mut Walker<'_>,
    name: &str,
    spec: &crate::table::CommandSpec,
    args: &[Decoded],
    sub: &str,
    stdin: &StdinKind,
) {
    let p = crate::table::interpret(spec, args);
    let saved_cwd = w.cwd.clone();
    table_judge(w, name, spec, &p, sub, stdin);
    w.cwd = saved_cwd;
}

fn table_judge(
    w: &mut Walker<'_>,
    name: &str,
    spec: &crate::table::CommandSpec,
    p: &crate::table::Parsed<'_>,
    sub: &str,
    stdin: &StdinKind,
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
        let opt = g.spec.shown();
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
                Some(v) => config_override(
                    w,
                    name,
                    &opt.to_string(),
                    &v.text.to_ascii_lowercase(),
                    spec,
                    sub,
                ),
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
            let m = g.spec.mode_name().and_then(|l| spec.modes.get(&l));
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
    recursive |= mode.is_some_and(|m| m.recursive);
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
                .map(|c| crate::walker::normalize(&c.join(&d.text)))
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
                return table_judge(w, &full, subspec, &q, sub, stdin);
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
    if spec.whole.long_running {
        w.add(
            Decision::Ask,
            "long_running",
            sub,
            format!(
                "`{name}` {}",
                spec.reason
                    .as_deref()
                    .unwrap_or("keeps running until it is stopped")
            ),
        );
    }
    if role == Operands::Command {
        // The first `lead` operands are the wrapper's data (a duration, a CPU mask); the rest
        // is the command it runs, judged as any command.
        let lead = p.operands.get(..spec.lead).unwrap_or(&p.operands);
        if lead.iter().any(|a| a.dynamic) {
            dynamic_args(w, sub, name);
        }
        let inner = p.operands.get(spec.lead..).unwrap_or(&[]);
        return run_inner(w, inner, sub, stdin, name);
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
        Operands::Data | Operands::Names | Operands::Command => {
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
    crate::build_opts::check(w, name, args, sub);
    w.add(
        Decision::Ask,
        "build",
        sub,
        format!("`{name}` builds, tests or runs project code, which has side effects"),
    );
    // `rustup run stable CMD`, `npm explore PKG -- CMD`, `cargo run -- ...`: a build tool runs
    // commands named on its line. Containers and clusters run theirs elsewhere.
    if !matches!(name, "docker" | "podman" | "kubectl") {
        unknown_program(w, args, sub, &StdinKind::Terminal);
    }
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
        // Table entries for their options; their rules stay code.
        "xargs" => return xargs(w, args, sub),
        "env" => {
            // `env NAME=v cmd`: the variables last for the command it runs.
            let depth = w.env.len();
            env(w, args, sub, stdin);
            w.env.truncate(depth);
            return;
        }
        _ => {}
    }
    if let Some(spec) = crate::table::spec(name).filter(|s| !s.fallback) {
        // A wrapper's run-time words are judged where they fall (its data, or the command).
        if dyn_args && spec.operands != crate::table::Operands::Command {
            dynamic_args(w, sub, name);
        }
        return table_command_in(w, name, spec, args, sub, stdin);
    }
    match name {
        // The wrappers whose options are flat (timeout, nice, nohup, stdbuf, ...) are table
        // entries with `pos = "command"`; these are builtins with their own rules.
        "time" | "command" | "builtin" | "exec" => {
            let mut i = 0;
            let with_arg: &[&str] = match name {
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
                    w.cwd = w.base_home.map(std::path::PathBuf::from);
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
                        .map(|c| crate::walker::normalize(&c.join(&d.text)));
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
        "zip" | "gzip" | "gunzip" | "bzip2" | "xz" | "unxz" | "zstd" | "patch" | "xdg-open"
        | "open" | "script" | "strace" | "ltrace" | "gdb" | "nsenter" | "unshare" | "firejail" => {
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
            let recursive = name == "zip"
                && args.iter().any(|a| {
                    a.text == "--recurse-paths"
                        || (a.text.starts_with('-')
                            && !a.text.starts_with("--")
                            && a.text.contains(['r', 'R']))
                });
            for p in args.iter().filter(|a| !a.text.starts_with('-')) {
                w.path(p, PathAccess::Read, sub, "argument");
                if recursive {
                    w.tree_read(p, sub, "zip -r");
                }
            }
            if matches!(name, "firejail" | "gdb" | "strace" | "ltrace") {
                unknown_program(w, args, sub, stdin);
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

/// The table entry of a wrapper whose rules stay code (env, xargs), read with its options;
/// `None` when a finding already decided (an option it does not have, or no entry).
fn wrapper_options<'a>(
    w: &mut Walker<'_>,
    name: &str,
    args: &[Decoded],
    sub: &str,
) -> Option<crate::table::Parsed<'a>> {
    let Some(spec) = crate::table::spec(name) else {
        w.add(
            Decision::Ask,
            "unknown_command",
            sub,
            format!("the command table has no `{name}`"),
        );
        return None;
    };
    let p = crate::table::interpret(spec, args);
    if let Some(u) = p.unknown.first() {
        w.add(
            Decision::Ask,
            "unknown_option",
            sub,
            format!("`{name}` has no option `{u}` in the command table (or it is ambiguous)"),
        );
        return None;
    }
    Some(p)
}

/// `env [OPTION]... [NAME=VALUE]... [COMMAND [ARG]...]`: its options from the table; what stays
/// code is `-S` (the string is split into the command's first words), `-C` (the command runs
/// there) and the assignments, which last for the command.
fn env(w: &mut Walker<'_>, args: &[Decoded], sub: &str, stdin: &StdinKind) {
    let Some(p) = wrapper_options(w, "env", args, sub) else {
        return;
    };
    let mut chdir: Option<&Decoded> = None;
    for g in &p.opts {
        match g.spec.short {
            Some('C') => chdir = g.values.last(),
            Some('S') => {
                let Some(v) = g.values.last() else {
                    w.add(
                        Decision::Ask,
                        "missing_value",
                        sub,
                        "`env -S` without its string".to_owned(),
                    );
                    return;
                };
                if v.dynamic {
                    return dynamic_wrapped(w, sub, "env");
                }
                let rest: Vec<&str> = p.operands.iter().map(|a| a.text.as_str()).collect();
                let text = format!("{} {}", v.text, rest.join(" "));
                w.script(&text, stdin.clone());
                return;
            }
            _ => {}
        }
    }
    let mut i = 0;
    while let Some(a) = p.operands.get(i) {
        if a.dynamic {
            return dynamic_wrapped(w, sub, "env");
        }
        let Some((n, v)) = a.text.split_once('=') else {
            break;
        };
        let value = Decoded {
            text: v.to_owned(),
            ..a.clone()
        };
        crate::vars::set_for_command(w, n, Some(&value), sub);
        i += 1;
    }
    let saved = w.cwd.clone();
    if let Some(d) = chdir {
        w.path(d, PathAccess::Read, sub, "directory");
        w.cwd = if d.dynamic {
            None
        } else {
            w.cwd
                .as_ref()
                .map(|c| crate::walker::normalize(&c.join(&d.text)))
        };
    }
    run_inner(w, p.operands.get(i..).unwrap_or(&[]), sub, stdin, "env");
    w.cwd = saved;
}

/// `xargs [OPTION]... [COMMAND [ARG]...]`: its options from the table; the command gets
/// arguments from standard input, unknown to the review, and with `-I R` every word holding R
/// becomes run-time text.
fn xargs(w: &mut Walker<'_>, args: &[Decoded], sub: &str) {
    let Some(p) = wrapper_options(w, "xargs", args, sub) else {
        return;
    };
    let mut replace: Option<String> = None;
    for g in &p.opts {
        match g.spec.short {
            Some('p') => {
                w.add(
                    Decision::Deny,
                    "interactive",
                    sub,
                    "`xargs -p` prompts on a terminal".to_owned(),
                );
                return;
            }
            // `-i` alone replaces `{}`.
            Some('I' | 'i') => {
                replace = Some(
                    g.values
                        .last()
                        .map_or_else(|| "{}".to_owned(), |v| v.text.clone()),
                );
            }
            Some('a') => match g.values.last() {
                Some(f) => w.path(f, PathAccess::Read, sub, "argument file"),
                None => {
                    w.add(
                        Decision::Ask,
                        "missing_value",
                        sub,
                        "`xargs -a` without its file".to_owned(),
                    );
                    return;
                }
            },
            _ => {}
        }
    }
    let mut inner: Vec<Decoded> = p.operands.clone();
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
    run_inner(w, &inner, sub, &StdinKind::Terminal, "xargs");
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
        Some(c) => crate::walker::normalize(&c.join(t)),
        None => crate::walker::normalize(&Path::new("/").join(t)),
    };
    let s = abs.to_string_lossy();
    let top = [
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root",
        "/sbin", "/srv", "/sys", "/usr", "/var", "/tmp", "/mnt", "/media", "/Users", "/System",
    ];
    if top.contains(&s.as_ref()) {
        return true;
    }
    if w.base_home.is_some_and(|h| h.trim_end_matches('/') == s) {
        return true;
    }
    // `rm -rf link/`: with a trailing slash the name is the directory the symlink points to,
    // whose contents go (rm removes the tree below it), so the target is what is judged.
    if p.text.ends_with('/')
        && !p.glob
        && std::fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink())
        && let Ok(real) = std::fs::canonicalize(&abs)
    {
        let probe = Decoded {
            text: format!("{}/", real.to_string_lossy().trim_end_matches('/')),
            ..Decoded::default()
        };
        let real_s = real.to_string_lossy();
        if top.contains(&real_s.as_ref())
            || w.base_home
                .is_some_and(|h| h.trim_end_matches('/') == real_s)
            || w.is_root(&probe)
        {
            return true;
        }
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
    // Primaries that do not pick files by what they are: with only these, an action applies
    // to every file below the start points.
    const UNSELECTIVE: &[&str] = &[
        "mindepth",
        "maxdepth",
        "depth",
        "d",
        "type",
        "xtype",
        "xdev",
        "mount",
        "follow",
        "daystart",
        "noleaf",
        "warn",
        "nowarn",
        "ignore_readdir_race",
        "noignore_readdir_race",
        "regextype",
        "print",
        "print0",
        "true",
        "ls",
        "delete",
        "help",
        "version",
    ];
    let narrowed = e
        .primaries
        .iter()
        .any(|(p, _)| !UNSELECTIVE.contains(&p.name.as_str()));
    for (p, values) in &e.primaries {
        let fx = p.effects;
        let what = format!("-{}", p.name.trim_end_matches('*'));
        let what = format!("`{what}`");
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
            // `find -delete` with no test that picks files removes everything below its start
            // points (`.` when none is given): on the system, the home or the project that is
            // `rm -rf`.
            if !narrowed {
                for s in &starts {
                    if !s.dynamic && is_catastrophic_target(w, s) {
                        w.add(
                            Decision::Deny,
                            "destroys_system",
                            sub,
                            format!(
                                "`find {} {what}` removes everything below it: it destroys the system, the home directory or the project",
                                s.text
                            ),
                        );
                    }
                }
            }
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
    table_judge(w, "sed", spec, &p, sub, &StdinKind::Terminal);
    w.cwd = saved_cwd;
}
