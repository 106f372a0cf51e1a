//! The child's environment, built explicitly.

/// True if `name` matches `pattern`: `*` matches any run of characters; case is ignored so that
/// `github_token` is caught by `*_TOKEN`.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    // Bytes, not chars: on valid UTF-8 a literal never matches from inside a character (a lead
    // byte never equals a continuation byte), so this is the char-wise match without the two
    // allocations per call, which were most of the profile's cost (an `/etc` entry is matched
    // against every hidden pattern on each confined start).
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    // Iterative wildcard match with one backtrack point: linear enough for env names.
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(c) if n.get(ni).is_some_and(|d| c.eq_ignore_ascii_case(d)) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..)
        .is_some_and(|rest| rest.iter().all(|c| *c == b'*'))
}

/// Keeps the variables of `vars` whose name matches an allow pattern and no deny pattern.
pub(crate) fn filter<I>(vars: I, allow: &[String], deny: &[String]) -> Vec<(String, String)>
where
    I: IntoIterator<Item = (String, String)>,
{
    vars.into_iter()
        .filter(|(name, _)| {
            allow.iter().any(|p| glob_match(p, name)) && !deny.iter().any(|p| glob_match(p, name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*_TOKEN", "GITHUB_TOKEN"));
        assert!(glob_match("*_TOKEN", "github_token"));
        assert!(glob_match("*PASSWORD*", "DB_PASSWORD_FILE"));
        assert!(glob_match("LC_*", "LC_ALL"));
        assert!(glob_match("PATH", "PATH"));
        assert!(!glob_match("PATH", "PATHX"));
        assert!(!glob_match("*_KEY", "KEYBOARD"));
        assert!(glob_match("A*B*C", "AxxBxxC"));
        assert!(!glob_match("A*B*C", "AxxBxx"));
        // Multi-byte characters match whole, under a wildcard or literally; case folding is
        // ASCII only, as before.
        assert!(glob_match("ÉT*É", "ÉTxÉ"));
        assert!(glob_match("*é", "café"));
        assert!(!glob_match("*é", "cafe"));
        assert!(!glob_match("é", "É"));
        assert!(glob_match("", ""));
        assert!(!glob_match("", "x"));
        assert!(glob_match("**", ""));
    }

    #[test]
    fn deny_wins() {
        let vars = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("HOME_KEY".to_string(), "s".to_string()),
            ("OTHER".to_string(), "x".to_string()),
        ];
        let out = filter(vars, &["PATH".into(), "HOME*".into()], &["*_KEY".into()]);
        assert_eq!(out, vec![("PATH".to_string(), "/bin".to_string())]);
    }
}
