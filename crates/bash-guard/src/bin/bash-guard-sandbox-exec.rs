//! The sandbox trampoline of bash-guard: confines itself, then executes the command after `--`.
//! Used by bash-guard's own tests and by embedders without a binary of their own.

use std::process::ExitCode;

fn main() -> ExitCode {
    bash_guard::trampoline_main(std::env::args_os().skip(1))
}
