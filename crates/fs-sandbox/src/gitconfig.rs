//! The few git config readings the judgements need (`credential.helper`, `include.path`),
//! from text: one reader, as git spells its files.

/// Every value of `key` in sections named `section` (with or without a subsection: `[credential
/// "https://host"]`), in file order. Section and key names are case-insensitive; a quoted value
/// loses its quotes; `#` or `;` outside quotes starts a comment; an empty value is skipped.
pub(crate) fn values(text: &str, section: &str, key: &str) -> Vec<String> {
    let mut inside = false;
    let mut found = Vec::new();
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let Some((name, rest)) = header.split_once(']') else {
                inside = false;
                continue;
            };
            let name = name.split([' ', '"', '\t']).next().unwrap_or("");
            inside = name.eq_ignore_ascii_case(section);
            // `[core] hooksPath = x` on one line.
            line = rest.trim();
            if line.is_empty() {
                continue;
            }
        }
        if !inside {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if !name.trim().eq_ignore_ascii_case(key) {
            continue;
        }
        let value = unquote(value.trim());
        if !value.is_empty() {
            found.push(value);
        }
    }
    found
}

/// A git config value without its quotes and trailing comment.
fn unquote(value: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(match next {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                }
            }
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn values_are_read_as_git_reads_them() {
        let text = "[Credential \"https://h\"]\n\tHelper = store --file=/a # note\n[core]\n\thelper = no\n[credential]\n\thelper = \"store --file=/b c\"\n\thelper =\n";
        assert_eq!(
            values(text, "credential", "helper"),
            ["store --file=/a", "store --file=/b c"]
        );
        assert_eq!(
            values("[include] path = x.inc\n", "include", "path"),
            ["x.inc"]
        );
        assert!(values("[includeIf \"gitdir:/x\"]\npath = y\n", "include", "path").is_empty());
    }
}
