//! The sandbox trampoline of `agent-guard exec`: bash-guard's [`bash_guard::trampoline_main`]
//! alone. It links none of the CLI (no clap, tokio, sqlx), so it starts in a fraction of the time
//! of `agent-guard __sandbox-exec` (a 21 MB executable to load and relocate on every confined
//! run); `exec` uses it when it sits beside the `agent-guard` executable and falls back to
//! `__sandbox-exec` otherwise.
// Its start is on every confined run's critical path (the run waits for it to enter its
// namespaces), and std's own start-up (a read of /proc/self/maps for the main thread's stack
// guard, an alternate signal stack and its handlers) serves nothing here: the trampoline starts
// at C's `main`. Its descriptors 0-2 are the runner's socket and pipes; a write to a closed pipe
// may kill it (nothing has run then), and `exec` resets the signals the command starts with.
#![cfg_attr(not(test), no_main)]

/// The process's entry, called by the C runtime (std reads the arguments and the environment
/// on its own, from the C runtime's initialisation).
#[cfg(not(test))]
#[allow(unsafe_code)] // an exported symbol: the C runtime calls it as `main`
#[unsafe(export_name = "main")]
extern "C" fn c_main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    libc::c_int::from(bash_guard::trampoline_status(std::env::args_os().skip(1)))
}

#[cfg(test)]
fn main() {}
