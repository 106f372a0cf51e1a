//! The shape of `detectors.toml`, the built-in detector table.

use serde::Deserialize;

/// The whole table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Table {
    pub(crate) detector: Vec<DetectorSpec>,
    pub(crate) assignment: AssignmentSpec,
}

/// One regex detector.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DetectorSpec {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) anchors: Vec<String>,
    pub(crate) pattern: String,
    #[serde(default)]
    pub(crate) entropy: Option<f64>,
    #[serde(default = "yes")]
    pub(crate) boundary: bool,
    #[serde(default)]
    pub(crate) generic: bool,
    #[serde(default)]
    pub(crate) window: Option<usize>,
    #[serde(default)]
    pub(crate) mask: Option<Mask>,
    #[serde(default)]
    pub(crate) check: Option<Check>,
    #[serde(default)]
    pub(crate) example: Option<Example>,
}

fn yes() -> bool {
    true
}

/// A validation the shape alone cannot express.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Check {
    /// The first dot-separated part decodes (base64url) to a JSON object with `alg`.
    JwtHeader,
    /// The masked text holds an ASCII digit and an ASCII letter.
    HasDigit,
    /// The masked text is base64 of printable `user:password`.
    BasicCredentials,
    /// The masked text's start is base64 of a `-----BEGIN ... PRIVATE KEY` line.
    Base64PrivateKey,
}

/// Which part of a match is masked, when not the whole match or the `secret` group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Mask {
    /// After the first line break (raw or JSON-escaped `\n`), up to the `-----END` line.
    Body,
}

/// The test pair every entry carries.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Example {
    /// Must be masked.
    pub(crate) hit: String,
    /// Must pass untouched.
    pub(crate) miss: String,
}

/// The `NAME=value` detector's word lists.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AssignmentSpec {
    pub(crate) id: String,
    pub(crate) words: Vec<String>,
    pub(crate) pairs: Vec<(String, String)>,
    pub(crate) qualifiers: Vec<String>,
    pub(crate) placeholders: Vec<String>,
    pub(crate) placeholder_prefixes: Vec<String>,
    pub(crate) placeholder_contains: Vec<String>,
    pub(crate) min_len: usize,
    pub(crate) entropy: f64,
    #[serde(default)]
    pub(crate) example: Option<Example>,
}

/// The table's text, compiled into the binary.
pub(crate) const BUILTIN: &str = include_str!("detectors.toml");

/// Parses the built-in table.
pub(crate) fn builtin() -> Result<Table, toml::de::Error> {
    toml::from_str(BUILTIN)
}

/// `c * log2(c)` for the counts a short value can have.
static C_LOG_C: std::sync::LazyLock<[f64; 129]> = std::sync::LazyLock::new(|| {
    let mut t = [0.0; 129];
    for (c, v) in t.iter_mut().enumerate().skip(1) {
        #[allow(clippy::cast_precision_loss)] // c <= 128
        let c = c as f64;
        *v = c * c.log2();
    }
    t
});

/// Shannon entropy of `s` in bits per character (over bytes; the detectors' alphabets are ASCII).
///
/// Computed as `log2(n) - sum(c log2 c) / n`; short ASCII values (every token and password)
/// use a 128-entry count table on the stack and a precomputed `c log2 c`.
pub(crate) fn entropy(s: &str) -> f64 {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)] // lengths of scanned values are far below 2^52
    let n = bytes.len() as f64;
    if bytes.len() <= 128 && bytes.is_ascii() {
        let mut counts = [0u8; 128];
        for &b in bytes {
            if let Some(c) = counts.get_mut(usize::from(b)) {
                *c += 1;
            }
        }
        let table = &*C_LOG_C;
        let sum: f64 = counts
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| table.get(usize::from(c)).copied().unwrap_or(0.0))
            .sum();
        return n.log2() - sum / n;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        if let Some(c) = counts.get_mut(usize::from(b)) {
            *c += 1;
        }
    }
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Decodes base64, standard (`+ /`) or URL-safe (`- _`) alphabet, padded or not; `None` on any
/// other byte.
pub(crate) fn base64url_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for &b in s.as_bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).ok()?);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_table_parses_and_ids_are_unique() {
        let t = builtin().unwrap();
        let mut ids: Vec<&str> = t.detector.iter().map(|d| d.id.as_str()).collect();
        ids.push(&t.assignment.id);
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate detector id");
        for d in &t.detector {
            assert!(d.example.is_some(), "{} has no test pair", d.id);
            assert!(!d.anchors.is_empty(), "{} has no anchor", d.id);
        }
        assert!(t.assignment.example.is_some());
        let mut anchors: Vec<&str> = t
            .detector
            .iter()
            .flat_map(|d| d.anchors.iter().map(String::as_str))
            .collect();
        anchors.sort_unstable();
        anchors.dedup();
        assert!(
            anchors.len() <= 64,
            "{} anchors: more than the SIMD prefilter takes",
            anchors.len()
        );
    }

    #[test]
    fn entropy_of_known_strings() {
        assert_eq!(entropy(""), 0.0);
        // Both code paths (short: sorted runs; long: table) agree.
        let long = "abcd".repeat(40);
        assert!((entropy(&long) - 2.0).abs() < 1e-9);
        assert!((entropy(&"ab".repeat(100)) - 1.0).abs() < 1e-9);
        assert_eq!(entropy("aaaa"), 0.0);
        assert!((entropy("abcd") - 2.0).abs() < 1e-9);
        assert!((entropy("aabb") - 1.0).abs() < 1e-9);
    }

    #[test]
    fn base64url_decodes_a_jwt_header() {
        let h = base64url_decode("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9").unwrap();
        assert_eq!(h, br#"{"alg":"HS256","typ":"JWT"}"#);
        assert_eq!(base64url_decode("a*b"), None);
        assert_eq!(base64url_decode("dTpw").unwrap(), b"u:p");
    }
}
