//! Where a network client really goes. When a command was judged to use the network and was
//! not already denied, every static argument that can name a destination is handed to the
//! judge ([`PathJudge::destination`]): a URL, `user@host:path`, `host:port`, a bare address.
//! Loopback, private and metadata addresses in any spelling are not the public web, so
//! `curl http://0x7f.1/` or `ssh root@169.254.169.254` is a deny even where the network is
//! allowed (the network finding alone only asks).

use crate::analyze::Walker;
use crate::verdict::Decision;
use crate::words::Decoded;

/// Judges the destinations of the simple command whose findings start at `before`.
pub(crate) fn check(w: &mut Walker<'_>, before: usize, argv: &[Decoded], sub: &str) {
    let new = w.findings.get(before..).unwrap_or(&[]);
    let uses_network = new.iter().any(|f| f.code == "network");
    if !uses_network || new.iter().any(|f| f.decision == Decision::Deny) {
        return;
    }
    let mut refusals = Vec::new();
    for word in argv.iter().skip(1).filter(|a| !a.dynamic) {
        for target in candidates(&word.text) {
            if let Some(reason) = w.judge.destination(target) {
                refusals.push(format!("`{target}`: {reason}"));
            }
        }
    }
    for reason in refusals {
        w.add(
            Decision::Deny,
            "network_internal",
            sub,
            format!("{reason}; network use is judged by where it goes"),
        );
    }
}

/// The parts of one argument that may name a destination: the value of `--opt=value` or
/// `-xVALUE`-style words with `=`, else the whole word. Options without a value name none.
fn candidates(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    if text.starts_with('-') {
        return text
            .split_once('=')
            .map(|(_, value)| value)
            .filter(|v| !v.is_empty())
            .into_iter()
            .collect();
    }
    vec![text]
}

#[cfg(test)]
mod tests {
    use super::candidates;

    #[test]
    fn option_values_and_operands_are_candidates() {
        assert_eq!(candidates("--url=http://x/"), vec!["http://x/"]);
        assert_eq!(candidates("-s"), Vec::<&str>::new());
        assert_eq!(candidates("--proxy"), Vec::<&str>::new());
        assert_eq!(candidates("root@10.0.0.1"), vec!["root@10.0.0.1"]);
        assert_eq!(candidates(""), Vec::<&str>::new());
    }
}
