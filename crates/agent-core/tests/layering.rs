//! The composition's modules import one way (docs/architecture.md): `compose` (the layers'
//! one composition) above `executor`, above `ledger`, above `verdict` (the call and verdict
//! types and the tables the layers read). A module names no module of its own or a higher
//! layer, neither by its path nor by an item the crate root re-exports from it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;

const LAYERS: &[(&str, usize)] = &[
    ("verdict", 0),
    ("ledger", 1),
    ("executor", 2),
    ("compose", 3),
];

/// The names `lib.rs` re-exports from `module` (`pub use module::{A, B}` or `pub use module::A`).
fn reexports(lib: &str, module: &str) -> Vec<String> {
    let mut names = Vec::new();
    let head = format!("pub use {module}::");
    let mut rest = lib;
    while let Some(at) = rest.find(&head) {
        rest = &rest[at + head.len()..];
        let end = rest.find(';').unwrap();
        let list = rest[..end]
            .trim()
            .trim_start_matches('{')
            .trim_end_matches('}');
        for item in list.split(',') {
            let name = item
                .rsplit(" as ")
                .next()
                .unwrap()
                .rsplit("::")
                .next()
                .unwrap();
            let name = name.trim();
            if !name.is_empty() && name != "self" && name != "*" {
                names.push(name.to_owned());
            }
        }
        rest = &rest[end..];
    }
    names
}

/// Whether `text` contains `needle` not followed by an identifier character.
fn names(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(at, _)| {
        text[at + needle.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// Every way `importer` names `module`.
fn imports(importer: &str, module: &str, lib: &str) -> bool {
    names(importer, &format!("crate::{module}"))
        || reexports(lib, module)
            .iter()
            .any(|item| names(importer, &format!("crate::{item}")))
}

#[test]
fn composition_modules_import_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let mut wrong = Vec::new();
    let mut down = Vec::new();
    for (module, rank) in LAYERS {
        let text = std::fs::read_to_string(src.join(format!("{module}.rs"))).unwrap();
        for (other, other_rank) in LAYERS {
            if other == module || !imports(&text, other, &lib) {
                continue;
            }
            if other_rank >= rank {
                wrong.push(format!("{module} -> {other}"));
            } else {
                down.push(format!("{module} -> {other}"));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layering: {wrong:?}");
    // The check sees real imports (were the patterns wrong it would pass on anything).
    for edge in [
        "compose -> executor",
        "compose -> verdict",
        "executor -> ledger",
        "ledger -> verdict",
    ] {
        assert!(
            down.contains(&edge.to_owned()),
            "{edge} not seen in {down:?}"
        );
    }
}

#[test]
fn a_reexported_name_counts_as_an_import() {
    let lib = "pub use ledger::{CATASTROPHIC, SessionLedger};\npub use executor::Executor;\n";
    assert!(imports("use crate::SessionLedger;", "ledger", lib));
    assert!(imports("x: crate::Executor,", "executor", lib));
    assert!(!imports("x: crate::ExecutorBuilder,", "executor", lib));
    assert!(imports("use crate::ledger::Wired;", "ledger", lib));
    assert!(!imports("use crate::ledgers::Wired;", "ledger", lib));
}
