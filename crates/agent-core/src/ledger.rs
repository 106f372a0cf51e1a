//! Hook mode's session ledger: what `Executor::evaluate` asks about a call that comes from an
//! agent's hook, where every call is its own process. The runtime's own loop keeps these limits
//! in memory (runtime-limits' `DuplicateDetector` behind the executor's call screen) and has no
//! ledger.
//!
//! Two things live in the ledger: the session's tally (calls and the run of identical calls,
//! judged by runtime-limits' [`SessionLimits`]) and allow-once grants. Which refusals a grant
//! may lift is decided here, by [`not_liftable_because`], from the verdict's steps.

use std::sync::Arc;

use async_trait::async_trait;
use perm_hooks::{CallKey, Ledger, Refusal, Tally};
use perm_rules::{Decision, Priority};
use runtime_limits::SessionLimits;

use crate::verdict::{Step, Verdict};

/// The state hook mode keeps per session, behind a narrow trait so tests (and other stores)
/// can stand in for the audit database. Implemented by perm-hooks' [`Ledger`].
#[async_trait]
pub trait SessionLedger: Send + Sync {
    /// Counts one call atomically and returns the session's tally after it.
    async fn count_call(
        &self,
        session: &str,
        tool: &str,
        args_hash: &str,
    ) -> Result<Tally, perm_hooks::Error>;
    /// Consumes a grant for exactly `key` valid now, returning its code.
    async fn take_grant(&self, key: &CallKey<'_>) -> Result<Option<String>, perm_hooks::Error>;
    /// Records a refusal a hook answered and returns its code.
    async fn offer(&self, refusal: &Refusal<'_>) -> Result<String, perm_hooks::Error>;
}

#[async_trait]
impl SessionLedger for Ledger {
    async fn count_call(
        &self,
        session: &str,
        tool: &str,
        args_hash: &str,
    ) -> Result<Tally, perm_hooks::Error> {
        Ledger::count_call(self, session, tool, args_hash).await
    }

    async fn take_grant(&self, key: &CallKey<'_>) -> Result<Option<String>, perm_hooks::Error> {
        Ledger::take_grant(self, key, now_ms()).await
    }

    async fn offer(&self, refusal: &Refusal<'_>) -> Result<String, perm_hooks::Error> {
        Ledger::offer(self, refusal).await
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A ledger wired into the executor with the limits it judges.
#[derive(Clone)]
pub(crate) struct Wired {
    pub(crate) ledger: Arc<dyn SessionLedger>,
    pub(crate) limits: SessionLimits,
}

/// Deny findings a person may lift once with `agent-guard allow-once`: side effects that are
/// not catastrophic and that the guard refuses for want of someone to ask, by
/// `(layer, code)`. Everything not listed, a configured deny above all, is final. Asks are
/// always liftable (a person would have been asked anyway).
pub const LIFTABLE_DENIES: &[(&str, &str, &str)] = &[
    (
        "runtime-limits",
        "max_session_calls",
        "one call past the session's cap",
    ),
    (
        "runtime-limits",
        "duplicate_call",
        "one more identical call",
    ),
    (
        "mode",
        "mode-dontAsk",
        "dontAsk only turns what would be asked into a refusal",
    ),
    (
        "fs-sandbox",
        "outside_roots",
        "a write outside the project roots",
    ),
    (
        "bash-guard",
        "write_outside_roots",
        "a command writing outside the project roots",
    ),
    (
        "bash-guard",
        "network",
        "a command using the network while it is blocked",
    ),
    (
        "auto-mode",
        "auto-deny",
        "auto mode's model refusing a known side effect",
    ),
];

/// Refusal codes of the catastrophic class: destruction of the system, the home directory or
/// the project, fork bombs, device writes, privilege escalation, credential stores. Never
/// lifted (they are not in [`LIFTABLE_DENIES`] either; this list names them in the refusal).
pub const CATASTROPHIC: &[&str] = &[
    "catastrophic_text",
    "destroys_system",
    "destroys_unknown",
    "fork_bomb",
    "device_access",
    "privilege_escalation",
    "credential_store",
    "sensitive_path",
];

/// `None` when allow-once may lift `verdict` (every refusing step is an Ask or listed in
/// [`LIFTABLE_DENIES`]), else why not, in words for the person who tried.
pub fn not_liftable_because(verdict: &Verdict) -> Option<String> {
    if verdict.decision == Decision::Allow {
        return Some("the call was not refused".to_owned());
    }
    refusal_not_liftable(&verdict.steps)
}

/// [`not_liftable_because`] on the steps of a refusal.
pub(crate) fn refusal_not_liftable(steps: &[Step]) -> Option<String> {
    // The strongest reason is reported: a configured deny, then the catastrophic class.
    steps
        .iter()
        .filter(|s| s.decision == Decision::Deny)
        .filter_map(|s| step_not_liftable(s).map(|why| (rank(s), why)))
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, why)| why)
}

fn rank(step: &Step) -> u8 {
    if step.code == Priority::ConfigDeny.code() {
        0
    } else if CATASTROPHIC.contains(&step.code.as_str()) {
        1
    } else {
        2
    }
}

fn step_not_liftable(step: &Step) -> Option<String> {
    if LIFTABLE_DENIES
        .iter()
        .any(|(layer, code, _)| *layer == step.layer && *code == step.code)
    {
        return None;
    }
    if step.code == Priority::ConfigDeny.code() {
        let rule = step.rule.as_deref().unwrap_or("a deny rule");
        return Some(format!(
            "it is denied by the configured rule `{rule}`, and a configured deny is final; change the policy to allow it"
        ));
    }
    if CATASTROPHIC.contains(&step.code.as_str()) {
        return Some(format!(
            "it is in the catastrophic class (`{}`), which is never let through",
            step.code
        ));
    }
    Some(format!(
        "its refusal `{}` ({}) is not one allow-once lifts: only asks, runtime limits, writes outside the roots and blocked network use are",
        step.code, step.layer
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::LedgerUse;

    #[test]
    fn liftable_entries_are_unique_and_never_catastrophic() {
        for (layer, code, why) in LIFTABLE_DENIES {
            assert!(!why.is_empty());
            assert!(!CATASTROPHIC.contains(code), "{code}");
            assert_ne!(*code, Priority::ConfigDeny.code());
            assert_eq!(
                LIFTABLE_DENIES
                    .iter()
                    .filter(|(l, c, _)| l == layer && c == code)
                    .count(),
                1
            );
        }
    }

    fn deny(layer: &'static str, code: &str) -> Step {
        Step {
            layer,
            saw: String::new(),
            decision: Decision::Deny,
            code: code.to_owned(),
            message: String::new(),
            rule: Some("run_bash(make:*)".to_owned()),
            source: None,
        }
    }

    #[test]
    fn each_liftable_entry_lifts_alone_and_never_beside_a_final_deny() {
        for (layer, code, _) in LIFTABLE_DENIES {
            assert_eq!(refusal_not_liftable(&[deny(layer, code)]), None, "{code}");
            let with_rule = [deny(layer, code), deny("perm-rules", "p0-config-deny")];
            let why = refusal_not_liftable(&with_rule).unwrap();
            assert!(why.contains("configured rule `run_bash(make:*)`"), "{why}");
            let with_bomb = [deny(layer, code), deny("bash-guard", "fork_bomb")];
            assert!(
                refusal_not_liftable(&with_bomb)
                    .unwrap()
                    .contains("catastrophic")
            );
        }
        // The same code from another layer is not the listed refusal.
        assert!(refusal_not_liftable(&[deny("perm-rules", "network")]).is_some());
        for code in CATASTROPHIC {
            let why = refusal_not_liftable(&[deny("bash-guard", code)]).unwrap();
            assert!(why.contains("catastrophic"), "{code}: {why}");
        }
    }

    #[test]
    fn canonical_input_ignores_key_order() {
        let a = LedgerUse {
            tool: "Bash".into(),
            input: serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":1}}"#).unwrap(),
            count: true,
            grantable: true,
        };
        let b = LedgerUse {
            input: serde_json::from_str(r#"{"a":{"x":1,"y":2},"b":1}"#).unwrap(),
            ..a.clone()
        };
        assert_eq!(a.canonical_input(), b.canonical_input());
        assert_eq!(a.input_hash(), b.input_hash());
    }
}
