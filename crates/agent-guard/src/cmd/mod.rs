//! One module per subcommand: each has a clap `Args` and a `run` returning the exit code.

pub(crate) mod allow_once;
pub(crate) mod audit;
mod audit_rec;
pub(crate) mod auto;
pub(crate) mod bash;
pub(crate) mod cancel;
pub(crate) mod check;
pub(crate) mod claude_hook;
mod claude_post;
mod client_trust;
pub(crate) mod codex_hook;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod exec;
pub(crate) mod explain;
pub(crate) mod gemini_hook;
mod headless;
mod hook;
pub(crate) use hook::HOOK_STACK;
mod hook_deadline;
pub(crate) mod init;
pub(crate) mod lint;
pub(crate) mod path;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod session;
pub(crate) mod test;

/// How much of a hook's work a warm-up does (see `hook::warm_up`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WarmUp {
    /// Every kind of call: the server, once, so every table is built before it forks.
    Everything,
    /// One call that reads a file through bash, on the calling thread: an idle judge's
    /// judging thread, so the pages a judgement writes (its stack's too) are its own.
    OneCall,
}

/// Loads what a hook call touches, for the resident hook guard (see `hook::warm_up`).
pub(crate) fn warm_up_hooks(how: WarmUp) {
    if how == WarmUp::Everything {
        // The built-in secret detectors, compiled once for every judge that records a row
        // (a quarter of such a judgement); a constant table, so sharing it changes nothing.
        let _ = perm_hooks::SecretScanner::default_set();
    }
    match how {
        WarmUp::Everything => hook::warm_up(&claude_hook::Claude, usize::MAX),
        WarmUp::OneCall => hook::warm_up_here(&claude_hook::Claude, 1),
    }
}
