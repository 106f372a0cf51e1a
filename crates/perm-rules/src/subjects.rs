//! What a content rule is matched against: the simple commands of a bash call, a path, a host.

use serde_json::Value;

/// The subjects of one call, as a [`ContentSubjects`] provider sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subjects {
    /// Every subject a content rule must consider (each simple command, the path, the host).
    List(Vec<String>),
    /// The content could not be analysed: it never matches an Allow content rule and always
    /// matches a Deny/Ask content rule.
    Unsplittable,
}

/// Turns a call's arguments into the subjects content rules match.
///
/// `perm-rules` ships [`DefaultSubjects`]; `agent-core` wires in an implementation backed by
/// bash-guard's real parser (a bash command becomes its list of simple-command strings).
pub trait ContentSubjects: Send + Sync {
    /// The subjects of `tool` called with `args`.
    fn subjects(&self, tool: &str, args: &Value) -> Subjects;
}

/// The seed's argument keys, with a quote-aware bash splitter ([`split_simple_commands`]).
///
/// `read_file`/`file_write`/`file_edit` -> `file_path`, `glob_files` -> `pattern`,
/// `grep_files` -> `path`, `run_bash` -> `command`, `web_fetch` -> the host of `url`.
/// Any other tool, or a missing or non-string key, is [`Subjects::Unsplittable`].
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultSubjects;

impl ContentSubjects for DefaultSubjects {
    fn subjects(&self, tool: &str, args: &Value) -> Subjects {
        let key = match tool {
            "read_file" | "file_write" | "file_edit" => "file_path",
            "glob_files" => "pattern",
            "grep_files" => "path",
            "run_bash" => "command",
            "web_fetch" => "url",
            _ => return Subjects::Unsplittable,
        };
        let Some(value) = args.get(key).and_then(Value::as_str) else {
            return Subjects::Unsplittable;
        };
        match tool {
            "run_bash" => match split_simple_commands(value) {
                Some(cmds) => Subjects::List(cmds),
                None => Subjects::Unsplittable,
            },
            "web_fetch" => match url_host(value) {
                Some(host) => Subjects::List(vec![host]),
                None => Subjects::Unsplittable,
            },
            _ => Subjects::List(vec![value.to_owned()]),
        }
    }
}

fn url_host(url: &str) -> Option<String> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// Splits a bash command into simple commands on `&&`, `||`, `;`, `|`, `&` and newlines,
/// outside quotes. Leading `VAR=value` assignments are dropped from each command.
///
/// Returns `None` (cannot split) for anything that hides a command from this splitter: an
/// unterminated quote or trailing backslash, command or process substitution (`$(`, a
/// backtick, `<(`, `>(`), and subshells or groups (`(`, `{`) at the start of a command.
///
/// ```
/// use perm_rules::split_simple_commands;
/// assert_eq!(
///     split_simple_commands("git status && rm -rf ~").unwrap(),
///     vec!["git status", "rm -rf ~"]
/// );
/// assert_eq!(split_simple_commands("echo 'a && b' | wc").unwrap(), vec!["echo 'a && b'", "wc"]);
/// assert!(split_simple_commands("echo $(rm -rf x)").is_none());
/// ```
pub fn split_simple_commands(command: &str) -> Option<Vec<String>> {
    // Most commands have none of the characters the loop below acts on; for them the loop
    // would copy every character into one segment, so take that segment directly.
    if !command.contains(|c| {
        matches!(
            c,
            ';' | '\n' | '&' | '|' | '\\' | '`' | '$' | '<' | '>' | '"' | '\'' | '(' | '{'
        )
    }) {
        let mut out = Vec::new();
        push_command(&mut out, command);
        return Some(out);
    }
    split_with(command, push_command)
}

/// The splitting loop; `push` turns one raw segment into a simple command.
fn split_with(command: &str, push: fn(&mut Vec<String>, &str)) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = command.chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        if single {
            current.push(c);
            if c == '\'' {
                single = false;
            }
            continue;
        }
        match c {
            '\\' => {
                current.push(c);
                current.push(chars.next()?);
            }
            '`' => return None,
            '$' if chars.peek() == Some(&'(') => return None,
            '<' | '>' if !double && chars.peek() == Some(&'(') => return None,
            '"' => {
                double = !double;
                current.push(c);
            }
            '\'' if !double => {
                single = true;
                current.push(c);
            }
            _ if double => current.push(c),
            '(' | '{' if current.trim().is_empty() => return None,
            ';' | '\n' | '&' | '|' => {
                if matches!(c, '&' | '|') && chars.peek() == Some(&c) {
                    chars.next();
                }
                // `|&` and `>&`/`&>` redirections: keep `&` that belongs to a redirection.
                if c == '&' && (current.ends_with('>') || chars.peek() == Some(&'>')) {
                    current.push(c);
                    continue;
                }
                push(&mut out, &current);
                current.clear();
            }
            _ => current.push(c),
        }
    }
    if single || double {
        return None;
    }
    push(&mut out, &current);
    Some(out)
}

fn push_command(out: &mut Vec<String>, raw: &str) {
    // Already single-spaced and not starting with an assignment: the words joined by one
    // space are `raw` itself.
    let single_spaced = !raw.starts_with(' ')
        && !raw.ends_with(' ')
        && !raw.as_bytes().windows(2).any(|w| w == b"  ")
        && !raw.chars().any(|c| c.is_whitespace() && c != ' ');
    if single_spaced && !raw.is_empty() && !raw.split(' ').next().is_some_and(is_assignment) {
        out.push(raw.to_owned());
        return;
    }
    push_words(out, raw);
}

fn push_words(out: &mut Vec<String>, raw: &str) {
    let words: Vec<&str> = raw.split_whitespace().collect();
    let first_real = words
        .iter()
        .position(|w| !is_assignment(w))
        .unwrap_or(words.len());
    let rest = words.get(first_real..).unwrap_or_default();
    if rest.is_empty() {
        // A bare assignment or an empty segment runs no program.
        if !words.is_empty() {
            out.push(words.join(" "));
        }
        return;
    }
    out.push(rest.join(" "));
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    proptest::proptest! {
        // The fast paths (no separator or quote: one segment; single-spaced segment: no
        // re-joining) give what the general loop gives.
        #[test]
        fn fast_paths_agree_with_the_loop(cmd in "[a-c =;&|'\"$(){}<>\\\\\t\n\u{a0}/_1-]{0,16}") {
            proptest::prop_assert_eq!(split_simple_commands(&cmd), split_with(&cmd, push_words));
        }
    }

    #[test]
    fn splits() {
        let s = |c: &str| split_simple_commands(c);
        assert_eq!(
            s("a; b\nc || d | e & f").unwrap(),
            vec!["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(s("FOO=1 rm -rf x").unwrap(), vec!["rm -rf x"]);
        assert_eq!(
            s("echo \"x; $HOME\" ; ls").unwrap(),
            vec!["echo \"x; $HOME\"", "ls"]
        );
        assert_eq!(s("cmd 2>&1 | tee f").unwrap(), vec!["cmd 2>&1", "tee f"]);
        assert_eq!(s("a \\; b").unwrap(), vec!["a \\; b"]);
        for bad in [
            "echo `id`",
            "echo \"$(id)\"",
            "(rm x)",
            "{ rm x; }",
            "echo 'x",
            "diff <(a) b",
            "a \\",
        ] {
            assert!(s(bad).is_none(), "{bad}");
        }
        assert_eq!(s("").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn default_keys() {
        let d = DefaultSubjects;
        assert_eq!(
            d.subjects("read_file", &json!({"file_path": "/a"})),
            Subjects::List(vec!["/a".into()])
        );
        assert_eq!(
            d.subjects("read_file", &json!({"path": "/a"})),
            Subjects::Unsplittable
        );
        assert_eq!(
            d.subjects(
                "web_fetch",
                &json!({"url": "https://u@Docs.Example.com:443/x"})
            ),
            Subjects::List(vec!["docs.example.com".into()])
        );
        assert_eq!(d.subjects("mcp__x", &json!({})), Subjects::Unsplittable);
        assert_eq!(
            d.subjects("run_bash", &json!({"command": "ls && rm x"})),
            Subjects::List(vec!["ls".into(), "rm x".into()])
        );
    }
}
