//! The catastrophic-text backstop: a string that will be executed (an interpreter's `-c`/`-e`
//! code, a here-document fed to an interpreter, an awk program, the arguments of a program
//! this analyzer does not understand) is searched for a catastrophic command, and denied when
//! it holds one, even where its structure is not understood.

/// Targets whose recursive removal, chmod or chown is catastrophic.
const TARGETS: &[&str] = &[
    "/",
    "/*",
    "~",
    "~/",
    "~/*",
    "$HOME",
    "$HOME/",
    "$HOME/*",
    "${HOME}",
    "${HOME}/",
    "${HOME}/*",
    "/home",
    "/etc",
    "/usr",
    "/bin",
    "/boot",
    "/lib",
    "/var",
    "/root",
    "/sbin",
    ".",
    "./",
    "..",
    "*",
    // PowerShell and Windows spellings (compared lowercased).
    "$env:userprofile",
    "$env:homepath",
    "$env:systemroot",
    "$env:windir",
    "~\\",
    "c:",
    "c:\\",
    "c:/",
    "c:\\*",
    "c:\\windows",
    "c:\\users",
];

/// PowerShell's names for "remove" (cmdlet and aliases), compared lowercased.
const POWERSHELL_REMOVERS: &[&str] = &["remove-item", "ri", "del", "erase", "rd", "rmdir"];

/// PowerShell cmdlets that wipe or format a disk.
const POWERSHELL_DISK_WIPERS: &[&str] = &["format-volume", "clear-disk", "initialize-disk"];

/// Python/Node/Ruby/Perl spellings of "remove this tree".
const TREE_REMOVERS: &[&str] = &[
    "rmtree(",
    "rmSync(",
    "rm_rf(",
    "rm_r(",
    "remove_tree(",
    "rmdir(",
];

/// Endless-loop spellings across shell, Python, Perl, Ruby, Node and awk, whitespace removed
/// and lowercased: with a `fork` in the same text, a fork bomb.
const ENDLESS_LOOPS: &[&str] = &[
    "while1",
    "while(1)",
    "whiletrue",
    "while(true)",
    "while:",
    "for(;;)",
    "loop{",
    "loopdo",
    "until0",
    "until(0)",
    "untilfalse",
    "while($true)",
];

/// Calls that create a process, in the languages above.
const FORKS: &[&str] = &[
    "fork(",
    "fork;",
    "fork}",
    "forkwhile",
    "forkuntil",
    "fork)",
    "fork\n",
    "start-process",
    "start-job",
];

/// Names the catastrophic command it finds in `text`, if any.
pub(crate) fn catastrophic(text: &str) -> Option<&'static str> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains(":(){:|:&};:") || compact.contains(":|:&") {
        return Some("a fork bomb");
    }
    // `perl -e 'fork while 1'`, `python3 -c 'while 1: os.fork()'`, `ruby -e 'loop { fork }'`:
    // the same bomb in an interpreter. Newlines are kept so a bare `fork` at the end of a line
    // counts; a `fork` that ends the text counts too.
    let lower: String = text
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace() || *c == '\n')
        .collect();
    let looping = ENDLESS_LOOPS.iter().any(|l| lower.contains(l));
    let forking = FORKS.iter().any(|f| lower.contains(f)) || lower.trim_end().ends_with("fork");
    if (looping && forking) || lower.contains("forkwhile") || lower.contains("forkuntil") {
        return Some("a fork bomb");
    }
    for statement in text.split(['\n', ';', '&', '|', '(', ')', '`', '{', '}']) {
        let words: Vec<&str> = statement
            .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ',' | '[' | ']'))
            .filter(|w| !w.is_empty())
            .collect();
        // PowerShell is case-insensitive; so are the Windows targets.
        let lowered: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
        let Some(pos) = lowered.iter().position(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            matches!(
                base,
                "rm" | "chmod" | "chown" | "chgrp" | "dd" | "shred" | "wipefs"
            ) || base.starts_with("mkfs")
                || POWERSHELL_REMOVERS.contains(&base)
                || POWERSHELL_DISK_WIPERS.contains(&base)
        }) else {
            continue;
        };
        let cmd = lowered
            .get(pos)
            .map_or("", |w| w.rsplit('/').next().unwrap_or(w));
        let args = lowered.get(pos + 1..).unwrap_or(&[]);
        let recursive = args.iter().any(|a| {
            a == "--recursive" || (a.starts_with('-') && !a.starts_with("--") && a.contains('r'))
        });
        let on_target = args.iter().any(|a| {
            let bare = a.trim_end_matches(['\\', '/']);
            TARGETS
                .iter()
                .any(|t| t.eq_ignore_ascii_case(a) || t.eq_ignore_ascii_case(bare))
        });
        let on_device = args
            .iter()
            .any(|a| a.starts_with("/dev/") || a.starts_with("of=/dev/"));
        match cmd {
            c if POWERSHELL_DISK_WIPERS.contains(&c) => return Some("a disk wiped or formatted"),
            c if (matches!(c, "rm" | "chmod" | "chown" | "chgrp")
                || POWERSHELL_REMOVERS.contains(&c))
                && recursive
                && on_target =>
            {
                return Some(
                    "a recursive removal or permission change of the system, the home directory or the project",
                );
            }
            "dd" | "shred" | "wipefs" if on_device && !args.iter().any(|a| a == "of=/dev/null") => {
                return Some("a write onto a device");
            }
            c if c.starts_with("mkfs") && on_device => {
                return Some("a file system made on a device");
            }
            _ => {}
        }
    }
    for r in TREE_REMOVERS {
        for (i, _) in text.match_indices(r) {
            let arg: String = text
                .get(i + r.len()..)
                .unwrap_or("")
                .chars()
                .take_while(|c| *c != ')' && *c != ',')
                .filter(|c| !matches!(c, '\'' | '"' | ' '))
                .collect();
            if TARGETS.contains(&arg.as_str())
                || arg.contains("expanduser(~")
                || arg.contains("HOME")
                || arg.contains("homedir")
            {
                return Some("a recursive removal of the system or the home directory");
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_catastrophes_in_code() {
        for t in [
            "import os; os.system('rm -rf ~')",
            "require('child_process').execSync(\"rm -rf /\")",
            "system(\"rm -fr $HOME\")",
            ":(){ :|:& };:",
            "dd if=/dev/zero of=/dev/sda",
            "mkfs.ext4 /dev/sdb1",
            "chmod -R 777 /",
            "import shutil; shutil.rmtree('/')",
            "/bin/rm --recursive --force /*",
            "fork while 1",
            "fork while fork",
            "import os\nwhile True: os.fork()",
            "import os\nwhile 1:\n    os.fork()",
            "loop { fork }",
            "loop do\n fork\nend",
            "while(1) require('child_process').fork(__filename)",
            "for(;;) fork();",
            "while (1) { fork; }",
            "Remove-Item -Recurse -Force C:\\",
            "Remove-Item -Path $env:USERPROFILE -Recurse -Force",
            "rm -r -fo ~",
            "ri -Recurse $HOME",
            "rd -r C:\\Windows",
            "Get-Disk | Clear-Disk -RemoveData",
            "Format-Volume -DriveLetter D",
            "while($true){ Start-Process powershell }",
        ] {
            assert!(catastrophic(t).is_some(), "{t}");
        }
    }

    #[test]
    fn leaves_ordinary_code_alone() {
        for t in [
            "print(1)",
            "rm -f build/out.o",
            "rm -rf target",
            "dd if=a.img of=b.img",
            "chmod +x script.sh",
            "mkfs.ext4 disk.img",
            "import os; pid = os.fork(); print(pid)",
            "while True: print(1); break",
            "for i in range(3): print(i)",
            "print('fork')",
            "Remove-Item -Recurse .\\build",
            "Get-ChildItem C:\\ | Select-Object Name",
            "del notes.txt",
        ] {
            assert!(catastrophic(t).is_none(), "{t}");
        }
    }
}
