//! Limits checked before any text reaches the shell parser, and the guard around the parser.
//!
//! brush-parser is a recursive-descent (PEG) parser: its stack use grows with the nesting of
//! the text, some shapes take exponential time (nested brace words), and a few inputs make it
//! panic (an fd number past `i32`, number overflows in brace sequences and `~+N`). A panic or a
//! stack overflow in the guard is a crash, and a crashed hook lets the call run. So:
//!
//! - every text is measured by [`scan`] (one pass, no recursion) and refused before parsing
//!   when it is longer, more deeply nested or holds more commands than the caps below;
//! - every call into the parser goes through [`guarded`] (`catch_unwind`): a panic becomes an
//!   error, hence a deny;
//! - the analysis of a text whose nesting could exceed [`INLINE_NESTING`] runs on a thread with
//!   a [`STACK_SIZE`] stack, which holds [`MAX_NESTING`] levels many times over (measured in
//!   debug builds, the hungriest: about 50 KiB per level).
//!
//! Architecture Invariant: no text reaches brush-parser without passing [`scan`]'s caps, and
//! no parser call happens outside [`guarded`].

use std::panic::{AssertUnwindSafe, catch_unwind};

/// Commands longer than this are denied unread: nobody reviews them either.
pub(crate) const MAX_COMMAND_LEN: usize = 64 * 1024;
/// Nesting (parentheses, braces, substitutions, `if`/`case`/loops, summed across nested
/// command strings) deeper than this is denied. Real commands stay far below it.
pub(crate) const MAX_NESTING: usize = 48;
/// Texts whose every opening character and keyword together stay at or under this are
/// analysed on the caller's thread: that many levels fit in any thread's stack (under
/// 1 MiB in a debug build). Anything more runs on a thread of [`STACK_SIZE`].
pub(crate) const INLINE_NESTING: usize = 12;
/// The stack of the analysis thread: [`MAX_NESTING`] levels need under 3 MiB in a debug
/// build; the margin covers nested command strings and the walker's own recursion.
pub(crate) const STACK_SIZE: usize = 64 * 1024 * 1024;
/// Commands (separated by `;`, `&`, `|`, newlines) in one text.
pub(crate) const MAX_COMMANDS: usize = 1000;
/// Braces nested inside one word: brush-parser's brace-expansion parser takes time
/// exponential in this depth.
pub(crate) const MAX_BRACE_NESTING: usize = 6;
/// Braces in one word.
pub(crate) const MAX_BRACES_PER_WORD: usize = 64;
/// A redirection's fd number with more digits than this is past `i32`: brush-parser panics
/// on it, and bash refuses it.
const MAX_FD_DIGITS: usize = 9;

/// Finding codes that mean "this text was not (fully) parsed": a command with one of them
/// cannot be split into simple commands, so no allow rule can match it.
pub(crate) const UNPARSABLE: &[&str] = &[
    "parse_error",
    "too_long",
    "too_deep",
    "too_many_commands",
    "fd_out_of_range",
    "brace_limit",
    "analysis_failed",
];

/// Why a text is refused before parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub code: &'static str,
    pub message: String,
}

/// What one pass over a text measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The deepest nesting seen by a quote-aware scan (closers only count when they match).
    pub nesting: usize,
    /// Every opening character and compound keyword anywhere, quoted or not: a bound on the
    /// parser's nesting that no quoting trick can lower.
    pub opens: usize,
    /// Commands, counted by their separators outside quotes and here-documents.
    pub commands: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Paren,
    Arith,
    Brace,
    DoubleQuote,
    Backtick,
    If,
    Case,
    Loop,
}

/// Measures `text` in one pass and checks the caps that do not depend on the caller's
/// nesting so far.
pub(crate) fn scan(text: &str) -> Result<Shape, Refusal> {
    if text.len() > MAX_COMMAND_LEN {
        return Err(Refusal {
            code: "too_long",
            message: format!(
                "the command is {} bytes long; the limit is {MAX_COMMAND_LEN}",
                text.len()
            ),
        });
    }
    let b = text.as_bytes();
    let mut shape = Shape {
        commands: 1,
        ..Shape::default()
    };
    let mut stack: Vec<Frame> = Vec::new();
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut i = 0;
    let mut digits = 0usize;
    // The last byte that was not a blank, for "command position" and comment detection.
    let mut prev_sig: u8 = b'\n';
    let mut prev: u8 = b'\n';
    // A quote or here-document that never ends: the scan may disagree with the parser about
    // what is code, so the nesting falls back to the bound no quoting can lower.
    let mut unsure = false;
    while let Some(&c) = b.get(i) {
        let in_dq = stack.last() == Some(&Frame::DoubleQuote);
        // fd numbers: a run of digits directly before `<` or `>`.
        if c.is_ascii_digit() {
            digits += 1;
        } else {
            if matches!(c, b'<' | b'>') && digits > MAX_FD_DIGITS {
                return Err(Refusal {
                    code: "fd_out_of_range",
                    message: format!(
                        "a redirection names a file descriptor with {digits} digits; bash refuses fd numbers past 2^31"
                    ),
                });
            }
            digits = 0;
        }
        let mut next = i + 1;
        match c {
            b'\\' => next = i + 2,
            b'"' if in_dq => {
                stack.pop();
            }
            b'"' => stack.push(Frame::DoubleQuote),
            b'$' if b.get(i + 1) == Some(&b'(') => {
                let arith = b.get(i + 2) == Some(&b'(');
                stack.push(if arith { Frame::Arith } else { Frame::Paren });
                if arith {
                    stack.push(Frame::Arith);
                    next = i + 3;
                } else {
                    next = i + 2;
                }
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                stack.push(Frame::Brace);
                next = i + 2;
            }
            b'`' if stack.last() == Some(&Frame::Backtick) => {
                stack.pop();
            }
            b'`' => stack.push(Frame::Backtick),
            _ if in_dq => {}
            // Inside `"${x:-'a'}"` single quotes are ordinary characters.
            b'\'' if !quotes_literal(&stack) => {}
            b'\'' => {
                // `$'..'` honours backslash escapes; plain single quotes do not.
                let ansi = prev == b'$';
                let mut j = i + 1;
                while let Some(&q) = b.get(j) {
                    if q == b'\\' && ansi {
                        j += 2;
                        continue;
                    }
                    if q == b'\'' {
                        break;
                    }
                    j += 1;
                }
                unsure |= j >= b.len();
                next = j + 1;
            }
            b'#' if matches!(prev, b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(') => {
                let mut j = i;
                while b.get(j).is_some_and(|&q| q != b'\n') {
                    j += 1;
                }
                next = j;
            }
            b'(' => {
                let arith = b.get(i + 1) == Some(&b'(');
                stack.push(if arith { Frame::Arith } else { Frame::Paren });
            }
            b')' if matches!(stack.last(), Some(Frame::Paren | Frame::Arith)) => {
                stack.pop();
            }
            b'{' => stack.push(Frame::Brace),
            b'}' if stack.last() == Some(&Frame::Brace) => {
                stack.pop();
            }
            b'<' if b.get(i + 1) == Some(&b'<')
                && b.get(i + 2) != Some(&b'<')
                && !stack.contains(&Frame::Arith) =>
            {
                let (tag, strip, end) = heredoc_tag(b, i + 2);
                if !tag.is_empty() {
                    heredocs.push((tag, strip));
                }
                next = end;
            }
            b'\n' => {
                shape.commands += 1;
                // Here-document bodies start on the next line: data, not code.
                let mut j = i + 1;
                for (tag, strip) in heredocs.drain(..) {
                    let (end, found) = skip_heredoc(b, j, &tag, strip);
                    unsure |= !found;
                    j = end;
                }
                next = j;
            }
            b';' | b'&' | b'|' => {
                shape.commands += 1;
                // `&&`, `||`, `;;`: one separator.
                if b.get(i + 1) == Some(&c) {
                    next = i + 2;
                }
            }
            _ if c.is_ascii_alphabetic() && !is_word_byte(prev) => {
                let mut j = i;
                while b.get(j).is_some_and(|&q| is_word_byte(q)) {
                    j += 1;
                }
                let word = b.get(i..j).unwrap_or_default();
                let command_position = matches!(
                    prev_sig,
                    b';' | b'\n' | b'&' | b'|' | b'(' | b')' | b'{' | b'}'
                );
                match word {
                    b"if" => stack.push(Frame::If),
                    b"case" => stack.push(Frame::Case),
                    b"while" | b"until" | b"for" | b"select" => stack.push(Frame::Loop),
                    b"fi" if command_position => pop_kw(&mut stack, Frame::If),
                    b"esac" if command_position => pop_kw(&mut stack, Frame::Case),
                    b"done" if command_position => pop_kw(&mut stack, Frame::Loop),
                    _ => {}
                }
                next = j;
            }
            _ => {}
        }
        shape.nesting = shape.nesting.max(stack.len());
        if shape.commands > MAX_COMMANDS {
            return Err(Refusal {
                code: "too_many_commands",
                message: format!(
                    "the command holds more than {MAX_COMMANDS} commands; split it into reviewable steps"
                ),
            });
        }
        if shape.nesting > MAX_NESTING {
            return Err(too_deep(shape.nesting));
        }
        // What the step ended on: a word's last byte, not its first.
        prev = b
            .get(next.min(b.len()).saturating_sub(1))
            .copied()
            .unwrap_or(c);
        if !matches!(prev, b' ' | b'\t') {
            prev_sig = prev;
        }
        i = next;
    }
    shape.opens = opens(text);
    if unsure {
        shape.nesting = shape.nesting.max(shape.opens);
    }
    if shape.nesting > MAX_NESTING {
        return Err(too_deep(shape.nesting));
    }
    // Last, so that a text over a cap is refused without a second pass over all of it.
    if text.contains("<<") && empty_heredoc_delimiter(b) {
        return Err(Refusal {
            code: "parse_error",
            message: "a here-document with an empty or missing delimiter (`<<''`) cannot be reviewed; name a delimiter such as `<<'EOF'`".to_owned(),
        });
    }
    Ok(shape)
}

/// Every opening character and compound keyword, wherever it is.
fn opens(text: &str) -> usize {
    let chars = text
        .bytes()
        .filter(|c| matches!(c, b'(' | b'{' | b'`' | b'['))
        .count();
    let keywords = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| matches!(*w, "if" | "case" | "while" | "until" | "for" | "select"))
        .count();
    chars + keywords
}

/// Whether a `'` here starts a quoted string (it does not inside `"${..}"`).
fn quotes_literal(stack: &[Frame]) -> bool {
    stack
        .iter()
        .rev()
        .find(|f| {
            matches!(
                f,
                Frame::DoubleQuote | Frame::Paren | Frame::Arith | Frame::Backtick
            )
        })
        .is_none_or(|f| *f != Frame::DoubleQuote)
}

fn pop_kw(stack: &mut Vec<Frame>, f: Frame) {
    if stack.last() == Some(&f) {
        stack.pop();
    }
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

pub(crate) fn too_deep(nesting: usize) -> Refusal {
    Refusal {
        code: "too_deep",
        message: format!(
            "the command nests {nesting} levels deep (parentheses, braces, substitutions, compound commands, nested command strings); the limit is {MAX_NESTING}"
        ),
    }
}

/// Reads a here-document tag after `<<`: returns the tag with quotes removed, whether `<<-`
/// strips leading tabs, and where the tag ends.
fn heredoc_tag(b: &[u8], mut i: usize) -> (String, bool, usize) {
    let strip = b.get(i) == Some(&b'-');
    if strip {
        i += 1;
    }
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    let mut tag = Vec::new();
    while let Some(&c) = b.get(i) {
        if matches!(
            c,
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
        ) {
            break;
        }
        if !matches!(c, b'\'' | b'"' | b'\\') {
            tag.push(c);
        }
        i += 1;
    }
    (String::from_utf8_lossy(&tag).into_owned(), strip, i)
}

/// Whether a here-document operator in `b` may have a delimiter brush-parser reads as empty:
/// its tokenizer then loops without end, allocating, when the text ends in the document
/// (`cat <<'' `). The delimiter it reads is the next token it cuts, and inside `$(..)` that
/// can be a run of blanks or a token cut inside a nested expansion (`<<  x`, `<< $( ..`), so
/// only a plain delimiter passes: after the operator at most one blank, then a word with a
/// character that survives unquoting and no `$`, backquote or leading `#`. Judged on the raw
/// text, quotes and comments ignored: where brush-parser sees an operator is not always where
/// this scan's model does (inside `$(..)` it keeps blanks, so a `#` after two blanks starts no
/// comment there). A quoted `<<` followed by text (`grep '<<' f`) passes; one that ends the
/// text (`echo '<<'`) is refused with the rest, as nobody needs it.
fn empty_heredoc_delimiter(b: &[u8]) -> bool {
    // Line continuations vanish before the tokenizer reads a delimiter.
    let joined: Vec<u8>;
    let b = if b.windows(2).any(|w| w == b"\\\n") {
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while let Some(&c) = b.get(i) {
            if c == b'\\' && b.get(i + 1) == Some(&b'\n') {
                i += 2;
            } else {
                out.push(c);
                i += 1;
            }
        }
        joined = out;
        joined.as_slice()
    } else {
        b
    };
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c != b'<' {
            i += 1;
            continue;
        }
        let start = i;
        while b.get(i) == Some(&b'<') {
            i += 1;
        }
        // Operators are cut greedily: three unescaped `<` are a here-string; any other run
        // of two or more may end in a here-document operator.
        let escaped = start > 0 && b.get(start - 1) == Some(&b'\\');
        if i - start < 2 || (i - start == 3 && !escaped) {
            continue;
        }
        if !plain_delimiter(b, i) {
            return true;
        }
    }
    false
}

/// Whether the here-document delimiter after the operator ending at `j` is plain (see
/// [`empty_heredoc_delimiter`]).
fn plain_delimiter(b: &[u8], mut j: usize) -> bool {
    if b.get(j) == Some(&b'-') {
        j += 1;
    }
    match b.get(j) {
        Some(b' ' | b'\t') if matches!(b.get(j + 1), Some(b' ' | b'\t')) => return false,
        Some(b' ' | b'\t') => j += 1,
        _ => {}
    }
    if b.get(j) == Some(&b'#') {
        return false;
    }
    let start = j;
    loop {
        match b.get(j) {
            None | Some(b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')') => {
                break;
            }
            Some(b'$' | b'`') => return false,
            Some(b'\\') => j += 2,
            Some(&q @ (b'\'' | b'"')) => {
                j += 1;
                while let Some(&c) = b.get(j) {
                    j += 1;
                    if c == q {
                        break;
                    }
                    if q == b'"' && matches!(c, b'$' | b'`') {
                        return false;
                    }
                    if q == b'"' && c == b'\\' {
                        j += 1;
                    }
                }
            }
            Some(_) => j += 1,
        }
    }
    // As brush-parser reads it: white space trimmed off the front, then every quote
    // character dropped, wherever it stands, and a backslash keeping only what follows.
    let word = b
        .get(start..j.min(b.len()))
        .unwrap_or_default()
        .trim_ascii_start();
    let mut escaped = false;
    word.iter().any(|&c| {
        if escaped {
            escaped = false;
            return true;
        }
        escaped = c == b'\\';
        !matches!(c, b'\\' | b'\'' | b'"')
    })
}

/// Skips here-document lines from `i` up to and including the line that is `tag`; says
/// whether that line was found.
fn skip_heredoc(b: &[u8], mut i: usize, tag: &str, strip: bool) -> (usize, bool) {
    while i < b.len() {
        let end = b
            .get(i..)
            .and_then(|r| r.iter().position(|&c| c == b'\n'))
            .map_or(b.len(), |p| i + p);
        let line = b.get(i..end).unwrap_or_default();
        let line = if strip {
            let n = line.iter().take_while(|&&c| c == b'\t').count();
            line.get(n..).unwrap_or_default()
        } else {
            line
        };
        i = end + 1;
        if line == tag.as_bytes() {
            return (i.min(b.len()), true);
        }
    }
    (b.len(), false)
}

/// Refuses a word whose braces would make brace-expansion parsing explode.
pub(crate) fn check_braces(raw: &str) -> Result<(), Refusal> {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut count = 0usize;
    let mut single = false;
    for c in raw.bytes() {
        // Single-quoted text (an awk or jq program) is never brace-expanded.
        if c == b'\'' {
            single = !single;
        }
        if single {
            continue;
        }
        match c {
            b'{' => {
                depth += 1;
                count += 1;
                deepest = deepest.max(depth);
            }
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_BRACE_NESTING || count > MAX_BRACES_PER_WORD {
        return Err(Refusal {
            code: "brace_limit",
            message: format!(
                "a word nests braces {deepest} deep ({count} braces); the limits are {MAX_BRACE_NESTING} deep and {MAX_BRACES_PER_WORD} per word"
            ),
        });
    }
    Ok(())
}

/// A word with braces or a tilde and a run of digits past 64 bits.
pub(crate) fn overflowing_number(raw: &str) -> bool {
    if !raw.contains(['{', '~']) {
        return false;
    }
    let mut run = 0usize;
    for c in raw.bytes() {
        if c.is_ascii_digit() {
            run += 1;
            if run > 18 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// Runs a parser call, turning a panic into an error message.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".to_owned());
        format!("the shell parser failed on this text ({what})")
    })
}

/// Runs `f` on a thread whose stack holds [`MAX_NESTING`] levels; `None` if the thread could
/// not be started or died.
pub(crate) fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("bash-guard-analysis".to_owned())
            .stack_size(STACK_SIZE)
            .spawn_scoped(s, f)
            .ok()?
            .join()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_commands_measure_small() {
        let s = scan("if [ -f x ]; then echo \"$(cat x)\"; fi").unwrap();
        assert!(s.nesting <= 3, "{s:?}");
        assert_eq!(s.commands, 3);
    }

    #[test]
    fn quoted_closers_do_not_lower_the_nesting() {
        let deep = "( ".repeat(60) + "echo ')))))))))'" + &" )".repeat(60);
        assert_eq!(scan(&deep).unwrap_err().code, "too_deep");
        let kw = "if a; then echo fi; ".repeat(60);
        assert_eq!(scan(&kw).unwrap_err().code, "too_deep");
    }

    #[test]
    fn here_document_bodies_are_data() {
        let body = "{\n".repeat(500);
        let s = scan(&format!("cat > f.rs <<'EOF'\n{body}EOF\necho done")).unwrap();
        assert!(s.nesting <= 1, "{s:?}");
        assert!(s.opens >= 500);
    }

    #[test]
    fn caps_refuse_with_codes() {
        assert_eq!(
            scan(&"a".repeat(MAX_COMMAND_LEN + 1)).unwrap_err().code,
            "too_long"
        );
        assert_eq!(
            scan("echo 99999999999>x").unwrap_err().code,
            "fd_out_of_range"
        );
        assert!(scan("echo 2>x 123456789>y").is_ok());
        assert_eq!(
            scan(&"ls;".repeat(1200)).unwrap_err().code,
            "too_many_commands"
        );
        assert_eq!(
            check_braces(&"{".repeat(10)).unwrap_err().code,
            "brace_limit"
        );
        assert!(check_braces("{a,b}{c,d}${x}").is_ok());
        assert!(check_braces(&format!("'{}'", "{ {} }".repeat(40))).is_ok());
    }

    #[test]
    fn panics_become_errors() {
        let r: Result<(), String> = guarded(|| panic!("boom"));
        assert!(r.unwrap_err().contains("boom"));
    }
}
