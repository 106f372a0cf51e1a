//! The sandbox trampoline of `agent-guard exec`: bash-guard's [`bash_guard::trampoline_main`]
//! alone. It links none of the CLI (no clap, tokio, sqlx), so it starts in a fraction of the time
//! of `agent-guard __sandbox-exec` (a 21 MB executable to load and relocate on every confined
//! run); `exec` uses it when it sits beside the `agent-guard` executable and falls back to
//! `__sandbox-exec` otherwise.

use std::process::ExitCode;

fn main() -> ExitCode {
    bash_guard::trampoline_main(std::env::args_os().skip(1))
}
