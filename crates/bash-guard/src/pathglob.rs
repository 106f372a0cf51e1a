//! Pathname expansion as bash does it before the command runs: a path word with unquoted glob
//! characters (`cat .en?`, `cat id_*`) names whatever the directory holds that matches, so the
//! analyzer judges those names, not only the directory. Bash's defaults: `*`, `?` and `[...]`
//! (`!`/`^` negates, ranges, a leading `]` is literal, `\` quotes the next character), a name
//! beginning with `.` matched only by a pattern beginning with `.`, `.` and `..` never.

use std::path::{Path, PathBuf};

/// Most directory entries read for one word: past it the names are unknown and the word asks.
pub(crate) const MAX_ENTRIES: usize = 4096;

/// What a glob word expands to now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Expansion {
    /// The matching names, spelled as the word spells its literal parts.
    Names(Vec<String>),
    /// More than [`MAX_ENTRIES`] entries would have to be read, or a name is not UTF-8: the
    /// names are not known.
    Unknown,
}

/// Expands `word` (relative to `cwd` when relative) against the filesystem, one component at a
/// time as bash does (`*/.env` is every `.env` one directory down). A component that matches
/// nothing leaves no name, as bash leaves the word literal (and the literal is judged as it is).
pub(crate) fn expand(word: &str, cwd: &Path) -> Expansion {
    let absolute = word.starts_with('/');
    // Spelled prefixes so far: "" (relative) or "/" (absolute).
    let mut prefixes = vec![if absolute {
        "/".to_owned()
    } else {
        String::new()
    }];
    let mut read = 0usize;
    let components: Vec<&str> = word.split('/').filter(|c| !c.is_empty()).collect();
    let last = components.len().saturating_sub(1);
    for (i, component) in components.iter().enumerate() {
        let sep = if i < last { "/" } else { "" };
        if !has_glob(component) {
            for p in &mut prefixes {
                p.push_str(component);
                p.push_str(sep);
            }
            continue;
        }
        let pat: Vec<char> = component.chars().collect();
        let mut next = Vec::new();
        for prefix in &prefixes {
            let dir = if prefix.is_empty() {
                cwd.to_path_buf()
            } else if absolute {
                PathBuf::from(prefix)
            } else {
                cwd.join(prefix)
            };
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                read += 1;
                if read > MAX_ENTRIES {
                    return Expansion::Unknown;
                }
                let Ok(entry) = entry else { continue };
                let name = entry.file_name();
                let Some(name) = name.to_str() else {
                    return Expansion::Unknown;
                };
                // A component before the last one names a directory to go into.
                let into = i == last
                    || entry
                        .file_type()
                        .is_ok_and(|t| t.is_dir() || t.is_symlink());
                if into && matches(&pat, name) {
                    next.push(format!("{prefix}{name}{sep}"));
                }
            }
        }
        prefixes = next;
        if prefixes.is_empty() {
            break;
        }
    }
    prefixes.sort();
    Expansion::Names(prefixes)
}

fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Whether `name` matches the glob `pat` as bash's default pathname expansion does.
pub(crate) fn matches(pat: &[char], name: &str) -> bool {
    if name == "." || name == ".." {
        return false;
    }
    let name: Vec<char> = name.chars().collect();
    if name.first() == Some(&'.') && pat.first() != Some(&'.') {
        return false;
    }
    match_from(pat, &name)
}

fn match_from(pat: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    // The last `*` seen and the name position it was tried at: backtrack there on a mismatch.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pat.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some('?') => Some(p + 1),
            Some('[') => class(pat, p, name.get(n).copied()),
            Some('\\') => match (pat.get(p + 1), name.get(n)) {
                (Some(a), Some(b)) if a == b => Some(p + 2),
                _ => None,
            },
            Some(c) => (Some(c) == name.get(n)).then_some(p + 1),
            None => None,
        };
        match step {
            Some(next) => {
                p = next;
                n += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pat.get(p..)
        .is_some_and(|rest| rest.iter().all(|c| *c == '*'))
}

/// Matches one character against the bracket expression at `pat[start]`; the position after
/// it when it matches. An unclosed `[` is a literal `[`.
fn class(pat: &[char], start: usize, c: Option<char>) -> Option<usize> {
    let c = c?;
    let mut i = start + 1;
    let negate = matches!(pat.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    // The closing `]` (one right after the opening or the negation is a member): none, and
    // bash reads the `[` literally.
    let closed = pat.get(i + 1..).is_some_and(|rest| rest.contains(&']'));
    if !closed {
        return (c == '[').then_some(start + 1);
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let ch = *pat.get(i)?;
        if ch == ']' && !first {
            break;
        }
        first = false;
        if pat.get(i + 1) == Some(&'-')
            && let Some(&hi) = pat.get(i + 2)
            && hi != ']'
        {
            hit |= ch <= c && c <= hi;
            i += 3;
        } else {
            hit |= ch == c;
            i += 1;
        }
    }
    (hit != negate).then_some(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        matches(&p.chars().collect::<Vec<_>>(), n)
    }

    #[test]
    fn matches_like_bash_pathname_expansion() {
        for (p, n) in [
            (".en?", ".env"),
            (".e*", ".env"),
            (".*", ".env"),
            ("*", "main.rs"),
            ("id_*", "id_rsa"),
            ("*.pem", "key.pem"),
            ("[!a]x", "bx"),
            ("[a-c]x", "bx"),
            ("[]]", "]"),
            ("a\\*", "a*"),
            ("**", "x"),
            ("x[", "x["),
        ] {
            assert!(m(p, n), "{p} should match {n}");
        }
        for (p, n) in [
            ("*", ".env"),
            ("?env", ".env"),
            ("[.]env", "xenv"),
            // A leading dot is matched only by a literal dot, not by a bracket expression.
            ("[.]env", ".env"),
            ("[!a]x", "ax"),
            ("*.pem", "key.pem.bak"),
            (".*", "."),
            (".*", ".."),
            ("a\\*", "ab"),
        ] {
            assert!(!m(p, n), "{p} should not match {n}");
        }
    }

    #[test]
    fn expands_against_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        for f in [".env", ".envrc", "main.rs", "id_rsa"] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/.env"), "x").unwrap();
        let names = |w: &str| match expand(w, dir.path()) {
            Expansion::Names(n) => n,
            Expansion::Unknown => panic!("{w} unknown"),
        };
        assert_eq!(names(".en?"), [".env"]);
        assert_eq!(names(".e*"), [".env", ".envrc"]);
        assert_eq!(names("*"), ["id_rsa", "main.rs", "sub"]);
        assert_eq!(names("sub/.e*"), ["sub/.env"]);
        assert_eq!(names("missing/*"), Vec::<String>::new());
        let abs = format!("{}/id_*", dir.path().display());
        assert_eq!(names(&abs), [format!("{}/id_rsa", dir.path().display())]);
        assert_eq!(names("s*/.env"), ["sub/.env"]);
        assert_eq!(names("*/.e*"), ["sub/.env"]);
        assert_eq!(names("*/nothing*"), Vec::<String>::new());
    }
}
