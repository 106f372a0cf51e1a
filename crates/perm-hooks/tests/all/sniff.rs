//! `SecretScanner::sniff` answers what `find` would: the first finding whose detector refuses,
//! over the detectors' own samples and random text around them.

use perm_hooks::SecretScanner;
use proptest::prelude::*;

/// Every `hit` and `miss` sample of the built-in table, and each detector's anchors.
fn samples() -> Vec<String> {
    let table: toml::Value =
        toml::from_str(include_str!("../../src/redact/detectors.toml")).unwrap();
    let mut out = Vec::new();
    let mut take = |entry: &toml::Value| {
        if let Some(ex) = entry.get("example") {
            for key in ["hit", "miss"] {
                out.extend(ex.get(key).and_then(|v| v.as_str()).map(str::to_owned));
            }
        }
        for a in entry
            .get("anchors")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            out.extend(a.as_str().map(str::to_owned));
        }
    };
    for entry in table["detector"].as_array().unwrap() {
        take(entry);
    }
    take(&table["assignment"]);
    assert!(out.len() > 40, "samples not read: {}", out.len());
    out
}

/// What the sniffer answered before `sniff` existed: `find`, then the first refused.
fn by_find(s: &SecretScanner, text: &str, refuses: &dyn Fn(&str) -> bool) -> Option<String> {
    s.find(text)
        .into_iter()
        .map(|f| f.detector.to_string())
        .find(|id| refuses(id))
}

fn check(text: &str, mask: u64) {
    let s = SecretScanner::default_set();
    let ids = s.detector_ids();
    let tolerated = [
        "secret-assignment",
        "bearer-token",
        "basic-auth",
        "url-password",
        "jwt",
    ];
    let project = |id: &str| !tolerated.contains(&id);
    let masked = |id: &str| {
        ids.iter()
            .position(|i| *i == id)
            .is_some_and(|n| mask & (1 << (n % 64)) != 0)
    };
    let everything = |_: &str| true;
    let preds: [&dyn Fn(&str) -> bool; 3] = [&everything, &project, &masked];
    for refuses in preds {
        assert_eq!(
            s.sniff(text, refuses).map(|id| id.to_string()),
            by_find(s, text, refuses),
            "{text:?}"
        );
    }
}

#[test]
fn each_sample_alone_and_in_pairs() {
    let samples = samples();
    for a in &samples {
        check(a, u64::MAX);
        check(a, 0x5555_5555_5555_5555);
        for b in &samples {
            for sep in ["", "\n", " "] {
                check(&format!("{a}{sep}{b}"), 0xAAAA_AAAA_AAAA_AAAA);
            }
        }
    }
}

fn piece() -> impl Strategy<Value = String> {
    let samples = samples();
    prop_oneof![
        3 => proptest::sample::select(samples),
        2 => "[ -~\n]{0,40}",
        1 => "[A-Za-z0-9+/=_-]{0,60}",
        1 => proptest::sample::select(vec![
            "\n", " ", "=", ": ", "\"", "@", "://", "password=", "TOKEN: ", "-----BEGIN ",
        ])
        .prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sniff_names_what_find_names_first(
        pieces in proptest::collection::vec(piece(), 0..8),
        mask in any::<u64>(),
    ) {
        check(&pieces.concat(), mask);
    }
}
