//! Secret redaction over the corpus in `tests/data/redact` (made by its `generate.py`): every
//! secret is masked by the detector named for it, and no ordinary project file changes.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use perm_hooks::*;
use proptest::prelude::*;
use serde::Deserialize;

fn corpus(kind: &str) -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/redact")
        .join(kind);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// A masked span without the line breaks around it (a key body ends with one, raw or as `\n`
/// inside JSON).
fn core(masked: &str) -> &str {
    masked.trim().trim_end_matches("\\n")
}

#[derive(Deserialize)]
struct Expected {
    detector: String,
    secret: String,
}

#[test]
fn every_secret_in_the_corpus_is_masked_by_its_detector() {
    let manifest: BTreeMap<String, Vec<Expected>> = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/redact/secrets.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let files = corpus("secrets");
    assert_eq!(
        files.len(),
        manifest.len(),
        "secrets.json and secrets/ disagree"
    );
    let scanner = SecretScanner::default_set();
    let mut total = 0;
    for (path, text) in files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let expected = &manifest[name];
        let r = scanner.redact(&text);
        for e in expected {
            assert!(!e.secret.is_empty());
            assert!(
                text.contains(&e.secret),
                "{name}: corpus lists a secret it lacks"
            );
            assert!(
                !r.text.contains(&e.secret),
                "{name}: {} secret leaked:\n{}",
                e.detector,
                r.text
            );
            assert!(
                r.findings
                    .iter()
                    .any(|f| *f.detector == e.detector
                        && e.secret.contains(core(&text[f.span.clone()]))),
                "{name}: {} not reported by `{}`: {:?}",
                e.secret,
                e.detector,
                r.findings
            );
            total += 1;
        }
        // Nothing else in these files is masked: every finding is part of a listed secret.
        for f in &r.findings {
            let masked = &text[f.span.clone()];
            assert!(
                expected.iter().any(|e| e.secret.contains(core(masked))),
                "{name}: `{masked}` masked by {} is not a listed secret",
                f.detector
            );
        }
        assert_eq!(
            r.text.matches('\n').count(),
            text.matches('\n').count(),
            "{name}: newlines"
        );
    }
    assert!(total >= 30, "the corpus shrank: {total} secrets");
}

#[test]
fn ordinary_project_files_pass_untouched() {
    let files = corpus("ordinary");
    assert!(files.len() >= 20);
    let scanner = SecretScanner::default_set();
    for (path, text) in files {
        let r = scanner.redact(&text);
        assert!(
            r.findings.is_empty(),
            "{}: {:?}",
            path.display(),
            r.findings
                .iter()
                .map(|f| (&*f.detector, &text[f.span.clone()]))
                .collect::<Vec<_>>()
        );
        assert!(matches!(r.text, Cow::Borrowed(_)));
    }
}

#[tokio::test]
async fn the_hook_redacts_and_honours_allow_paths() {
    let config: HooksConfig = toml::from_str(
        r#"
        [redaction]
        allow_paths = ["tests/fixtures/**"]
        disable = ["jwt"]
        "#,
    )
    .unwrap();
    let mut hooks = HookRegistry::new();
    config.register(&mut hooks).unwrap();
    let secret = "cat .env\nGITHUB_TOKEN=ghp_R8kT2mWq9ZxLb4NcV7yHd3PfJs6GtE1aUo5i\n";
    let run = |path: &str| PostToolUseContext {
        tool_name: "read_file".into(),
        args: serde_json::json!({ "path": path }),
        output: secret.into(),
        ..Default::default()
    };
    let post = hooks.run_post_tool_use(run("src/.env")).await;
    assert_eq!(
        post.final_output,
        "cat .env\nGITHUB_TOKEN=[REDACTED:github-token]\n"
    );
    let post = hooks.run_post_tool_use(run("/p/tests/fixtures/.env")).await;
    assert_eq!(post.final_output, secret);
}

#[test]
fn policy_errors_name_the_detector() {
    let config: HooksConfig =
        toml::from_str("[redaction]\ndisable = [\"jwt\", \"aws-keys\"]").unwrap();
    let err = config
        .register(&mut HookRegistry::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("`aws-keys`"), "{err}");
    let off: HooksConfig = toml::from_str("redact_secrets = false").unwrap();
    let mut hooks = HookRegistry::new();
    off.register(&mut hooks).unwrap();
    let unknown: Result<HooksConfig, _> = toml::from_str("[redaction]\nallow = []");
    assert!(unknown.is_err(), "unknown keys are rejected");
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("GITHUB_TOKEN=ghp_R8kT2mWq9ZxLb4NcV7yHd3PfJs6GtE1aUo5i".to_owned()),
        Just("postgres://app:Zq8Lm3Tx7Wb2@db/x".to_owned()),
        Just(
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n"
                .to_owned()
        ),
        Just("password: \"s3cr3t!pw\"".to_owned()),
        Just("let token = lexer.next_token();".to_owned()),
        Just(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.Qm3Tz8LkW2xRb7NvYc4Hd9Pf".to_owned()
        ),
        "[ -~\n\u{e9}\u{4e2d}]{0,40}",
        "(token|secret|password|sk-|ghp_|AKIA|://|:|=|\"|@|\\n){1,8}",
    ]
}

proptest! {
    /// Whatever the text: spans are ordered, disjoint and on char boundaries; the line count
    /// is kept; no masked text survives; a second pass finds nothing new.
    #[test]
    fn redaction_invariants(parts in prop::collection::vec(fragment(), 0..12)) {
        let text = parts.join(" ");
        let scanner = SecretScanner::default_set();
        let r = scanner.redact(&text);
        let mut end = 0;
        for f in &r.findings {
            prop_assert!(f.span.start >= end && f.span.start < f.span.end);
            prop_assert!(text.is_char_boundary(f.span.start) && text.is_char_boundary(f.span.end));
            end = f.span.end;
        }
        prop_assert_eq!(r.text.matches('\n').count(), text.matches('\n').count());
        prop_assert_eq!(r.findings.is_empty(), matches!(r.text, Cow::Borrowed(_)));
        let again = scanner.redact(&r.text);
        prop_assert!(again.findings.is_empty(), "{:?} in {}", again.findings, r.text);
    }
}

#[test]
fn a_shared_scanner_serves_many_hooks() {
    let scanner = Arc::new(SecretScanner::from_config(&RedactionConfig::default()).unwrap());
    let a = RedactionHook::new(scanner.clone());
    let b = RedactionHook::new(scanner);
    assert_eq!(a.scanner().detector_ids(), b.scanner().detector_ids());
    assert_eq!(a.name(), "redaction");
}
