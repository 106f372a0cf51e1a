//! Output truncation and persistence of large tool results.

use std::path::{Path, PathBuf};

/// Cuts `text` to at most `max` characters on a char boundary; returns whether it cut.
pub fn truncate_chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((byte, _)) => (text.get(..byte).unwrap_or(""), true),
        None => (text, false),
    }
}

/// A call id made safe as a file name: anything but `[A-Za-z0-9_-]` becomes `_` (a model
/// chooses ids, so `../x` must not become a path).
pub fn safe_file_stem(id: &str) -> String {
    let stem: String = id
        .chars()
        .take(128)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() {
        "call".to_owned()
    } else {
        stem
    }
}

/// Where a result of call `id` is persisted: `{library_dir}/tool-results/{id}.txt`.
pub fn result_path(library_dir: &Path, id: &str) -> PathBuf {
    library_dir
        .join("tool-results")
        .join(format!("{}.txt", safe_file_stem(id)))
}

/// Shrinks an output over `max_chars`: with a `library_dir` the whole text is written to
/// [`result_path`] and the message gets a stub naming the file and the first characters;
/// without one (or when the write fails) it is truncated with a marker.
pub fn shrink_output(
    content: String,
    max_chars: usize,
    library_dir: Option<&Path>,
    id: &str,
) -> String {
    let (head, cut) = truncate_chars(&content, max_chars);
    if !cut {
        return content;
    }
    let total = content.chars().count();
    if let Some(dir) = library_dir {
        let path = result_path(dir, id);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, &content));
        match written {
            Ok(()) => {
                let (preview, _) = truncate_chars(head, max_chars.min(1000));
                return format!(
                    "[output of {total} characters saved to `{}`; read it with read_file. first characters:]\n{preview}",
                    path.display()
                );
            }
            Err(err) => tracing::warn!(%err, path = %path.display(), "cannot persist tool result"),
        }
    }
    format!("{head}\n[truncated: {total} characters, {max_chars} shown]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_is_char_safe() {
        assert_eq!(truncate_chars("héllo", 2), ("hé", true));
        assert_eq!(truncate_chars("hé", 2), ("hé", false));
        assert_eq!(safe_file_stem("../../etc/x"), "______etc_x");
        assert_eq!(safe_file_stem(""), "call");
    }

    #[test]
    fn persists_over_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x".repeat(50);
        let out = shrink_output(big.clone(), 10, Some(dir.path()), "c/1");
        let path = dir.path().join("tool-results/c_1.txt");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), big);
        assert!(out.contains("c_1.txt"));
        assert!(out.len() < big.len() + 200);
        let out = shrink_output(big, 10, None, "c");
        assert!(out.starts_with("xxxxxxxxxx\n[truncated"));
        assert_eq!(shrink_output("short".into(), 10, None, "c"), "short");
    }
}
