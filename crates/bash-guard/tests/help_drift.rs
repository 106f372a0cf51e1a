#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The command table against the programs themselves: for each entry listed here whose program
//! is installed, every long option its `--help` prints must be in the entry (or in the entry's
//! ignore list below, with the reason), so a newer program's option cannot slip past the table
//! unnoticed (an option the table does not know asks, but an entry that is silently behind its
//! program is friction, and an option added with an effect must be marked). A program that is
//! absent, or whose `--help` does not answer in time, is skipped with a note.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Entries whose `--help` lists every long option in GNU form (coreutils, findutils,
/// diffutils, util-linux, procps, binutils and others installed on a Debian machine).
#[rustfmt::skip]
const CHECKED: &[&str] = &[
    // coreutils
    "cat", "head", "tail", "wc", "ls", "stat", "du", "comm", "paste", "nl", "tac", "od", "md5sum",
    "sha256sum", "base64", "fold", "cut", "uniq", "sort", "rev", "tsort", "expand", "unexpand",
    "fmt", "join", "numfmt", "rm", "rmdir", "unlink", "shred", "mkdir", "mkfifo", "mknod",
    "touch", "truncate", "tee", "chmod", "chown", "chgrp", "cp", "mv", "install", "ln", "split",
    "csplit", "date", "shuf", "pr", "ptx", "basenc", "dircolors", "pathchk", "factor", "hostid",
    "pinky",
    // findutils, diffutils, grep, sed, patch
    "diff", "cmp", "diff3", "sdiff", "grep", "sed", "patch",
    // util-linux
    "lscpu", "lsblk", "lsmem", "lsns", "lsipc", "lslocks", "lslogins", "lsirq", "lsfd",
    "findmnt", "blkid", "namei", "fincore", "wdctl", "utmpdump", "col", "colrm", "ul", "mcookie",
    "last", "dmesg", "column", "hexdump", "look", "getopt", "scriptreplay", "logger", "renice",
    "blockdev", "partx", "ipcs", "losetup", "hwclock", "mountpoint", "findfs", "isosize",
    "zramctl", "swaplabel", "blkzone",
    // procps
    "pgrep", "pstree", "pmap", "pwdx", "vmstat", "free", "w", "slabtop", "top",
    // binutils
    "readelf", "objdump", "nm", "strings", "addr2line",
    // shadow, systemd, man-db, gettext, dpkg, others
    "pwck", "grpck", "faillog", "choom", "systemd-cgls", "systemd-detect-virt", "systemd-path",
    "systemd-escape", "journalctl", "manpath", "lexgrog", "accessdb", "whatis", "apropos",
    "msgcat", "msggrep", "msguniq", "msgunfmt", "msgcmp", "gettext", "ngettext", "envsubst",
    "update-alternatives", "dpkg-deb", "xz", "gzip", "bzip2", "iconv", "ss", "nstat", "netstat",
    "file", "jq", "ed", "getent", "lsb_release", "xxd", "fc-list", "fc-match", "fc-query",
    "upower", "pg_config", "rustfmt", "pod2text",
];

/// Long options a `--help` prints that an entry leaves out on purpose: (command, option, why).
const IGNORED: &[(&str, &str, &str)] = &[
    // Placeholders: the help names the family (`--GTYPE-group-format` for --old-, --new-,
    // --changed- and --unchanged-group-format), each of which is in the entry.
    (
        "diff",
        "--GTYPE-group-format",
        "a placeholder for the four group formats",
    ),
    (
        "diff",
        "--LTYPE-line-format",
        "a placeholder for the three line formats",
    ),
];

/// Runs `program --help` for at most five seconds; its standard output and error, or `None`.
fn help_text(program: &str) -> Option<String> {
    let mut child = Command::new(program)
        .arg("--help")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LC_ALL", "C")
        .env("PAGER", "cat")
        .env("SYSTEMD_PAGER", "cat")
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        if child.try_wait().ok()?.is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut text = String::new();
    child.stdout.take()?.read_to_string(&mut text).ok()?;
    let mut err = String::new();
    child.stderr.take()?.read_to_string(&mut err).ok()?;
    text.push_str(&err);
    Some(text)
}

/// The long options a help text defines: `--name` words in the option column of lines that
/// start (after indentation) with a dash.
fn help_long_options(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if !t.starts_with('-') || line.len() == t.len() {
            continue;
        }
        // The option column ends at the first run of two spaces (or a tab).
        let column = t
            .split("  ")
            .next()
            .unwrap_or(t)
            .split('\t')
            .next()
            .unwrap_or(t);
        for word in column.split([' ', ',', '|']) {
            let Some(body) = word.strip_prefix("--") else {
                continue;
            };
            let name: String = body
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if name.len() > 1 && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn help_long_options_are_read_from_the_option_column() {
    let text = "Usage: x [OPTION]...\n  -a, --all     do not ignore --hidden entries\n      --block-size=SIZE  scale\n      --color[=WHEN]   colorize\n  -w, --width <n>  set width\nMore text --not-an-option here\n";
    assert_eq!(
        help_long_options(text),
        ["all", "block-size", "color", "width"]
    );
}

#[test]
fn entries_know_every_long_option_their_program_prints() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for command in CHECKED {
        let Some(known) = bash_guard::tidy::long_options(command) else {
            missing.push(format!("{command}: no table entry"));
            continue;
        };
        let Some(text) = help_text(command) else {
            println!("note: `{command} --help` is not available here; skipped");
            continue;
        };
        checked += 1;
        for option in help_long_options(&text) {
            let ignored = IGNORED
                .iter()
                .any(|(c, o, _)| c == command && o.trim_start_matches('-') == option);
            if !ignored && !known.contains(&option) {
                missing.push(format!("{command} --{option}"));
            }
        }
    }
    println!("compared {checked} entries with their program's --help");
    assert!(
        missing.is_empty(),
        "long options the programs print that their entries lack (add them to commands.toml with their effect, or to IGNORED with the reason): {missing:?}"
    );
}
