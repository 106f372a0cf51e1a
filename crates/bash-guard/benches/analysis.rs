#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Classification time: short, typical (~200 chars) and 10,000-character commands, the seed's
//! naive first-word whitelist as a baseline, and a verdict-cache hit.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bash_guard::{Analyzer, BashConfig, CachedAnalyzer, PathAccess, PathJudge, PathVerdict};
use criterion::{Criterion, criterion_group, criterion_main};

struct Judge;
impl PathJudge for Judge {
    fn judge(&self, path: &str, _: PathAccess, _: &Path) -> PathVerdict {
        if path.starts_with('/') {
            PathVerdict::OutsideRoots
        } else {
            PathVerdict::Inside
        }
    }
}

const SHORT: &str = "git status";
const TYPICAL: &str = "cd crates/bash-guard && grep -rn \"fn analyze\" src/*.rs | sort -u | head -n 20 && git diff --stat HEAD~1 -- src && find . -name '*.rs' -newer Cargo.toml | wc -l; echo \"done: $(date +%s)\" >/dev/null";

/// The seed's design: the first word against a whitelist, then a blacklist.
fn naive(command: &str) -> bool {
    const SAFE: &[&str] = &[
        "ls", "cat", "head", "tail", "find", "grep", "wc", "echo", "pwd", "sort", "uniq", "cut",
        "tr", "awk", "sed", "jq", "diff", "file", "stat", "du", "df", "env", "printenv", "which",
        "basename", "dirname", "realpath", "readlink", "xargs", "tee", "date", "sleep", "true",
        "false",
    ];
    const DANGEROUS: &[&str] = &[
        "rm", "sudo", "su", "dd", "mkfs", "shutdown", "reboot", "vim", "curl", "wget",
    ];
    let first = command.split_whitespace().next().unwrap_or("");
    if first.starts_with("$(") || first.starts_with('`') {
        return false;
    }
    SAFE.contains(&first) || !DANGEROUS.contains(&first)
}

fn bench(c: &mut Criterion) {
    let long = "grep -n foo src/lib.rs | wc -l && ".repeat(300) + "true";
    assert!(long.len() >= 10_000, "{}", long.len());
    assert!((180..=260).contains(&TYPICAL.len()), "{}", TYPICAL.len());
    let analyzer = Analyzer::with_home(BashConfig::default(), Some("/home/bench".into()));
    let cwd = Path::new("/proj");
    let mut g = c.benchmark_group("analyze");
    g.measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(30);
    g.bench_function("short", |b| {
        b.iter(|| analyzer.analyze(black_box(SHORT), cwd, &Judge))
    });
    g.bench_function("typical_200", |b| {
        b.iter(|| analyzer.analyze(black_box(TYPICAL), cwd, &Judge))
    });
    g.bench_function("long_10k", |b| {
        b.iter(|| analyzer.analyze(black_box(&long), cwd, &Judge))
    });
    // The same command each iteration meets brush-parser's own 64-entry caches of token
    // lists and parsed words; a different `head -n` count each time misses them, as a
    // command the agent has not run before does.
    g.bench_function("typical_200_distinct", |b| {
        let mut n = 0u32;
        b.iter_batched(
            || {
                n = n.wrapping_add(1);
                TYPICAL.replace("head -n 20", &format!("head -n {}", 1000 + n % 9000))
            },
            |command| analyzer.analyze(black_box(&command), cwd, &Judge),
            criterion::BatchSize::SmallInput,
        )
    });
    // `git status` with 1..=100 trailing blanks: the same command, a new text for brush's
    // token cache each time.
    g.bench_function("short_distinct", |b| {
        let mut n = 0usize;
        b.iter_batched(
            || {
                n = n.wrapping_add(1);
                format!("{SHORT}{}", " ".repeat(1 + n % 100))
            },
            |command| analyzer.analyze(black_box(&command), cwd, &Judge),
            criterion::BatchSize::SmallInput,
        )
    });
    g.bench_function("naive_first_word_typical", |b| {
        b.iter(|| naive(black_box(TYPICAL)))
    });
    let cached = CachedAnalyzer::new(analyzer.clone(), Arc::new(Judge), 1024);
    cached.analyze(TYPICAL, cwd);
    g.bench_function("cache_hit_typical", |b| {
        b.iter(|| cached.analyze(black_box(TYPICAL), cwd))
    });
    g.bench_function("long_2k", |b| {
        let two_k = "grep -n foo src/lib.rs | wc -l && ".repeat(60) + "true";
        b.iter(|| analyzer.analyze(black_box(&two_k), cwd, &Judge))
    });
    g.finish();

    // Hostile shapes: each must be refused quickly (the hook answers within 100 ms).
    let mut h = c.benchmark_group("hostile");
    h.measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300))
        .sample_size(10);
    let n = 4800; // 100x the nesting cap
    let shapes: Vec<(&str, String)> = vec![
        ("subshells_4800", "( ".repeat(n) + "ls" + &" )".repeat(n)),
        (
            "ifs_4800",
            "if true; then ".repeat(n) + "ls;" + &" fi;".repeat(n),
        ),
        (
            "substitutions_4800",
            "echo ".to_owned() + &"\"$(".repeat(n) + "ls" + &")\"".repeat(n),
        ),
        (
            "nesting_40_big_stack",
            "( ".repeat(40) + "ls" + &" )".repeat(40),
        ),
        ("one_mebibyte", "echo ".to_owned() + &"a".repeat(1 << 20)),
        (
            "nested_braces_40",
            "echo ".to_owned() + &"{".repeat(40) + "a,b" + &"}".repeat(40),
        ),
        (
            "brace_product",
            "echo ".to_owned() + &"{a,b,c,d}".repeat(40),
        ),
        ("fd_number", "echo 99999999999>x".to_owned()),
        ("commands_5000", "ls; ".repeat(5000)),
        (
            "quoted_parens_3000",
            "echo '".to_owned() + &"(".repeat(3000) + "'",
        ),
    ];
    for (name, command) in &shapes {
        h.bench_function(*name, |b| {
            b.iter(|| analyzer.analyze(black_box(command), cwd, &Judge))
        });
    }
    h.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
