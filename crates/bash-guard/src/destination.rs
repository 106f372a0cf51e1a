//! Where a network client really goes. When a command was judged to use the network and was
//! not already denied, every static argument that can name a destination is handed to the
//! judge ([`PathJudge::destination`]): a URL, `user@host:path`, `host:port`, a bare address.
//! Loopback, private and metadata addresses in any spelling are not the public web, so
//! `curl http://0x7f.1/` or `ssh root@169.254.169.254` is a deny even where the network is
//! allowed (the network finding alone only asks).

use crate::verdict::Decision;
use crate::walker::Walker;
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
    let base = if text.starts_with('-') {
        match text.split_once('=').map(|(_, value)| value) {
            Some(value) if !value.is_empty() => value,
            _ => return Vec::new(),
        }
    } else {
        text
    };
    let mut out = vec![base];
    out.extend(mapping_addresses(base));
    out
}

/// The addresses inside a colon-separated mapping that is not a URL: curl's `--resolve
/// HOST:PORT:ADDR[,ADDR]` and `--connect-to HOST:PORT:HOST2:PORT2`, ssh's `-L PORT:HOST:PORT`.
/// The whole word names no destination there, its parts do: every part that is not a bare
/// port number, and bracketed IPv6 literals.
fn mapping_addresses(word: &str) -> Vec<&str> {
    if word.contains("://") || word.matches(':').count() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut rest = word;
    while let Some(open) = rest.find('[') {
        let Some(len) = rest.get(open..).and_then(|r| r.find(']')) else {
            break;
        };
        out.extend(rest.get(open + 1..open + len));
        rest = rest.get(open + len + 1..).unwrap_or("");
    }
    out.extend(word.split([':', ',']).filter(|part| {
        !part.is_empty() && !part.bytes().all(|b| b.is_ascii_digit()) && !part.contains(['[', ']'])
    }));
    out
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

    #[test]
    fn mappings_offer_their_addresses() {
        assert_eq!(
            candidates("x.io:443:127.0.0.1"),
            vec!["x.io:443:127.0.0.1", "x.io", "127.0.0.1"]
        );
        assert_eq!(
            candidates("--resolve=x.io:443:[::1],10.0.0.1"),
            vec!["x.io:443:[::1],10.0.0.1", "::1", "x.io", "10.0.0.1"]
        );
        assert_eq!(
            candidates("8080:localhost:80"),
            vec!["8080:localhost:80", "localhost"]
        );
        assert_eq!(candidates("http://a.b:80/x"), vec!["http://a.b:80/x"]);
    }
}
