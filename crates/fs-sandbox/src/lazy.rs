//! Tables compiled on first use.
//!
//! Compiling the sensitive and protected glob sets is most of what building a
//! [`Sandbox`](crate::Sandbox) costs, and a short-lived process (one hook call,
//! `agent-guard exec -- true`) often judges no path at all. The builder therefore validates the
//! policy's own patterns (cheap: each glob is parsed, nothing is compiled; the default tables are
//! parsed by their tests), so a bad policy is still a typed error at build time, and the sets are
//! compiled when the first path is judged.

use std::sync::OnceLock;

use crate::error::SandboxError;

/// A value compiled from `input` by `compile` the first time it is needed.
pub(crate) struct OnFirstUse<I, T> {
    input: I,
    compile: fn(&I) -> Result<T, SandboxError>,
    cell: OnceLock<Result<T, SandboxError>>,
}

impl<I, T> OnFirstUse<I, T> {
    pub(crate) fn new(input: I, compile: fn(&I) -> Result<T, SandboxError>) -> Self {
        OnFirstUse {
            input,
            compile,
            cell: OnceLock::new(),
        }
    }

    /// What the value is compiled from.
    #[cfg(test)]
    pub(crate) fn input(&self) -> &I {
        &self.input
    }

    /// Whether the value has been compiled (successfully or not).
    pub(crate) fn is_compiled(&self) -> bool {
        self.cell.get().is_some()
    }

    /// The compiled value, or why it could not be compiled (callers fail closed on `Err`: the
    /// patterns were validated at build time, so this is a regex size limit or similar).
    pub(crate) fn get(&self) -> Result<&T, &SandboxError> {
        self.cell
            .get_or_init(|| (self.compile)(&self.input))
            .as_ref()
    }
}

impl<I, T: std::fmt::Debug> std::fmt::Debug for OnFirstUse<I, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cell.get() {
            Some(Ok(value)) => value.fmt(f),
            Some(Err(err)) => write!(f, "OnFirstUse(failed: {err})"),
            None => f.write_str("OnFirstUse(not compiled yet)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    fn count(input: &u32) -> Result<u32, SandboxError> {
        CALLS.fetch_add(1, Ordering::SeqCst);
        Ok(input * 2)
    }

    #[test]
    fn compiles_once_and_only_when_asked() {
        let lazy = OnFirstUse::new(21, count);
        assert_eq!(CALLS.load(Ordering::SeqCst), 0);
        assert_eq!(lazy.get().ok(), Some(&42));
        assert_eq!(lazy.get().ok(), Some(&42));
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_failed_compile_is_an_error_every_time() {
        let lazy: OnFirstUse<(), u32> = OnFirstUse::new((), |_| {
            Err(SandboxError::BadPattern {
                pattern: "x".to_owned(),
                message: "too big".to_owned(),
            })
        });
        assert!(lazy.get().is_err());
        assert!(lazy.get().is_err());
    }
}
