//! `git`: which subcommands only read, and which options write, run code or use the network.

use crate::analyze::Walker;
use crate::classify::{dynamic_args, network};
use crate::judge::PathAccess;
use crate::verdict::Decision;
use crate::words::Decoded;

const READ: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "grep",
    "describe",
    "shortlog",
    "cat-file",
    "ls-tree",
    "whatchanged",
    "show-ref",
    "for-each-ref",
    "merge-base",
    "name-rev",
    "count-objects",
    "version",
    "rev-list",
    "diff-tree",
    "diff-files",
    "diff-index",
    "check-ignore",
    "check-attr",
    "var",
    "cherry",
    "range-diff",
    "annotate",
    "verify-commit",
    "fsck",
    "help",
];
const REMOTE: &[&str] = &[
    "push",
    "pull",
    "fetch",
    "clone",
    "ls-remote",
    "send-email",
    "request-pull",
    "svn",
    "p4",
    "remote-http",
    "archive-remote",
];
/// Long options (any unambiguous prefix counts) that run another program.
const EXEC_OPTS: &[&str] = &[
    "ext-diff",
    "upload-pack",
    "receive-pack",
    "exec",
    "textconv",
    "open-files-in-pager",
    "paginate",
    "exec-path",
    "config-env",
    "template",
    "run",
];
/// Long options that write a file.
const WRITE_OPTS: &[&str] = &["output", "output-directory"];

pub(crate) fn git(w: &mut Walker<'_>, args: &[Decoded], sub: &str, dyn_args: bool) {
    if dyn_args {
        return dynamic_args(w, sub, "git");
    }
    let mut i = 0;
    // Global options before the subcommand.
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if !t.starts_with('-') {
            break;
        }
        i += 1;
        match t {
            "-c" => {
                let kv = args
                    .get(i)
                    .map(|a| a.text.to_ascii_lowercase())
                    .unwrap_or_default();
                i += 1;
                config_override(w, &kv, sub);
            }
            "-C" => {
                if let Some(d) = args.get(i) {
                    w.path(d, PathAccess::Read, sub, "repository directory");
                }
                i += 1;
            }
            "-p" | "--paginate" => {
                w.add(
                    Decision::Ask,
                    "git_pager",
                    sub,
                    "`git -p` runs the configured pager".to_owned(),
                );
            }
            _ if t.starts_with("--git-dir")
                || t.starts_with("--work-tree")
                || t.starts_with("--namespace") =>
            {
                w.add(
                    Decision::Ask,
                    "git_repo_override",
                    sub,
                    "points git at another repository, whose config can run code".to_owned(),
                );
                if !t.contains('=') {
                    i += 1;
                }
            }
            _ if t.starts_with("--exec-path") || t.starts_with("--config-env") => {
                w.add(
                    Decision::Deny,
                    "git_exec_option",
                    sub,
                    format!("`{t}` makes git run programs that cannot be reviewed"),
                );
                if !t.contains('=') && t.starts_with("--config-env") {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    let Some(verb) = args.get(i).map(|a| a.text.as_str()) else {
        w.add(
            Decision::Allow,
            "read_only",
            sub,
            "`git` without a subcommand prints help".to_owned(),
        );
        return;
    };
    let rest = args.get(i + 1..).unwrap_or(&[]);
    for (k, a) in rest.iter().enumerate() {
        let t = a.text.as_str();
        if let Some(l) = t.strip_prefix("--") {
            let name = l.split_once('=').map_or(l, |(n, _)| n);
            if name.len() >= 2 || name.is_empty() {
                if !name.is_empty()
                    && EXEC_OPTS.iter().any(|o| o.starts_with(name))
                    && !matches!(name, "no-ext-diff" | "no-textconv")
                {
                    w.add(
                        Decision::Deny,
                        "git_exec_option",
                        sub,
                        format!("`{t}` makes git run a program that cannot be reviewed"),
                    );
                }
                if !name.is_empty()
                    && WRITE_OPTS.iter().any(|o| o.starts_with(name))
                    && verb != "format-patch"
                {
                    let target = l.split_once('=').map(|(_, v)| v.to_owned());
                    match target {
                        Some(v) => w.path(
                            &Decoded {
                                text: v,
                                ..a.clone()
                            },
                            PathAccess::Write,
                            sub,
                            "git output option",
                        ),
                        // `--output FILE`: git's parse-options takes the next word.
                        None => match rest.get(k + 1) {
                            Some(f) => w.path(f, PathAccess::Write, sub, "git output option"),
                            None => w.add(
                                Decision::Ask,
                                "writes_files",
                                sub,
                                format!("`{t}` writes a file"),
                            ),
                        },
                    }
                }
            }
        }
    }
    if verb == "grep"
        && rest
            .iter()
            .any(|a| a.text == "-O" || a.text.starts_with("-O"))
    {
        w.add(
            Decision::Deny,
            "git_exec_option",
            sub,
            "`git grep -O` runs a pager program".to_owned(),
        );
    }
    if REMOTE.contains(&verb)
        || (verb == "remote"
            && rest.iter().any(|a| {
                matches!(a.text.as_str(), "update" | "prune" | "show")
                    && !rest.iter().any(|b| b.text == "-n")
            }))
        || (verb == "submodule"
            && rest
                .iter()
                .any(|a| matches!(a.text.as_str(), "update" | "add" | "sync" | "foreach")))
        || (verb == "archive" && rest.iter().any(|a| a.text.starts_with("--remote")))
    {
        return network(w, sub, &format!("git {verb}"));
    }
    let read_only = READ.contains(&verb)
        || (verb == "branch"
            && rest.iter().all(|a| {
                matches!(
                    a.text.as_str(),
                    "-a" | "-r"
                        | "-v"
                        | "-vv"
                        | "--all"
                        | "--list"
                        | "-l"
                        | "--remotes"
                        | "--show-current"
                        | "--merged"
                        | "--no-merged"
                        | "--contains"
                )
            }))
        || (verb == "tag"
            && rest.iter().all(|a| {
                a.text.starts_with('-')
                    && !matches!(a.text.as_str(), "-d" | "-a" | "-s" | "-f" | "-m" | "-F")
            }))
        || (verb == "remote"
            && rest
                .iter()
                .all(|a| matches!(a.text.as_str(), "-v" | "--verbose" | "get-url")))
        || (verb == "stash"
            && rest
                .first()
                .is_some_and(|a| a.text == "list" || a.text == "show"))
        || (verb == "config"
            && rest.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "--get" | "--list" | "-l" | "--get-all" | "--get-regexp" | "get" | "list"
                )
            }))
        || (verb == "reflog"
            && rest
                .first()
                .is_none_or(|a| a.text == "show" || a.text.starts_with('-')))
        || (verb == "worktree" && rest.first().is_some_and(|a| a.text == "list"));
    if read_only {
        if verb == "diff" && rest.iter().any(|a| a.text == "--no-index") {
            for p in rest.iter().filter(|a| !a.text.starts_with('-')) {
                w.path(p, PathAccess::Read, sub, "file");
            }
        }
        w.add(
            Decision::Allow,
            "read_only",
            sub,
            format!("`git {verb}` only reads the repository"),
        );
    } else {
        w.add(
            Decision::Ask,
            "git_write",
            sub,
            format!("`git {verb}` changes the repository or runs an alias"),
        );
    }
}

fn config_override(w: &mut Walker<'_>, kv: &str, sub: &str) {
    let key = kv.split_once('=').map_or(kv, |(k, _)| k);
    let runs = key.starts_with("alias.")
        || key.ends_with(".textconv")
        || key.ends_with("command")
        || key.ends_with(".cmd")
        || key.ends_with(".program")
        || key.ends_with(".helper")
        || key.ends_with("editor")
        || key.ends_with("pager")
        || key.starts_with("pager.")
        || matches!(
            key,
            "core.fsmonitor"
                | "core.hookspath"
                | "core.askpass"
                | "core.gitproxy"
                | "core.worktree"
                | "include.path"
                | "uploadpack.packobjectshook"
                | "protocol.allow"
                | "diff.external"
        )
        || key.starts_with("includeif.")
        || key.starts_with("filter.");
    if runs {
        w.add(
            Decision::Deny,
            "git_config_exec",
            sub,
            format!("`git -c {kv}` makes git run a program that cannot be reviewed"),
        );
    } else {
        w.add(
            Decision::Ask,
            "git_config_override",
            sub,
            format!("`git -c {kv}` changes git's configuration for this command"),
        );
    }
}
