//! Hook mode's session ledger inside `Guard::evaluate`: the limits step, fail-closed on a
//! broken ledger, and the invariant that no grant lifts a configured deny or the catastrophic
//! class (with a ledger that grants everything).

use std::sync::{Arc, Mutex};

use agent_core::{Call, Guard, LedgerUse, SessionLedger};
use async_trait::async_trait;
use perm_hooks::{CallKey, Refusal, Tally};
use perm_rules::{Decision, PermissionChecker, PermissionRule, RuleKind, RuleSource};
use proptest::prelude::*;
use runtime_limits::LimitsConfig;
use serde_json::json;

/// Counts in memory and grants every call: the most permissive ledger there can be.
#[derive(Default)]
struct GrantsEverything {
    calls: Mutex<u64>,
    fail: bool,
}

#[async_trait]
impl SessionLedger for GrantsEverything {
    async fn count_call(&self, _: &str, _: &str, _: &str) -> Result<Tally, perm_hooks::Error> {
        if self.fail {
            return Err(perm_hooks::Error::Closed);
        }
        let mut calls = self.calls.lock().unwrap();
        *calls += 1;
        Ok(Tally {
            calls: *calls,
            run: 1,
        })
    }
    async fn take_grant(&self, _: &CallKey<'_>) -> Result<Option<String>, perm_hooks::Error> {
        Ok(Some("TEST-CODE".to_owned()))
    }
    async fn offer(&self, _: &Refusal<'_>) -> Result<String, perm_hooks::Error> {
        Ok("TEST-CODE".to_owned())
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn guard(dir: &std::path::Path, ledger: Option<Arc<dyn SessionLedger>>, max: u32) -> Guard {
    let mut checker = PermissionChecker::new();
    for rule in ["run_bash(make deploy:*)", "file_write(**/secrets.txt)"] {
        checker.add_rule(
            PermissionRule::parse(
                RuleKind::Deny,
                rule,
                RuleSource::File {
                    path: "policy.toml".into(),
                    line: 1,
                },
            )
            .unwrap(),
        );
    }
    let mut builder = Guard::builder(dir)
        .permissions(checker)
        .limits(LimitsConfig {
            max_session_calls: max,
            ..LimitsConfig::default()
        });
    if let Some(l) = ledger {
        builder = builder.session_ledger(l);
    }
    rt().block_on(builder.build()).unwrap()
}

fn hook_call(dir: &std::path::Path, tool: &str, args: serde_json::Value) -> Call {
    let mut call = Call::new(tool, args.clone())
        .with_cwd(dir)
        .with_session("s");
    call.ledger = Some(LedgerUse {
        tool: tool.to_owned(),
        input: args,
        count: true,
        grantable: true,
    });
    call
}

#[test]
fn past_the_cap_the_call_is_denied_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let g = guard(dir.path(), Some(Arc::new(GrantsEverything::default())), 2);
    let rt = rt();
    let call = hook_call(dir.path(), "mcp__x__y", json!({"n": 1}));
    for _ in 0..2 {
        let v = rt.block_on(g.evaluate(&call));
        assert!(v.steps.iter().all(|s| s.layer != "runtime-limits"), "{v:?}");
    }
    let v = rt.block_on(g.evaluate(&call));
    let step = v
        .steps
        .iter()
        .find(|s| s.layer == "runtime-limits")
        .unwrap();
    assert_eq!(step.code, "max_session_calls");
    assert_eq!(step.decision, Decision::Deny);
    assert!(step.message.contains("[limits] max_session_calls"));
    // This ledger grants everything, and a cap refusal is liftable: the grant shows.
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(v.code(), "allow-once");
}

#[test]
fn a_ledger_that_fails_denies() {
    let dir = tempfile::tempdir().unwrap();
    let failing = GrantsEverything {
        fail: true,
        ..GrantsEverything::default()
    };
    let g = guard(dir.path(), Some(Arc::new(failing)), 10);
    let call = hook_call(dir.path(), "read_file", json!({"file_path": "a.txt"}));
    let v = rt().block_on(g.evaluate(&call));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.code(), "ledger_unavailable");
    assert!(
        v.summary().contains("audit database failed"),
        "{}",
        v.summary()
    );
}

#[test]
fn calls_without_a_ledger_use_are_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let g = guard(dir.path(), Some(Arc::new(GrantsEverything::default())), 1);
    let rt = rt();
    let call = Call::new("mcp__x__y", json!({})).with_cwd(dir.path());
    for _ in 0..3 {
        assert_eq!(rt.block_on(g.evaluate(&call)).decision, Decision::Allow);
    }
}

const COMMANDS: &[&str] = &[
    "rm -rf /",
    "rm -rf ~",
    "rm -rf --no-preserve-root /",
    ":(){ :|:& };:",
    "dd if=/dev/zero of=/dev/sda",
    "sudo make install",
    "make deploy",
    "make deploy --prod",
    "cat ~/.ssh/id_rsa",
    "curl https://example.com",
    "npm install",
    "cargo build",
    "ls",
    "python3 -c 'import os; os.system(\"rm -rf /\")'",
    "bash -c 'rm -rf /*'",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    // The design's invariant: a Deny from a configured rule or the catastrophic class can
    // never be overridden, not even by a grant from the most permissive ledger.
    #[test]
    fn no_grant_lifts_a_configured_deny_or_a_catastrophe(
        which in 0..COMMANDS.len() + 3,
        suffix in prop::sample::select(vec!["", " && ls", "; echo done", " | cat"]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (tool, args) = match which.checked_sub(COMMANDS.len()) {
            None => ("run_bash", json!({"command": format!("{}{suffix}", COMMANDS[which])})),
            Some(0) => ("file_write", json!({"file_path": "conf/secrets.txt", "content": "x"})),
            Some(1) => ("read_file", json!({"file_path": "/etc/shadow"})),
            Some(_) => ("file_write", json!({"file_path": "/etc/passwd", "content": suffix})),
        };
        let rt = rt();
        let plain = guard(dir.path(), None, 1000);
        let baseline = rt.block_on(plain.evaluate(&Call::new(tool, args.clone()).with_cwd(dir.path())));
        let granting = guard(dir.path(), Some(Arc::new(GrantsEverything::default())), 1000);
        let lifted = rt.block_on(granting.evaluate(&hook_call(dir.path(), tool, args)));
        let final_deny = baseline.steps.iter().any(|s| {
            s.decision == Decision::Deny
                && (s.code == "p0-config-deny" || agent_core::CATASTROPHIC.contains(&s.code.as_str()))
        });
        // Each kind of case is seen (the strategy covers both sides of the invariant).
        if which == COMMANDS.len() || COMMANDS.get(which) == Some(&"make deploy") {
            prop_assert!(final_deny, "a configured deny: {:?}", baseline.steps);
        }
        if COMMANDS.get(which) == Some(&"rm -rf /") {
            prop_assert!(final_deny, "catastrophic: {:?}", baseline.steps);
        }
        if COMMANDS.get(which) == Some(&"npm install") && suffix.is_empty() {
            prop_assert_eq!(lifted.decision, Decision::Allow, "an ask is lifted: {:?}", lifted.steps);
        }
        if final_deny {
            prop_assert_eq!(lifted.decision, Decision::Deny, "{:?}", lifted.steps);
            prop_assert!(lifted.steps.iter().all(|s| s.layer != "allow-once"));
        }
        if baseline.decision != Decision::Allow && agent_core::not_liftable_because(&baseline).is_none() {
            prop_assert_eq!(lifted.decision, Decision::Allow, "a liftable refusal is lifted");
        }
    }
}
