//! Codex's `apply_patch` envelope, read for the paths it writes.
//!
//! Codex sends file edits as one text whose paths live inside it:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path/new.txt
//! +line
//! *** Delete File: path/old.txt
//! *** Update File: src/app.py
//! *** Move to: src/main.py
//! @@ def f():
//! -    pass
//! +    return 1
//! *** End of File
//! *** End Patch
//! ```
//!
//! A guard must judge every path the patch touches, so this parser follows the grammar Codex's
//! own parser applies (which lines are trimmed, where a hunk ends, which header follows which)
//! rather than grepping for `***` lines: a path is only reported when Codex would read the same
//! line as the same header. Where Codex is lenient in a way that could make the two readings
//! differ, this parser refuses instead, and the caller denies. The contents of hunks are
//! checked for shape only; they are never applied here.
//!
//! Accepted wrappers:
//! - the bare patch text (surrounding whitespace ignored, as Codex does);
//! - Codex's lenient heredoc form: a first line `<<EOF`, `<<'EOF'` or `<<"EOF"`, a last line
//!   ending in `EOF`, the patch between;
//! - the shell form `apply_patch <<'EOF'` (or `applypatch`), the patch, then the delimiter line.
//!   With an unquoted delimiter the shell expands `$`, backticks and `\` inside the body, so
//!   the text on disk would differ from the text judged: such a body is refused. `<<-` (tab
//!   stripping) and anything before `apply_patch` (a `cd dir &&` changes what relative paths
//!   mean) or after the delimiter line are refused too.
//!
//! Pure: no I/O, no path resolution. Paths come back exactly as written (relative paths are
//! relative to the caller's cwd; absolute paths are kept absolute).

use std::fmt;

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File: ";
const DELETE_FILE: &str = "*** Delete File: ";
const UPDATE_FILE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";
const CONTEXT_EMPTY: &str = "@@";
const CONTEXT: &str = "@@ ";

/// A parsed patch: its file operations, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Every `Add File`, `Delete File` and `Update File` section, in the order written.
    pub ops: Vec<PatchOp>,
}

/// One file section of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOp {
    /// `*** Add File: path`: creates (or overwrites) `path`.
    Add {
        /// The path as written.
        path: String,
    },
    /// `*** Delete File: path`: removes `path`.
    Delete {
        /// The path as written.
        path: String,
    },
    /// `*** Update File: path`, optionally `*** Move to: move_to`: changes `path`, and when
    /// moved, writes `move_to` and removes `path`.
    Update {
        /// The path as written.
        path: String,
        /// The new path of a rename.
        move_to: Option<String>,
    },
}

impl PatchOp {
    /// The paths this operation writes: the file itself, plus the target of a move.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        let (first, second) = match self {
            PatchOp::Add { path } | PatchOp::Delete { path } => (path.as_str(), None),
            PatchOp::Update { path, move_to } => (path.as_str(), move_to.as_deref()),
        };
        std::iter::once(first).chain(second)
    }
}

impl Patch {
    /// Every path the patch creates, changes, deletes or moves to or from, in order of first
    /// appearance, each once. All of them are writes.
    pub fn written_paths(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for path in self.ops.iter().flat_map(PatchOp::paths) {
            if !out.contains(&path) {
                out.push(path);
            }
        }
        out
    }
}

impl fmt::Display for PatchOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchOp::Add { path } => write!(f, "add `{path}`"),
            PatchOp::Delete { path } => write!(f, "delete `{path}`"),
            PatchOp::Update {
                path,
                move_to: None,
            } => write!(f, "update `{path}`"),
            PatchOp::Update {
                path,
                move_to: Some(to),
            } => write!(f, "move `{path}` to `{to}`"),
        }
    }
}

/// Why a text is not a patch this parser vouches for. Line numbers are 1-based, counted in the
/// patch text after any heredoc wrapper is removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The first line is not `*** Begin Patch`.
    #[error("the first line of the patch must be `*** Begin Patch`")]
    MissingBegin,
    /// The last line is not `*** End Patch`.
    #[error("the last line of the patch must be `*** End Patch`")]
    MissingEnd,
    /// A line where a file section must start is not `*** Add File:`, `*** Delete File:` or
    /// `*** Update File:`.
    #[error(
        "line {line}: `{text}` is not a file header (`*** Add File: p`, `*** Delete File: p`, `*** Update File: p`)"
    )]
    BadHeader {
        /// The line number.
        line: usize,
        /// The offending line.
        text: String,
    },
    /// A header names an empty path.
    #[error("line {line}: the header names an empty path")]
    EmptyPath {
        /// The line number.
        line: usize,
    },
    /// A path contains a NUL byte.
    #[error("line {line}: the path contains a NUL byte")]
    NulInPath {
        /// The line number.
        line: usize,
    },
    /// An `Update File` section has no change.
    #[error("line {line}: the update of `{path}` has no change")]
    EmptyUpdate {
        /// The line number of its header.
        line: usize,
        /// The path.
        path: String,
    },
    /// A line inside an update is not context (` `), removal (`-`), addition (`+`), `@@` or
    /// `*** End of File`.
    #[error("line {line}: unexpected line in an update: `{text}`")]
    BadHunkLine {
        /// The line number.
        line: usize,
        /// The offending line.
        text: String,
    },
    /// The patch has no file section.
    #[error("the patch has no file operation")]
    NoOperations,
    /// The shell wrapper around the patch is not one this parser can read exactly.
    #[error("unsupported `apply_patch` shell form: {0}")]
    ShellForm(&'static str),
}

/// Parses an `apply_patch` text (bare, heredoc-wrapped, or the `apply_patch <<'EOF'` shell form).
///
/// # Errors
/// A [`PatchError`] for anything that is not a well-formed patch; a guard denies on any error.
///
/// ```
/// use agent_core::apply_patch::{parse, PatchOp};
///
/// let patch = parse("*** Begin Patch\n*** Delete File: old.txt\n*** End Patch\n").unwrap();
/// assert_eq!(patch.ops, vec![PatchOp::Delete { path: "old.txt".into() }]);
/// assert_eq!(patch.written_paths(), vec!["old.txt"]);
/// ```
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    if let Some(body) = shell_form_body(text)? {
        return parse_envelope(body);
    }
    parse_envelope(text)
}

/// Whether `text` (a tool input or a shell command) carries a patch or invokes `apply_patch`:
/// it holds `*** Begin Patch`, or the word `apply_patch` or `applypatch`. A front end that
/// judges shell commands parses such a command with [`parse`] and denies it when that fails,
/// so a patch cannot ride through a shell call unjudged.
///
/// ```
/// use agent_core::apply_patch::mentions_patch;
///
/// assert!(mentions_patch("cd src && apply_patch <<'EOF'\n*** Begin Patch\n"));
/// assert!(!mentions_patch("git apply fix.patch"));
/// ```
pub fn mentions_patch(text: &str) -> bool {
    let is_word_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.contains(BEGIN_PATCH)
        || ["apply_patch", "applypatch"].iter().any(|word| {
            text.match_indices(word).any(|(at, _)| {
                let before = text.get(..at).and_then(|t| t.chars().next_back());
                let after = text.get(at + word.len()..).and_then(|t| t.chars().next());
                !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char)
            })
        })
}

/// The body of `apply_patch <<DELIM ... DELIM`, `None` when `text` does not invoke
/// `apply_patch` on its first line.
fn shell_form_body(text: &str) -> Result<Option<&str>, PatchError> {
    let trimmed = text.trim_start();
    let (first, rest) = trimmed.split_once('\n').unwrap_or((trimmed, ""));
    let first = first.trim();
    let Some(after) = first
        .strip_prefix("apply_patch")
        .or_else(|| first.strip_prefix("applypatch"))
    else {
        if !first.starts_with(BEGIN_PATCH) && !first.starts_with("<<") && mentions_patch(first) {
            return Err(PatchError::ShellForm(
                "a command before `apply_patch` (such as `cd dir &&`) changes what its paths mean; call apply_patch alone",
            ));
        }
        return Ok(None);
    };
    if !after.starts_with(|c: char| c.is_whitespace() || c == '<') {
        // `apply_patchx ...` is another command, not ours to read.
        return Ok(None);
    }
    let redirect = after.trim_start();
    let Some(delim) = redirect.strip_prefix("<<") else {
        return Err(PatchError::ShellForm(
            "the patch must come as a heredoc (`apply_patch <<'EOF'`)",
        ));
    };
    if delim.starts_with('-') {
        return Err(PatchError::ShellForm(
            "`<<-` strips tabs from the patch; use `<<'EOF'`",
        ));
    }
    let delim = delim.trim_start();
    let (word, quoted) =
        if let Some(inner) = delim.strip_prefix('\'').and_then(|d| d.strip_suffix('\'')) {
            (inner, true)
        } else if let Some(inner) = delim.strip_prefix('"').and_then(|d| d.strip_suffix('"')) {
            (inner, true)
        } else {
            (delim, false)
        };
    if word.is_empty() || !word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(PatchError::ShellForm(
            "the heredoc delimiter must be a plain word and nothing may follow it on the line",
        ));
    }
    let mut body_end = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        if content == word {
            body_end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((end, after_delim)) = body_end else {
        return Err(PatchError::ShellForm("the heredoc is not terminated"));
    };
    let body = rest.get(..end).unwrap_or("");
    let tail = rest.get(after_delim..).unwrap_or("");
    if !tail.trim().is_empty() {
        return Err(PatchError::ShellForm(
            "nothing may follow the heredoc's closing delimiter",
        ));
    }
    if !quoted && body.contains(['$', '`', '\\']) {
        return Err(PatchError::ShellForm(
            "an unquoted heredoc expands `$`, backticks and `\\` in the patch; quote the delimiter (`<<'EOF'`)",
        ));
    }
    Ok(Some(body))
}

/// The `*** Begin Patch` ... `*** End Patch` text, possibly in Codex's lenient heredoc wrapper.
fn parse_envelope(text: &str) -> Result<Patch, PatchError> {
    let lines: Vec<&str> = text.trim().lines().collect();
    match boundaries(&lines) {
        Ok(body) => parse_sections(body),
        Err(strict) => match lines.as_slice() {
            [first, inner @ .., last]
                if matches!(*first, "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
                    && last.ends_with("EOF")
                    && inner.len() >= 2 =>
            {
                parse_sections(boundaries(inner)?)
            }
            _ => Err(strict),
        },
    }
}

/// The lines between a `*** Begin Patch` first line and a `*** End Patch` last line.
fn boundaries<'a, 'b>(lines: &'a [&'b str]) -> Result<&'a [&'b str], PatchError> {
    let Some((first, rest)) = lines.split_first() else {
        return Err(PatchError::MissingBegin);
    };
    if first.trim() != BEGIN_PATCH {
        return Err(PatchError::MissingBegin);
    }
    match rest.split_last() {
        Some((last, body)) if last.trim() == END_PATCH => Ok(body),
        _ => Err(PatchError::MissingEnd),
    }
}

/// The file sections. `body` starts at line 2 of the patch.
fn parse_sections(body: &[&str]) -> Result<Patch, PatchError> {
    let mut ops = Vec::new();
    let mut rest = body;
    let mut line_no = 2;
    while let Some((header, after)) = rest.split_first() {
        let (op, used) = parse_section(header, after, line_no)?;
        ops.push(op);
        line_no += used;
        rest = rest.get(used..).unwrap_or(&[]);
    }
    if ops.is_empty() {
        return Err(PatchError::NoOperations);
    }
    Ok(Patch { ops })
}

/// One file section starting at `header`; returns it and the number of lines it spans.
fn parse_section(
    header: &str,
    after: &[&str],
    line: usize,
) -> Result<(PatchOp, usize), PatchError> {
    // Codex trims the header line (but not the `Move to` line, nor hunk lines).
    let trimmed = header.trim();
    if let Some(path) = trimmed.strip_prefix(ADD_FILE) {
        let path = check_path(path, line)?;
        let added = after.iter().take_while(|l| l.starts_with('+')).count();
        return Ok((PatchOp::Add { path }, 1 + added));
    }
    if let Some(path) = trimmed.strip_prefix(DELETE_FILE) {
        let path = check_path(path, line)?;
        return Ok((PatchOp::Delete { path }, 1));
    }
    let Some(path) = trimmed.strip_prefix(UPDATE_FILE) else {
        return Err(PatchError::BadHeader {
            line,
            text: trimmed.to_owned(),
        });
    };
    let path = check_path(path, line)?;
    let mut used = 1;
    let mut rest = after;
    let mut move_to = None;
    if let Some((next, tail)) = rest.split_first()
        && let Some(to) = next.strip_prefix(MOVE_TO)
    {
        move_to = Some(check_path(to, line + 1)?);
        used += 1;
        rest = tail;
    }
    let mut chunks = 0;
    while let Some(next) = rest.first() {
        if next.trim().is_empty() {
            used += 1;
            rest = rest.get(1..).unwrap_or(&[]);
            continue;
        }
        if next.starts_with('*') {
            break;
        }
        let n = parse_chunk(rest, line + used, chunks == 0)?;
        chunks += 1;
        used += n;
        rest = rest.get(n..).unwrap_or(&[]);
    }
    if chunks == 0 {
        return Err(PatchError::EmptyUpdate { line, path });
    }
    Ok((PatchOp::Update { path, move_to }, used))
}

/// One change chunk (`@@ ...` then ` `/`-`/`+` lines); returns the number of lines it spans.
fn parse_chunk(lines: &[&str], line: usize, first: bool) -> Result<usize, PatchError> {
    let start = match lines.first() {
        Some(&l) if l == CONTEXT_EMPTY || l.starts_with(CONTEXT) => 1,
        Some(l) if !first => {
            return Err(PatchError::BadHunkLine {
                line,
                text: (*l).to_owned(),
            });
        }
        _ => 0,
    };
    let mut changed = 0;
    for l in lines.iter().skip(start) {
        if *l == END_OF_FILE {
            if changed == 0 {
                break;
            }
            return Ok(start + changed + 1);
        }
        match l.chars().next() {
            None | Some(' ' | '+' | '-') => changed += 1,
            Some(_) if changed > 0 => break,
            Some(_) => {
                return Err(PatchError::BadHunkLine {
                    line: line + start,
                    text: (*l).to_owned(),
                });
            }
        }
    }
    if changed == 0 {
        return Err(PatchError::BadHunkLine {
            line: line + start,
            text: lines
                .get(start)
                .map(|l| (*l).to_owned())
                .unwrap_or_default(),
        });
    }
    Ok(start + changed)
}

fn check_path(path: &str, line: usize) -> Result<String, PatchError> {
    if path.trim().is_empty() {
        return Err(PatchError::EmptyPath { line });
    }
    if path.contains('\0') {
        return Err(PatchError::NulInPath { line });
    }
    Ok(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn add(p: &str) -> PatchOp {
        PatchOp::Add { path: p.into() }
    }
    fn delete(p: &str) -> PatchOp {
        PatchOp::Delete { path: p.into() }
    }
    fn update(p: &str, to: Option<&str>) -> PatchOp {
        PatchOp::Update {
            path: p.into(),
            move_to: to.map(Into::into),
        }
    }

    const FULL: &str = "*** Begin Patch
*** Add File: path/add.py
+abc
+def
*** Delete File: path/delete.py
*** Update File: path/update.py
*** Move to: path/update2.py
@@ def f():
-    pass
+    return 123
*** End Patch
";

    #[test]
    fn every_header_kind() {
        let patch = parse(FULL).unwrap();
        assert_eq!(
            patch.ops,
            vec![
                add("path/add.py"),
                delete("path/delete.py"),
                update("path/update.py", Some("path/update2.py")),
            ]
        );
        assert_eq!(
            patch.written_paths(),
            vec![
                "path/add.py",
                "path/delete.py",
                "path/update.py",
                "path/update2.py"
            ]
        );
    }

    #[test]
    fn add_file_with_no_lines_is_an_empty_file() {
        let patch = parse("*** Begin Patch\n*** Add File: empty.txt\n*** End Patch").unwrap();
        assert_eq!(patch.ops, vec![add("empty.txt")]);
    }

    #[test]
    fn update_without_context_header_then_another_section() {
        let text = "*** Begin Patch\n*** Update File: a.py\n import foo\n+bar\n*** Add File: b.py\n+x\n*** End Patch";
        assert_eq!(
            parse(text).unwrap().ops,
            vec![update("a.py", None), add("b.py")]
        );
    }

    #[test]
    fn end_of_file_marker_and_several_chunks() {
        let text = "*** Begin Patch
*** Update File: a.rs
@@ fn one()
-1
+2
@@ fn two()
-3
+4
*** End of File

*** Delete File: b.rs
*** End Patch";
        assert_eq!(
            parse(text).unwrap().ops,
            vec![update("a.rs", None), delete("b.rs")]
        );
    }

    #[test]
    fn absolute_and_parent_paths_are_returned_as_written() {
        let text = "*** Begin Patch\n*** Add File: /etc/cron.d/x\n+* * * * * root sh\n*** Update File: ../outside.txt\n@@\n-a\n+b\n*** End Patch";
        assert_eq!(
            parse(text).unwrap().written_paths(),
            vec!["/etc/cron.d/x", "../outside.txt"]
        );
    }

    #[test]
    fn markers_tolerate_surrounding_whitespace_like_codex() {
        let text = "  *** Begin Patch \n   *** Delete File: gone.txt  \n *** End Patch  \n";
        assert_eq!(parse(text).unwrap().ops, vec![delete("gone.txt")]);
    }

    #[test]
    fn a_header_after_added_lines_is_read_even_when_indented() {
        // Codex trims a section header line, so an indented header after `+` lines is a header.
        let text = "*** Begin Patch\n*** Add File: a\n+x\n   *** Delete File: /home/u/.bashrc\n*** End Patch";
        assert_eq!(
            parse(text).unwrap().written_paths(),
            vec!["a", "/home/u/.bashrc"]
        );
    }

    #[test]
    fn an_indented_move_line_is_context_not_a_move() {
        // Codex matches `*** Move to:` on the untrimmed line; indented, it is a context line.
        let text = "*** Begin Patch\n*** Update File: a\n *** Move to: b\n+c\n*** End Patch";
        assert_eq!(parse(text).unwrap().ops, vec![update("a", None)]);
    }

    #[test]
    fn lenient_heredoc_wrapper() {
        let text = "<<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\nEOF\n";
        assert_eq!(parse(text).unwrap().ops, vec![add("a.txt")]);
        let text = "<<EOF\n*** Begin Patch\n*** Delete File: b\n*** End Patch\nEOF";
        assert_eq!(parse(text).unwrap().ops, vec![delete("b")]);
    }

    #[test]
    fn shell_form_with_quoted_delimiter() {
        let text = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/$x.rs\n@@\n-a\n+b\n*** End Patch\nPATCH\n";
        assert_eq!(parse(text).unwrap().ops, vec![update("src/$x.rs", None)]);
        let text = "applypatch <<\"EOF\"\n*** Begin Patch\n*** Delete File: c\n*** End Patch\nEOF";
        assert_eq!(parse(text).unwrap().ops, vec![delete("c")]);
    }

    #[test]
    fn shell_form_unquoted_without_expansions_is_read() {
        let text = "apply_patch <<EOF\n*** Begin Patch\n*** Delete File: c\n*** End Patch\nEOF\n";
        assert_eq!(parse(text).unwrap().ops, vec![delete("c")]);
    }

    #[test]
    fn shell_form_refusals() {
        let cases = [
            "apply_patch <<EOF\n*** Begin Patch\n*** Add File: $HOME/.bashrc\n+x\n*** End Patch\nEOF",
            "apply_patch <<EOF\n*** Begin Patch\n*** Add File: `id`\n+x\n*** End Patch\nEOF",
            "apply_patch <<-'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF",
            "apply_patch <<'EOF' && rm -rf ~\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF",
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\nrm -rf ~",
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n",
            "apply_patch '*** Begin Patch'",
        ];
        for case in cases {
            assert!(
                matches!(parse(case), Err(PatchError::ShellForm(_))),
                "{case:?} -> {:?}",
                parse(case)
            );
        }
    }

    #[test]
    fn a_command_before_apply_patch_is_refused() {
        for text in [
            "cd /etc && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: passwd\n+x\n*** End Patch\nEOF",
            "bash -lc \"apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n\"",
        ] {
            assert!(
                matches!(parse(text), Err(PatchError::ShellForm(_))),
                "{text:?} -> {:?}",
                parse(text)
            );
        }
    }

    #[test]
    fn mentions_patch_finds_the_word_and_the_marker() {
        assert!(mentions_patch("apply_patch <<'EOF'"));
        assert!(mentions_patch("x; applypatch"));
        assert!(mentions_patch("printf '*** Begin Patch' | tool"));
        assert!(!mentions_patch("my_apply_patches run"));
        assert!(!mentions_patch("git apply x.diff"));
        assert!(!mentions_patch(""));
    }

    #[test]
    fn malformed_patches_are_typed_errors() {
        assert_eq!(parse(""), Err(PatchError::MissingBegin));
        assert_eq!(parse("hello"), Err(PatchError::MissingBegin));
        assert_eq!(
            parse("*** Begin Patch\n*** Delete File: a"),
            Err(PatchError::MissingEnd)
        );
        assert_eq!(
            parse("*** Begin Patch\n*** End Patch"),
            Err(PatchError::NoOperations)
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Rename File: a\n*** End Patch"),
            Err(PatchError::BadHeader {
                line: 2,
                text: "*** Rename File: a".into()
            })
        );
        // A header line is trimmed, so an empty path leaves no header at all.
        assert_eq!(
            parse("*** Begin Patch\n*** Delete File: \n*** End Patch"),
            Err(PatchError::BadHeader {
                line: 2,
                text: "*** Delete File:".into()
            })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Update File: a\n*** Move to:   \n@@\n+x\n*** End Patch"),
            Err(PatchError::EmptyPath { line: 3 })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Add File:    \n*** End Patch"),
            Err(PatchError::BadHeader {
                line: 2,
                text: "*** Add File:".into()
            })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Delete File: a\0b\n*** End Patch"),
            Err(PatchError::NulInPath { line: 2 })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Update File: a\n*** Move to: b\0\n@@\n+x\n*** End Patch"),
            Err(PatchError::NulInPath { line: 3 })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Update File: a\n*** End Patch"),
            Err(PatchError::EmptyUpdate {
                line: 2,
                path: "a".into()
            })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Update File: a\nnot a diff line\n*** End Patch"),
            Err(PatchError::BadHunkLine {
                line: 3,
                text: "not a diff line".into()
            })
        );
        // A second chunk must start with `@@`.
        assert!(matches!(
            parse(
                "*** Begin Patch\n*** Update File: a\n@@\n+x\n*** End of File\nstray\n*** End Patch"
            ),
            Err(PatchError::BadHunkLine { .. })
        ));
        // `*** End of File` with no change before it.
        assert!(matches!(
            parse("*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch"),
            Err(PatchError::BadHunkLine { .. })
        ));
        // Text after a Delete header is no header.
        assert!(matches!(
            parse("*** Begin Patch\n*** Delete File: a\n+x\n*** End Patch"),
            Err(PatchError::BadHeader { .. })
        ));
        // An End Patch in the middle leaves the rest unread: refused.
        assert!(matches!(
            parse(
                "*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b\n*** End Patch"
            ),
            Err(PatchError::BadHeader { .. })
        ));
    }

    #[test]
    fn written_paths_lists_each_path_once() {
        let patch = Patch {
            ops: vec![add("a"), update("a", Some("b")), delete("b")],
        };
        assert_eq!(patch.written_paths(), vec!["a", "b"]);
    }

    #[test]
    fn crlf_line_endings() {
        let text = "*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** End Patch\r\n";
        assert_eq!(parse(text).unwrap().ops, vec![add("a")]);
    }

    fn path_strategy() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_./-]{1,20}( [a-z]{1,3})?"
    }

    fn op_strategy() -> impl Strategy<Value = PatchOp> {
        prop_oneof![
            path_strategy().prop_map(|path| PatchOp::Add { path }),
            path_strategy().prop_map(|path| PatchOp::Delete { path }),
            (path_strategy(), proptest::option::of(path_strategy()))
                .prop_map(|(path, move_to)| PatchOp::Update { path, move_to }),
        ]
    }

    fn render(ops: &[PatchOp], body: &str) -> String {
        let mut out = String::from("*** Begin Patch\n");
        for op in ops {
            match op {
                PatchOp::Add { path } => {
                    out.push_str(&format!("*** Add File: {path}\n"));
                    for l in body.lines() {
                        out.push_str(&format!("+{l}\n"));
                    }
                }
                PatchOp::Delete { path } => out.push_str(&format!("*** Delete File: {path}\n")),
                PatchOp::Update { path, move_to } => {
                    out.push_str(&format!("*** Update File: {path}\n"));
                    if let Some(to) = move_to {
                        out.push_str(&format!("*** Move to: {to}\n"));
                    }
                    out.push_str("@@\n");
                    for l in body.lines() {
                        out.push_str(&format!("-{l}\n+{l}!\n"));
                    }
                    out.push_str(" ctx\n");
                }
            }
        }
        out.push_str("*** End Patch\n");
        out
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC*") {
            let _ = parse(&text);
        }

        #[test]
        fn never_panics_on_patch_like_lines(lines in proptest::collection::vec(
            prop_oneof![
                Just("*** Begin Patch".to_owned()),
                Just("*** End Patch".to_owned()),
                Just("*** End of File".to_owned()),
                Just("@@".to_owned()),
                Just("EOF".to_owned()),
                Just("<<'EOF'".to_owned()),
                Just("apply_patch <<'EOF'".to_owned()),
                "\\*\\*\\* (Add|Delete|Update) File: [a-z/\\x00 ]{0,5}",
                "\\*\\*\\* Move to: [a-z/ ]{0,5}",
                "[ +\\-@*]{0,3}[a-z]{0,4}",
            ],
            0..12,
        )) {
            let _ = parse(&lines.join("\n"));
        }

        /// Every header written is read back, in order, with its exact path.
        #[test]
        fn rendered_patches_round_trip(
            ops in proptest::collection::vec(op_strategy(), 1..6),
            body in "[a-z ]{1,8}(\n[a-z ]{1,8}){0,2}",
        ) {
            let text = render(&ops, &body);
            prop_assert_eq!(parse(&text), Ok(Patch { ops: ops.clone() }));
            let wrapped = format!("apply_patch <<'EOF'\n{text}EOF\n");
            prop_assert_eq!(parse(&wrapped), Ok(Patch { ops }));
        }

        /// A path reported is always one that appears verbatim on some line of the text.
        #[test]
        fn reported_paths_appear_in_the_text(
            ops in proptest::collection::vec(op_strategy(), 1..4),
            noise in "[ +\\-*@a-z]{0,6}",
            at in 0usize..8,
        ) {
            let mut lines: Vec<String> = render(&ops, "x").lines().map(str::to_owned).collect();
            let at = at.min(lines.len());
            lines.insert(at, noise);
            let text = lines.join("\n");
            if let Ok(patch) = parse(&text) {
                for path in patch.written_paths() {
                    prop_assert!(text.contains(path));
                    prop_assert!(!path.trim().is_empty());
                }
            }
        }
    }
}
