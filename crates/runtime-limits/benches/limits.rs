#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Per-step cost of every limit together, for typical tool arguments.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use runtime_limits::{Limits, canonical_hash};
use serde_json::json;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("runtime-limits");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(30);
    let args = json!({"path": "src/lib.rs", "offset": 120, "limit": 200, "pattern": "fn main"});
    let output = "fn main() {\n    println!(\"hello\");\n}\n".repeat(4);
    group.bench_function("canonical_hash_typical_args", |b| {
        b.iter(|| canonical_hash(black_box(&args)))
    });
    group.bench_function("one_step_all_limits", |b| {
        let mut limits = Limits::default();
        let mut used = 0usize;
        b.iter(|| {
            // Restart before the step limit so every iteration takes the same path.
            if limits.step() >= 7 {
                limits = Limits::default();
                used = 0;
            }
            used += 300;
            let a = limits.on_step_start(false, "s");
            let b = limits.on_tool_call("read_file", black_box(&args));
            let c = limits.on_tool_result("read_file", black_box(&output), false, Some(40));
            let d = limits.on_tokens(black_box(used));
            black_box((a, b, c, d));
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
