use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use crate::Intervention;

/// The seed's `cancelled_runs` set of session ids, with a [`CancellationToken`] per session so
/// code waiting on a run (a tool, a subagent) is woken at once instead of polling.
///
/// `insert` cancels, `contains` is the loop's check, `remove` forgets the session (its next
/// token starts uncancelled). Child tokens for subagents are cancelled with their parent.
#[derive(Debug, Default)]
pub struct CancellationRegistry {
    sessions: Mutex<HashMap<String, CancellationToken>>,
}

impl CancellationRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        CancellationRegistry::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, CancellationToken>> {
        // The map stays consistent under a panic elsewhere (each operation is one call), so a
        // poisoned lock is still safe to use.
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The session's token (created uncancelled if the session is new).
    pub fn token(&self, session: &str) -> CancellationToken {
        self.lock().entry(session.to_owned()).or_default().clone()
    }

    /// A token for a subagent of `session`: cancelled when the session is, cancellable alone.
    pub fn child_token(&self, session: &str) -> CancellationToken {
        self.token(session).child_token()
    }

    /// Cancels `session` (the seed's `cancelled_runs.insert`), waking every waiter.
    pub fn insert(&self, session: &str) {
        self.token(session).cancel();
    }

    /// Whether `session` is cancelled.
    pub fn contains(&self, session: &str) -> bool {
        self.lock()
            .get(session)
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Forgets `session` (on session stop); returns whether it was cancelled.
    pub fn remove(&self, session: &str) -> bool {
        self.lock()
            .remove(session)
            .is_some_and(|token| token.is_cancelled())
    }

    /// `Some(Cancelled)` when `session` is cancelled: the loop's check at each step start and
    /// the executor's check around a tool.
    pub fn check(&self, session: &str) -> Option<Intervention> {
        self.contains(session).then(|| Intervention::Cancelled {
            session: session.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_contains_remove() {
        let r = CancellationRegistry::new();
        let token = r.token("s");
        assert!(!r.contains("s"));
        assert_eq!(r.check("s"), None);
        r.insert("s");
        assert!(r.contains("s") && token.is_cancelled());
        assert_eq!(r.check("s").unwrap().code(), "cancelled");
        assert!(!r.contains("other"));
        assert!(r.remove("s"));
        assert!(!r.contains("s"));
        assert!(
            !r.token("s").is_cancelled(),
            "a removed session starts afresh"
        );
    }

    #[test]
    fn child_follows_parent_not_the_other_way() {
        let r = CancellationRegistry::new();
        let child = r.child_token("s");
        child.cancel();
        assert!(!r.contains("s"));
        let child = r.child_token("s");
        r.insert("s");
        assert!(child.is_cancelled());
    }
}
