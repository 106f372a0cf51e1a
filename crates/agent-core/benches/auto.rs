//! What auto mode adds to a call that never reaches its model: the same calls through a guard
//! without `[auto]` and one with it (its endpoint is never contacted: these calls are decided
//! by the layers, an allow, a deny, and an ask that cannot be reviewed).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::collections::HashMap;

use agent_core::auto::AutoTransport;
use agent_core::{Call, Policy};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const POLICY: &str = r#"
[permissions]
deny = ["run_bash(rm:*)"]
allow = ["run_bash(ls:*)", "run_bash(cargo test:*)"]
[hooks]
audit = false
"#;

const AUTO: &str = r#"
[auto]
endpoint = "http://127.0.0.1:9/v1"
model = "never-called"
"#;

/// A transport that must never be reached on this path.
struct NeverCalled;

#[async_trait::async_trait]
impl AutoTransport for NeverCalled {
    async fn post(&self, _: &str, _: &serde_json::Value) -> Result<serde_json::Value, String> {
        panic!("the fast path reached the model")
    }
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let env = HashMap::new();
    let build = |text: &str| {
        let policy = Policy::from_text("bench.toml", text).unwrap();
        rt.block_on(
            policy
                .guard_builder(&root, &env)
                .unwrap()
                .auto_state_dir(root.join("state"))
                .auto_transport(std::sync::Arc::new(NeverCalled))
                .build(),
        )
        .unwrap()
    };
    let plain = build(POLICY);
    let auto = build(&format!("{POLICY}{AUTO}"));
    let mut g = c.benchmark_group("auto_fast_path");
    for (name, command) in [
        ("allow", "ls -la"),
        ("deny", "rm -rf /"),
        ("unreviewable_ask", "./evil.sh"),
        ("lifted_by_rule", "cargo test"),
    ] {
        let call = Call::new("run_bash", json!({ "command": command })).with_session("s");
        for (which, guard) in [("without", &plain), ("with", &auto)] {
            let v = rt.block_on(guard.evaluate(&call));
            assert!(!v.steps.iter().any(|s| s.layer == "auto-mode"), "{name}");
            g.bench_function(format!("{name}_{which}_auto"), |b| {
                b.iter(|| rt.block_on(guard.evaluate(&call)))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
