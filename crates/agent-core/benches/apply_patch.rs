//! Parsing a Codex `apply_patch` text, which the Codex hook does on every file edit.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::fmt::Write as _;

use agent_core::apply_patch::parse;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// A patch of `files` sections (add, update with a move, delete, update in turn), each
/// with `lines` changed lines.
fn patch(files: usize, lines: usize) -> String {
    let mut out = String::from("*** Begin Patch\n");
    for f in 0..files {
        match f % 4 {
            0 => {
                let _ = writeln!(out, "*** Add File: src/new_{f}.rs");
                for l in 0..lines {
                    let _ = writeln!(out, "+pub fn f{l}() -> u32 {{ {l} }}");
                }
            }
            1 => {
                let _ = writeln!(
                    out,
                    "*** Update File: src/mod_{f}.rs\n*** Move to: src/moved_{f}.rs"
                );
                let _ = writeln!(out, "@@ impl Thing");
                for l in 0..lines {
                    let _ = writeln!(out, "-    old_{l}();\n+    new_{l}();");
                }
                let _ = writeln!(out, "     keep();");
            }
            2 => {
                let _ = writeln!(out, "*** Delete File: src/gone_{f}.rs");
            }
            _ => {
                let _ = writeln!(out, "*** Update File: src/lib_{f}.rs");
                for l in 0..lines {
                    let _ = writeln!(out, "@@ fn f{l}()\n-    a\n+    b");
                }
                let _ = writeln!(out, "*** End of File");
            }
        }
    }
    out.push_str("*** End Patch\n");
    out
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("apply_patch_parse");
    for (files, lines) in [(1, 5), (4, 10), (20, 50)] {
        let text = patch(files, lines);
        assert_eq!(parse(&text).unwrap().ops.len(), files);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{files}files_{}B", text.len())),
            &text,
            |b, text| b.iter(|| parse(std::hint::black_box(text)).unwrap()),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
