//! The hook front ends import one way (docs/architecture.md): the per-client hooks
//! (`claude_hook`, `codex_hook`, `gemini_hook`) above `hook` (the one path to
//! `Guard::evaluate`), above the pieces it and they call (`claude_post`'s redaction and
//! `serve/client`'s approval requests). A module names no module of its own or a higher layer.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;

/// `(file under src/cmd, its module path under cmd, layer)`.
const LAYERS: &[(&str, &str, usize)] = &[
    ("claude_post.rs", "claude_post", 0),
    ("serve/client.rs", "serve::client", 0),
    ("hook.rs", "hook", 1),
    ("claude_hook.rs", "claude_hook", 2),
    ("codex_hook.rs", "codex_hook", 2),
    ("gemini_hook.rs", "gemini_hook", 2),
];

/// Whether `text` contains `needle` not followed by an identifier character.
fn names(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(at, _)| {
        text[at + needle.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// Every way the file at `file` (under cmd) names the module at `path` (under cmd): from the
/// crate root, from its parent, or, for a file one level down (`serve/client.rs`), from its
/// grandparent.
fn imports(file: &str, text: &str, path: &str) -> bool {
    let nested = file.contains('/');
    let mut spellings = vec![format!("crate::cmd::{path}")];
    if nested {
        spellings.push(format!("super::super::{path}"));
        // A sibling in the same folder (`super::client` from `serve/wire.rs`).
        if let Some((parent, leaf)) = path.split_once("::")
            && file.starts_with(&format!("{parent}/"))
        {
            spellings.push(format!("super::{leaf}"));
        }
    } else {
        spellings.push(format!("super::{path}"));
        // `use super::{hook, ...}` names it too.
        if text.contains("super::{") {
            let group = text
                .split("super::{")
                .skip(1)
                .map(|g| g.split('}').next().unwrap());
            for g in group {
                if g.split(',')
                    .any(|n| n.trim() == path || n.trim().starts_with(&format!("{path}::")))
                {
                    return true;
                }
            }
        }
    }
    spellings.iter().any(|s| names(text, s))
}

#[test]
fn hook_front_ends_import_one_way() {
    let cmd = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    let mut wrong = Vec::new();
    let mut down = Vec::new();
    for (file, module, rank) in LAYERS {
        let text = std::fs::read_to_string(cmd.join(file)).unwrap();
        for (_, other, other_rank) in LAYERS {
            if other == module || !imports(file, &text, other) {
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
        "claude_hook -> hook",
        "claude_hook -> claude_post",
        "codex_hook -> hook",
        "gemini_hook -> hook",
        "hook -> serve::client",
    ] {
        assert!(
            down.contains(&edge.to_owned()),
            "{edge} not seen in {down:?}"
        );
    }
}

#[test]
fn every_spelling_of_a_module_counts() {
    assert!(imports(
        "claude_post.rs",
        "use super::claude_hook::HookInput;",
        "claude_hook"
    ));
    assert!(imports(
        "claude_post.rs",
        "use super::{claude_hook, hook};",
        "hook"
    ));
    assert!(!imports(
        "hook.rs",
        "super::hook_deadline::await_answer(",
        "hook"
    ));
    assert!(imports(
        "serve/client.rs",
        "event: &crate::cmd::hook::Event,",
        "hook"
    ));
    assert!(imports(
        "serve/client.rs",
        "use super::super::hook::Event;",
        "hook"
    ));
    assert!(imports(
        "hook.rs",
        "super::serve::client::decide_hook_ask(",
        "serve::client"
    ));
}

/// The resident hook guard sits above the hook code (its server forks judges that run it);
/// the hook code knows only how a judge ends, whose call it judges and where its wait for the
/// deadline runs (`resident::exit`, `resident::hook_process`, `resident::hand_wait`, in the
/// leaf `report.rs`), and that leaf names no command module.
#[test]
fn the_hook_code_knows_only_how_a_resident_judge_ends() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(src.join("cmd"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("resident::") {
            if ![
                "resident::exit(",
                "resident::hook_process(",
                "resident::hand_wait(",
            ]
            .iter()
            .any(|allowed| text[at..].starts_with(allowed))
            {
                wrong.push(format!("{} names {}", file.display(), &text[at..at + 20]));
            }
        }
    }
    let report = std::fs::read_to_string(src.join("resident/report.rs")).unwrap();
    for needle in ["crate::cmd", "super::server", "crate::run_hook"] {
        if report.contains(needle) {
            wrong.push(format!("resident/report.rs names {needle}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
