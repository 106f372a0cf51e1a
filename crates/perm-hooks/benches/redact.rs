#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Secret scanner throughput over about 1 MiB each of:
//! - `project`: this workspace's own sources, docs and Cargo.lock (ordinary text);
//! - `prose`: English with a few secret-ish words (almost no anchor hits);
//! - `lookalikes`: the corpus' ordinary files, written to be dense in `token`, `secret`,
//!   `password`, `auth`, URLs and lockfile hashes (candidate-dense, nothing to find);
//! - `secrets`: the corpus' secret files (every few lines a secret: the worst case).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perm_hooks::SecretScanner;

const TARGET: usize = 1 << 20;

/// Files with one of `exts` below `dir`, recursively, sorted.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if !p.ends_with("target") && !p.ends_with("data") {
                files(&p, exts, out);
            }
        } else if p.extension().is_some_and(|e| exts.iter().any(|x| e == *x)) {
            out.push(p);
        }
    }
}

/// The files, concatenated and repeated to about 1 MiB.
fn text(paths: &[PathBuf]) -> String {
    let one: String = paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::with_capacity(TARGET + one.len());
    while out.len() < TARGET {
        out.push_str(&one);
    }
    out
}

fn scan(c: &mut Criterion) {
    let scanner = SecretScanner::default_set();
    let mut g = c.benchmark_group("redact");
    g.measurement_time(Duration::from_secs(3)).sample_size(20);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut project = vec![root.join("Cargo.lock")];
    files(&root.join("crates"), &["rs", "md"], &mut project);
    files(&root.join("docs"), &["md"], &mut project);
    let corpus = |kind: &str| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/redact")
            .join(kind);
        let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        all.sort();
        all
    };
    for (name, paths) in [
        ("project", project),
        ("lookalikes", corpus("ordinary")),
        ("secrets", corpus("secrets")),
    ] {
        let input = text(&paths);
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| scanner.redact(black_box(&input)).findings.len());
        });
    }
    // English prose: almost no anchor hits at all.
    let prose = "The quick brown fox jumps over the lazy dog while the tokenizer splits \
                 words; authors and maintainers review every change before release.\n"
        .repeat(TARGET / 150);
    g.throughput(Throughput::Bytes(prose.len() as u64));
    g.bench_function("prose", |b| {
        b.iter(|| scanner.redact(black_box(&prose)).findings.len());
    });
    g.finish();

    // A read check's question over a 16 KiB config without secrets: `find` then the first
    // refused, against `sniff` (inside the project `NAME=value` findings do not refuse).
    let mut yaml = String::from("apiVersion: apps/v1\nkind: Deployment\n");
    let mut i = 0;
    while yaml.len() < 16 * 1024 {
        yaml.push_str(&format!(
            "- name: service-{i}\n  image: registry.example.com/team/service-{i}:1.{i}.0\n  env:\n    - name: API_TOKEN_FILE\n      value: /run/secrets/token\n"
        ));
        i += 1;
    }
    yaml.truncate(16 * 1024);
    let mut g = c.benchmark_group("sniff_16k");
    g.measurement_time(Duration::from_secs(3)).sample_size(30);
    for (name, refuses) in [
        (
            "project",
            (|id: &str| id != "secret-assignment") as fn(&str) -> bool,
        ),
        ("outside", |_: &str| true),
    ] {
        g.bench_function(format!("find_first_{name}"), |b| {
            b.iter(|| {
                scanner
                    .find(black_box(&yaml))
                    .into_iter()
                    .find(|f| refuses(&f.detector))
                    .map(|f| f.detector)
            });
        });
        g.bench_function(format!("sniff_{name}"), |b| {
            b.iter(|| scanner.sniff(black_box(&yaml), refuses));
        });
    }
    g.finish();

    let mut g = c.benchmark_group("redact_setup");
    g.measurement_time(Duration::from_secs(2)).sample_size(20);
    g.bench_function("from_config_default", |b| {
        b.iter(|| SecretScanner::from_config(&Default::default()).unwrap());
    });
    g.finish();
}

criterion_group!(benches, scan);
criterion_main!(benches);
