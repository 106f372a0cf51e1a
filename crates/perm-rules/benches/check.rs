#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `PermissionChecker::check` against a naive linear scan, at 10, 1,000 and 10,000 rules.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use perm_rules::{
    ContentSubjects, DefaultSubjects, PermissionChecker, PermissionRule, RuleKind, RuleSource,
    Subjects,
};
use serde_json::{Value, json};

const KINDS: [RuleKind; 3] = [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow];

/// `n` rules of one shape: exact tool names, tool globs, or bash content rules.
fn rules(shape: &str, n: usize) -> Vec<PermissionRule> {
    (0..n)
        .map(|i| {
            let text = match shape {
                "exact" => format!("tool_{i}"),
                "glob" => format!("mcp__srv{i}__*"),
                _ => format!("run_bash(cmd{i}:*)"),
            };
            PermissionRule::parse(KINDS[i % 3], &text, RuleSource::Api).unwrap()
        })
        .collect()
}

/// The reference: every rule, every check, strictest kind first.
fn naive(rules: &[PermissionRule], tool: &str, args: Option<&Value>) -> Option<RuleKind> {
    let subjects = args.map_or(Subjects::Unsplittable, |a| {
        DefaultSubjects.subjects(tool, a)
    });
    let mut best: Option<RuleKind> = None;
    for r in rules {
        if r.matches_tool(tool)
            && r.matches_content(&subjects, None)
            && best.is_none_or(|b| r.kind() > b)
        {
            best = Some(r.kind());
        }
    }
    best
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("perm-rules/check");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(30);
    for shape in ["exact", "glob", "content"] {
        for n in [10usize, 1_000, 10_000] {
            let list = rules(shape, n);
            let mut checker = PermissionChecker::new();
            for r in &list {
                checker.add_rule(r.clone());
            }
            let (tool, args) = match shape {
                "exact" => (format!("tool_{}", n / 2), None),
                "glob" => (format!("mcp__srv{}__call", n / 2), None),
                _ => (
                    "run_bash".to_owned(),
                    Some(json!({"command": format!("cmd{} --flag", n / 2)})),
                ),
            };
            let _ = checker.check(&tool, args.as_ref());
            group.bench_with_input(
                BenchmarkId::new(format!("{shape}/compiled"), n),
                &n,
                |b, _| b.iter(|| checker.check(black_box(&tool), black_box(args.as_ref()))),
            );
            group.bench_with_input(BenchmarkId::new(format!("{shape}/naive"), n), &n, |b, _| {
                b.iter(|| naive(black_box(&list), black_box(&tool), black_box(args.as_ref())))
            });
        }
    }
    group.finish();

    // The floor under every content check: turning the JSON arguments into subjects.
    let mut group = c.benchmark_group("perm-rules/subjects");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(30);
    let args = json!({"command": "cmd5000 --flag"});
    group.bench_function("default/run_bash", |b| {
        b.iter(|| DefaultSubjects.subjects(black_box("run_bash"), black_box(&args)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
