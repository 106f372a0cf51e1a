//! The `secret-assignment` detector: `NAME=value` where NAME holds a secret-like word.
//!
//! Not a regex: the prefilter lands on a word inside a name, and this code finds the whole
//! name, splits it into words (on `_ . -`, case changes and digits), checks the operator after
//! it and judges the value. Names are matched by whole words, so `authors`, `tokenizers` and
//! `jsonwebtoken` are not secret-like; values that are code, references or stand-ins pass.

use std::collections::HashSet;

use aho_corasick::AhoCorasick;
use std::ops::Range;

use super::table::{AssignmentSpec, entropy};

/// The compiled word lists.
#[derive(Debug)]
pub(crate) struct Assignment {
    /// Sorted, for binary search.
    words: Vec<String>,
    pairs: Vec<(String, String)>,
    /// Sorted, for binary search.
    qualifiers: Vec<String>,
    /// Sorted, for binary search.
    placeholders: Vec<String>,
    placeholder_prefixes: Vec<String>,
    /// One ASCII case-insensitive pass for all the stand-in substrings.
    placeholder_contains: Option<AhoCorasick>,
    min_len: usize,
    entropy: f64,
    /// Names (lowercase) the policy says are not secrets.
    allow_keys: HashSet<String>,
}

/// A name's end and its value's span, found after a prefilter hit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    /// Where the name ends: hits before this point belong to the same name.
    pub(crate) name_end: usize,
    /// The value to mask, when it is a secret.
    pub(crate) value: Option<Range<usize>>,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// Splits a name into lowercase words on `_ . -`, lower->upper case changes, the end of an
/// acronym (`APIKey` -> api, key) and letter/digit changes.
pub(crate) fn split_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|p| chars.get(p)) {
            let next = chars.get(i + 1).copied();
            let boundary = (prev.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (prev.is_ascii_digit() != c.is_ascii_digit() && prev.is_ascii_alphanumeric())
                || (prev.is_ascii_uppercase()
                    && c.is_ascii_uppercase()
                    && next.is_some_and(|n| n.is_ascii_lowercase()));
            if boundary && !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// A reference to a value kept elsewhere: `${VAR}`, `$VAR`, `%VAR%`, `%(name)s`, `%s`,
/// `{{ secrets.X }}`, YAML tags (`!vault`) and aliases (`*x`, `&x`), `@Value(...)`.
pub(crate) fn is_reference(value: &str) -> bool {
    value.starts_with(['$', '!', '&', '*', '@'])
        || value.starts_with("{{")
        || value.starts_with("%(")
        || value.starts_with("%{")
        || value.starts_with("%s")
        || (value.len() > 2 && value.starts_with('%') && value.ends_with('%'))
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort_unstable();
    v.dedup();
    v
}

impl Assignment {
    pub(crate) fn new(spec: &AssignmentSpec, allow_keys: &[String]) -> Assignment {
        let lower = |v: &[String]| v.iter().map(|s| s.to_ascii_lowercase()).collect::<Vec<_>>();
        Assignment {
            words: sorted(lower(&spec.words)),
            pairs: spec
                .pairs
                .iter()
                .map(|(a, b)| (a.to_ascii_lowercase(), b.to_ascii_lowercase()))
                .collect(),
            qualifiers: sorted(lower(&spec.qualifiers)),
            placeholders: sorted(lower(&spec.placeholders)),
            placeholder_prefixes: lower(&spec.placeholder_prefixes),
            // Only fails on absurd sizes; without it a stand-in is simply not recognised by
            // substring (the value is then masked: the safe side).
            placeholder_contains: AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .kind(Some(super::scanner::SCAN_AUTOMATON))
                .build(&spec.placeholder_contains)
                .ok(),
            min_len: spec.min_len,
            entropy: spec.entropy,
            allow_keys: lower(allow_keys).into_iter().collect(),
        }
    }

    /// The literals the prefilter looks for (in three spellings): every secret word and the
    /// first word of every pair, minus those another one is a prefix of (`pass` finds
    /// `password`; the whole name is judged anyway).
    pub(crate) fn anchors(&self) -> Vec<String> {
        let mut all: Vec<String> = self.words.clone();
        all.extend(self.pairs.iter().map(|(first, _)| first.clone()));
        all.sort_unstable();
        all.dedup();
        let mut out: Vec<String> = Vec::new();
        for w in all {
            // Sorted, so a prefix comes right before the words it covers.
            if !out.last().is_some_and(|p| w.starts_with(p.as_str())) {
                out.push(w);
            }
        }
        out
    }

    /// Whether `name` (a key, a variable, an option) names a secret.
    pub(crate) fn name_is_secret(&self, name: &str) -> bool {
        let trimmed = name.trim_matches(|c: char| matches!(c, '-' | '.' | '_'));
        if !self.allow_keys.is_empty() && self.allow_keys.contains(&trimmed.to_ascii_lowercase()) {
            return false;
        }
        let words = split_words(trimmed);
        let is = |set: &[String], w: &str| set.binary_search_by(|x| x.as_str().cmp(w)).is_ok();
        let qualified_after = |i: usize| words.iter().skip(i).any(|w| is(&self.qualifiers, w));
        for (i, w) in words.iter().enumerate() {
            if is(&self.words, w) && !qualified_after(i + 1) {
                return true;
            }
            if let Some(next) = words.get(i + 1)
                && self.pairs.iter().any(|(a, b)| a == w && b == next)
                && !qualified_after(i + 2)
            {
                return true;
            }
        }
        false
    }

    /// Whether a value is a stand-in: a placeholder word, prefix or substring, or one character
    /// repeated.
    pub(crate) fn is_stand_in(&self, value: &str) -> bool {
        let bytes = value.as_bytes();
        let exact = self
            .placeholders
            .binary_search_by(|p| {
                let lower = bytes.iter().map(u8::to_ascii_lowercase);
                p.bytes().cmp(lower)
            })
            .is_ok();
        if exact
            || self.placeholder_prefixes.iter().any(|p| {
                bytes
                    .get(..p.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(p.as_bytes()))
            })
            || self
                .placeholder_contains
                .as_ref()
                .is_some_and(|ac| ac.is_match(value))
        {
            return true;
        }
        // One character repeated: `xxxxxxxx`, `********`, `00000000`.
        let mut it = bytes.iter();
        it.next().is_some_and(|first| it.all(|b| b == first))
    }

    /// Whether a value (without its quotes) is a secret. `quoted` values are string literals;
    /// bare values may be code, so they must look like data.
    pub(crate) fn value_is_secret(&self, value: &str, quoted: bool) -> bool {
        if value.len() < self.min_len {
            return false;
        }
        // References: `${VAR}`, `$VAR`, `%(name)s`, `{{ secrets.X }}`, YAML tags and aliases.
        if is_reference(value) {
            return false;
        }
        // File paths (`/run/secrets/db`, `~/.ssh/id_rsa`): where a secret is, not the secret.
        if value.starts_with(['/', '~']) || value.starts_with("./") || value.starts_with("../") {
            return false;
        }
        // Numbers, versions, dates: no letter.
        if !value.bytes().any(|b| b.is_ascii_alphabetic()) {
            return false;
        }
        if quoted {
            // Prose and labels (`"Enter your password"`), not credentials.
            if value.bytes().any(|b| b.is_ascii_whitespace()) {
                return false;
            }
        } else {
            // Code: calls, indexing, generics, blocks.
            if value.contains(['(', '[', '{', '<', '>']) {
                return false;
            }
            // Words, identifiers and dotted paths (`String`, `self.token`, `hashed-password`).
            if value
                .bytes()
                .all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'.' | b'-'))
            {
                return false;
            }
        }
        // Last, as the dearest test: stand-ins (`changeme`, `your-key-here`, `xxxx`).
        entropy(value) >= self.entropy && !self.is_stand_in(value)
    }

    /// Judges the name around a prefilter hit at `hit` (a byte range of `text`).
    pub(crate) fn at(&self, text: &str, hit: Range<usize>) -> Hit {
        let bytes = text.as_bytes();
        let mut start = hit.start;
        while let Some(&b) = start.checked_sub(1).and_then(|p| bytes.get(p)) {
            if !is_name_byte(b) {
                break;
            }
            start -= 1;
        }
        let mut end = hit.end;
        while bytes.get(end).is_some_and(|&b| is_name_byte(b)) {
            end += 1;
        }
        let miss = Hit {
            name_end: end,
            value: None,
        };
        let Some(name) = text.get(start..end) else {
            return miss;
        };
        let Some(value) = self.value_after(text, end) else {
            return miss;
        };
        if !self.name_is_secret(name) {
            return miss;
        }
        let (range, quoted) = value;
        match text.get(range.clone()) {
            Some(v) if self.value_is_secret(v, quoted) => Hit {
                name_end: end,
                value: Some(range),
            },
            _ => miss,
        }
    }

    /// After a name ending at `pos`: an optional closing quote, an assignment operator and a
    /// value on the same line. Returns the value's span and whether it was quoted.
    fn value_after(&self, text: &str, pos: usize) -> Option<(Range<usize>, bool)> {
        let bytes = text.as_bytes();
        let mut i = pos;
        let at = |i: usize| bytes.get(i).copied();
        // The closing quote of a quoted key: `"password":`, `\"password\":`.
        if at(i) == Some(b'\\') && matches!(at(i + 1), Some(b'"' | b'\'')) {
            i += 2;
        } else if matches!(at(i), Some(b'"' | b'\'')) {
            i += 1;
        }
        while matches!(at(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        // `=`, `:`, `:=`, `=>`, `?=`; not `==`, `::`, `!=`, `<=`.
        match (at(i), at(i + 1)) {
            (Some(b'='), Some(b'=')) | (Some(b':'), Some(b':')) => return None,
            (Some(b':' | b'?'), Some(b'=')) | (Some(b'='), Some(b'>')) => i += 2,
            (Some(b'=' | b':'), _) => i += 1,
            _ => return None,
        }
        while matches!(at(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        // A quoted value, possibly JSON-escaped inside a string (`\"...\"`).
        let escaped = at(i) == Some(b'\\') && matches!(at(i + 1), Some(b'"' | b'\''));
        let q = if escaped { at(i + 1) } else { at(i) };
        if let Some(q @ (b'"' | b'\'' | b'`')) = q {
            let open = if escaped { i + 2 } else { i + 1 };
            let mut j = open;
            loop {
                match at(j) {
                    None | Some(b'\n' | b'\r') => return None,
                    Some(b'\\') if escaped && at(j + 1) == Some(q) => {
                        return Some((open..j, true));
                    }
                    Some(b'\\') => j += 2,
                    Some(b) if b == q && !escaped => return Some((open..j, true)),
                    Some(_) => j += 1,
                }
            }
        }
        let mut j = i;
        while let Some(b) = at(j) {
            if b.is_ascii_whitespace()
                || matches!(b, b',' | b';' | b'"' | b'\'' | b'`' | b')' | b']' | b'}')
            {
                break;
            }
            j += 1;
        }
        // A trailing backslash belongs to an escaped quote in a JSON string.
        (j > i).then_some((i..j, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::table::builtin;

    fn detector() -> Assignment {
        Assignment::new(&builtin().unwrap().assignment, &[])
    }

    fn secret_in(text: &str) -> Option<String> {
        let a = detector();
        let lower = text.to_ascii_lowercase();
        for anchor in a.anchors() {
            let mut from = 0;
            while let Some(p) = lower.get(from..).and_then(|s| s.find(&anchor)) {
                let hit = a.at(text, from + p..from + p + anchor.len());
                if let Some(v) = hit.value {
                    return Some(text[v].to_owned());
                }
                from += p + anchor.len();
            }
        }
        None
    }

    #[test]
    fn splits_names_into_words() {
        assert_eq!(
            split_words("AWS_SECRET_ACCESS_KEY"),
            ["aws", "secret", "access", "key"]
        );
        assert_eq!(split_words("apiKey"), ["api", "key"]);
        assert_eq!(split_words("APIKey"), ["api", "key"]);
        assert_eq!(split_words("db.password2"), ["db", "password", "2"]);
        assert_eq!(split_words("--auth-token"), ["auth", "token"]);
        assert_eq!(split_words("tokenizers"), ["tokenizers"]);
    }

    #[test]
    fn names_are_matched_by_whole_words() {
        let a = detector();
        for name in [
            "DB_PASSWORD",
            "apiKey",
            "client_secret",
            "x-api-key",
            "AccountKey",
            "GITHUB_TOKEN",
            "SecretAccessKey",
            "SECRET_KEY_BASE",
        ] {
            assert!(a.name_is_secret(name), "{name}");
        }
        for name in [
            "authors",
            "tokenizers",
            "auth_handler",
            "password_field",
            "TOKEN_EXPIRY",
            "secret_name",
            "jsonwebtoken",
            "keyboard",
            "api_key_header",
            "max_tokens",
            "monkey",
        ] {
            assert!(!a.name_is_secret(name), "{name}");
        }
    }

    #[test]
    fn finds_values_of_secret_names() {
        assert_eq!(
            secret_in("DB_PASSWORD=hunter2x").as_deref(),
            Some("hunter2x")
        );
        assert_eq!(
            secret_in(r#"{"client_secret": "Zq8Lm3Tx7Wb2"}"#).as_deref(),
            Some("Zq8Lm3Tx7Wb2")
        );
        assert_eq!(
            secret_in(r#"{\"apiKey\":\"Zq8Lm3Tx7Wb2\"}"#).as_deref(),
            Some("Zq8Lm3Tx7Wb2")
        );
        assert_eq!(
            secret_in("password: s3cr3t!pw").as_deref(),
            Some("s3cr3t!pw")
        );
        assert_eq!(
            secret_in("export API_KEY='a8f3k2m9q1z7'").as_deref(),
            Some("a8f3k2m9q1z7")
        );
    }

    #[test]
    fn leaves_code_references_and_stand_ins_alone() {
        for text in [
            "let token = lexer.next_token();",
            "tokenizers = \"0.19\"",
            "authors = [\"Ada <ada@example.com>\"]",
            "fn login(password: &str) -> bool {",
            "password: String,",
            "if password == confirm {",
            "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
            "API_KEY=your-api-key-here",
            "PASSWORD=changeme",
            "password = \"\"",
            "SECRET_KEY=${SECRET_KEY}",
            "token = os.environ[\"TOKEN\"]",
            "label = \"Enter your password\"",
            "password_field = \"password\"",
            "POSTGRES_PASSWORD: postgres",
            "TOKEN_TTL=3600",
            "secret: [u8; 32],",
            "self.password = hashed_password",
            "password: ********",
        ] {
            assert_eq!(secret_in(text), None, "{text}");
        }
    }

    #[test]
    fn allow_keys_are_not_secrets() {
        let a = Assignment::new(
            &builtin().unwrap().assignment,
            &["SESSION_SECRET".to_owned()],
        );
        assert!(!a.name_is_secret("session_secret"));
        assert!(a.name_is_secret("CLIENT_SECRET"));
    }
}
