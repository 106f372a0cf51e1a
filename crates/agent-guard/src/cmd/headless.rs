//! Whether the client that ran this hook is a headless session nobody can answer.
//!
//! Gemini CLI honours a hook's `ask` by waiting for a confirmation; under `gemini -p` there is
//! nobody to give it and the session hangs (seen in the real client, tests/clients). Its hook
//! input and environment do not say which mode it runs in, so the hook reads the command line
//! of the client process above it (through the shell that ran the hook command).

use std::path::Path;

/// How many ancestors to look through: the shell wrapper, node's relaunch, the client.
const MAX_DEPTH: usize = 4;

/// Whether an ancestor process is `client` run with one of `flags` (e.g. `-p`, `--prompt`).
/// `false` when /proc cannot tell: an ask then waits for a person, which refuses nothing
/// wrongly (the call does not run while it waits).
pub(crate) fn client_has_flag(client: &str, flags: &[&str]) -> bool {
    // Up from the process the client started: for a judge of the resident guard, the entry
    // (its own parent is the server). An entry that is gone (killed) shows no client.
    let hook = Path::new("/proc").join(crate::resident::hook_process().to_string());
    let Some(mut pid) = parent_of(&hook) else {
        return false;
    };
    for _ in 0..MAX_DEPTH {
        let proc_dir = Path::new("/proc").join(pid.to_string());
        if let Ok(raw) = std::fs::read(proc_dir.join("cmdline")) {
            let args: Vec<String> = raw
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if is_client(&args, client) {
                return has_flag(&args, flags);
            }
        }
        match parent_of(&proc_dir) {
            Some(p) if p > 1 => pid = p,
            _ => return false,
        }
    }
    false
}

/// Whether argv is the client: its program, or the script node runs, is named `client`.
fn is_client(args: &[String], client: &str) -> bool {
    args.iter().take(2).any(|a| {
        Path::new(a)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().trim_end_matches(".js") == client)
    })
}

/// Whether one of `flags` appears among the arguments, alone or as `--flag=value`.
fn has_flag(args: &[String], flags: &[&str]) -> bool {
    args.iter().skip(1).any(|a| {
        flags
            .iter()
            .any(|f| a == f || a.strip_prefix(f).is_some_and(|rest| rest.starts_with('=')))
    })
}

fn parent_of(proc_dir: &Path) -> Option<u32> {
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so read after the last `)`.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn gemini_prompt_flags_are_seen() {
        let flags = ["-p", "--prompt"];
        let a = argv("node /opt/x/node_modules/.bin/gemini -p go --yolo");
        assert!(is_client(&a, "gemini") && has_flag(&a, &flags));
        let a = argv("/usr/bin/node /opt/bundle/gemini.js --prompt=go");
        assert!(is_client(&a, "gemini") && has_flag(&a, &flags));
        let a = argv("node /opt/bin/gemini --yolo");
        assert!(is_client(&a, "gemini") && !has_flag(&a, &flags));
        assert!(!is_client(&argv("bash -c gemini -p"), "gemini"));
        assert!(!has_flag(&argv("gemini --prompt-interactive go"), &flags));
    }

    #[test]
    fn a_process_without_the_client_above_it_is_not_headless() {
        assert!(!client_has_flag("no-such-client-name", &["-p"]));
    }
}
