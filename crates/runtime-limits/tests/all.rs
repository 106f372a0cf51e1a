#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Behaviour tests: properties of the detector and the budget, configuration, cancellation.

use proptest::prelude::*;
use runtime_limits::{
    Action, BudgetLevel, CancellationRegistry, DuplicateDetector, Error, Intervention, Limits,
    LimitsConfig, TokenBudget, canonical_hash,
};
use serde_json::{Value, json};

fn small_args() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        Just(json!({"path": "a"})),
        Just(json!({"path": "b"})),
        Just(json!({"path": "a", "n": 1})),
    ]
}

fn calls() -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec(
        (
            prop_oneof![Just("t".to_owned()), Just("u".to_owned())],
            small_args(),
        ),
        0..40,
    )
}

/// Naive reference: the call at `i` is refused iff it ends a run of >= 3 equal calls.
fn reference(seq: &[(String, Value)]) -> Vec<bool> {
    let mut out = Vec::new();
    let mut run = 0;
    for i in 0..seq.len() {
        run = if i > 0 && seq[i] == seq[i - 1] {
            run + 1
        } else {
            1
        };
        out.push(run >= 3);
    }
    out
}

/// JSON text for `entries` in the given key order, with varying whitespace.
fn object_text(entries: &[(String, i64)], order: &[usize], spaced: bool) -> String {
    let sep = if spaced { " ,\n  " } else { "," };
    let body: Vec<String> = order
        .iter()
        .map(|&i| {
            let (k, v) = &entries[i];
            if spaced {
                format!("\"{k}\" :  {v}")
            } else {
                format!("\"{k}\":{v}")
            }
        })
        .collect();
    format!("{{{}}}", body.join(sep))
}

fn severity(i: Option<Intervention>) -> u16 {
    match i {
        None => 0,
        Some(Intervention::TokenSoftLimit { level, .. }) => u16::from(level),
        Some(Intervention::TokenHardLimit { .. }) => 1000,
        Some(other) => panic!("unexpected {other:?}"),
    }
}

proptest! {
    #[test]
    fn detector_matches_the_reference(seq in calls()) {
        let mut d = DuplicateDetector::default();
        let got: Vec<bool> = seq.iter().map(|(t, a)| d.on_call(t, a).is_some()).collect();
        prop_assert_eq!(got, reference(&seq));
    }

    #[test]
    fn a_triple_always_fires(prefix in calls(), call in ("[a-z]{1,4}", small_args())) {
        let mut d = DuplicateDetector::default();
        for (t, a) in &prefix {
            d.on_call(t, a);
        }
        let (tool, args) = call;
        d.on_call(&tool, &args);
        d.on_call(&tool, &args);
        let hit = d.on_call(&tool, &args);
        prop_assert_eq!(hit.map(|i| i.code()), Some("duplicate_call"));
    }

    #[test]
    fn key_order_and_whitespace_never_change_the_verdict(
        entries in prop::collection::btree_map("[a-z]{1,3}", any::<i64>(), 1..6),
        perm in Just(()).prop_perturb(|_, mut rng| rng.random::<u64>()),
        spaced in any::<bool>(),
    ) {
        let entries: Vec<(String, i64)> = entries.into_iter().collect();
        let mut order: Vec<usize> = (0..entries.len()).collect();
        // A deterministic shuffle from the generated seed.
        let mut seed = perm;
        for i in (1..order.len()).rev() {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (seed >> 33) as usize % (i + 1));
        }
        let sorted: Vec<usize> = (0..entries.len()).collect();
        let a: Value = serde_json::from_str(&object_text(&entries, &sorted, false)).unwrap();
        let b: Value = serde_json::from_str(&object_text(&entries, &order, spaced)).unwrap();
        prop_assert_eq!(canonical_hash(&a), canonical_hash(&b));
        let mut d = DuplicateDetector::default();
        prop_assert!(d.on_call("t", &a).is_none());
        prop_assert!(d.on_call("t", &b).is_none());
        prop_assert!(d.on_call("t", &a).is_some());
    }

    #[test]
    fn the_budget_is_monotone(
        soft in 1usize..100_000,
        span in 1usize..100_000,
        levels in 1u8..8,
        a in 0usize..250_000,
        b in 0usize..250_000,
    ) {
        let (lo, hi) = (a.min(b), a.max(b));
        let budget = TokenBudget::new(soft, soft + span, levels, 3, 20);
        prop_assert!(budget.level_for(lo) <= budget.level_for(hi));
        let mut x = TokenBudget::new(soft, soft + span, levels, 3, 20);
        let mut y = x.clone();
        prop_assert!(severity(x.set_used(lo, true)) <= severity(y.set_used(hi, true)));
    }
}

#[test]
fn budget_levels_are_ordered() {
    assert!(BudgetLevel::Ok < BudgetLevel::Nudge(1));
    assert!(BudgetLevel::Nudge(1) < BudgetLevel::Nudge(2));
    assert!(BudgetLevel::Nudge(u8::MAX) < BudgetLevel::Hard);
}

#[test]
fn example_policy_limits_parse_and_validate() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/policy.toml"
    ))
    .unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let limits: LimitsConfig = doc["limits"].clone().try_into().unwrap();
    limits.validate().unwrap();
    assert_eq!(limits.max_steps, 8);
}

#[test]
fn config_rejects_unknown_keys_and_bad_values() {
    assert!(toml::from_str::<LimitsConfig>("max_stepz = 3").is_err());
    let empty: LimitsConfig = toml::from_str("").unwrap();
    assert_eq!(empty, LimitsConfig::default());
    for (text, field) in [
        ("max_steps = 0", "max_steps"),
        ("duplicate_threshold = 1", "duplicate_threshold"),
        (
            "token_soft_limit = 100\ntoken_hard_limit = 100",
            "token_hard_limit",
        ),
        ("compaction_failures = 0", "compaction_failures"),
        ("diminishing_steps = 0", "diminishing_steps"),
    ] {
        let config: LimitsConfig = toml::from_str(text).unwrap();
        match Limits::new(&config) {
            Err(Error::InvalidConfig { field: f, .. }) => assert_eq!(f, field, "{text}"),
            Ok(_) => panic!("`{text}` accepted"),
        }
    }
}

#[test]
fn every_code_is_distinct_and_stable() {
    let all = [
        Intervention::MaxSteps { step: 9, max: 8 },
        Intervention::DuplicateCall {
            tool: "t".into(),
            count: 3,
        },
        Intervention::RepeatedError {
            tool: "t".into(),
            count: 3,
        },
        Intervention::TokenSoftLimit {
            level: 1,
            used: 1,
            limit: 1,
        },
        Intervention::TokenHardLimit {
            used: 1,
            limit: 1,
            compact: true,
        },
        Intervention::DiminishingReturns { steps: 3 },
        Intervention::Cancelled {
            session: "s".into(),
        },
        Intervention::CompactionBreakerOpen { failures: 3 },
    ];
    let codes: Vec<&str> = all.iter().map(Intervention::code).collect();
    assert_eq!(
        codes,
        [
            "max_steps",
            "duplicate_call",
            "repeated_error",
            "token_soft_limit",
            "token_hard_limit",
            "diminishing_returns",
            "cancelled",
            "compaction_breaker_open"
        ]
    );
    for i in &all {
        let m = i.message();
        assert_eq!(m, m.to_lowercase(), "{m}");
    }
}

#[test]
fn bundle_step_limit_and_cancellation() {
    let mut limits = Limits::default();
    for step in 1..=8 {
        assert_eq!(limits.on_step_start(false, "s"), None, "step {step}");
    }
    assert_eq!(
        limits.on_step_start(false, "s").unwrap().code(),
        "max_steps"
    );
    let mut limits = Limits::default();
    let stop = limits.on_step_start(true, "s").unwrap();
    assert_eq!(stop.action(), Action::Abort);
}

#[test]
fn bundle_hard_limit_compacts_until_the_breaker_opens() {
    let mut limits = Limits::default();
    limits.on_step_start(false, "s");
    for _ in 0..3 {
        let hard = limits.on_tokens(40_000).unwrap();
        assert_eq!(hard.action(), Action::Compact);
        assert_eq!(limits.check_compaction(), None);
        limits.on_compaction(false, None);
    }
    assert_eq!(
        limits.check_compaction().unwrap().code(),
        "compaction_breaker_open"
    );
    assert_eq!(
        limits.on_tokens(40_000).unwrap().action(),
        Action::ForceFinalAnswer
    );
    // Five steps later the breaker lets one attempt through.
    for _ in 0..5 {
        limits.on_step_start(false, "s");
    }
    assert_eq!(limits.check_compaction(), None);
    limits.on_compaction(true, Some(10_000));
    assert_eq!(limits.budget().used(), 10_000);
    assert_eq!(limits.on_tokens(10_000), None);
}

#[tokio::test]
async fn cancelling_wakes_waiters_and_children_at_once() {
    let registry = std::sync::Arc::new(CancellationRegistry::new());
    let token = registry.token("s");
    let child = registry.child_token("s");
    let waiter = tokio::spawn(async move {
        token.cancelled().await;
        child.cancelled().await;
    });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    registry.insert("s");
    tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(registry.contains("s"));
    assert!(registry.remove("s"));
}
