//! brush-parser's token list for the everyday command text, cut directly: printable ASCII
//! words with single- and double-quoted parts, `$NAME` and `$(..)` over plain text, and the
//! operators `fastparse` handles. brush-parser's tokenizer reads the text one `char` at a time
//! through a `BufRead` and grows each token a character at a time (a third of analysing a
//! typical command); here each token is one slice of the text.
//!
//! On that subset every token brush-parser yields is the text between its positions, so the
//! tokens are equal if the cuts are. Anything whose token text or positions brush-parser
//! rewrites or tracks by state (backslashes, line continuations, backquotes, comments,
//! `$'..'`, `${..}`, `$((..))`, `$[..]`, nested quotes or operators in `$(..)`, extended
//! globs, here-documents, parentheses, other operators, non-ASCII or control characters)
//! returns `None`, and brush-parser's tokenizer runs as before. The equality is tested with
//! the parser's (`fuzz::check_fast_parse`).

use std::sync::Arc;

use brush_parser::{ParserOptions, SourcePosition, SourceSpan, Token};

/// brush-parser's operators outside `sh` mode; it extends an operator while the longer text
/// is still one of them.
const ALL_OPERATORS: &[&str] = &[
    "&", "&&", "(", ")", ";", ";;", "\n", "|", "||", "<", ">", ">|", "<<", ">>", "<&", ">&", "<<-",
    "<>", "<<<", "&>", "&>>", ";;&", ";&", "|&",
];

/// The operators cut here: those `fastparse` handles (others change the tokenizer's state or
/// go to brush-parser anyway).
const OPERATORS: &[&str] = &[";", "&", "&&", "||", "|", "\n", "<", ">", ">>", "<&", ">&"];

/// `text` cut into brush-parser's tokens, or `None` outside the subset.
pub(crate) fn tokenize(text: &str, options: &ParserOptions) -> Option<Vec<Token>> {
    // `sh` mode has fewer operators, extended globs are switched by an option: mirror only
    // the defaults.
    if *options != ParserOptions::default() {
        return None;
    }
    let bytes = text.as_bytes();
    if !bytes
        .iter()
        .all(|&b| b == b'\t' || b == b'\n' || (0x20..0x7f).contains(&b))
    {
        return None;
    }
    let mut cursor = Cursor {
        bytes,
        pos: SourcePosition {
            index: 0,
            line: 1,
            column: 1,
        },
    };
    let mut tokens = Vec::with_capacity(bytes.len() / 6 + 1);
    let mut at = 0;
    loop {
        while matches!(bytes.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        let Some(&c) = bytes.get(at) else {
            return Some(tokens);
        };
        let start = at;
        let operator = match c {
            b'&' | b';' | b'|' | b'<' | b'>' | b'\n' => {
                at = operator_end(text, at)?;
                true
            }
            // `(` and `)` are operators this subset leaves out; `#` starts a comment.
            b'(' | b')' | b'#' => return None,
            _ => {
                at = word_end(bytes, at)?;
                false
            }
        };
        let value = text.get(start..at)?.to_owned();
        let span = cursor.span(start, at);
        tokens.push(if operator {
            Token::Operator(value, span)
        } else {
            Token::Word(value, span)
        });
    }
}

/// The end of the operator starting at `at`, if it is one `fastparse` handles.
fn operator_end(text: &str, at: usize) -> Option<usize> {
    let mut end = at + 1;
    while text
        .get(at..end + 1)
        .is_some_and(|longer| ALL_OPERATORS.contains(&longer))
    {
        end += 1;
    }
    OPERATORS.contains(&text.get(at..end)?).then_some(end)
}

/// The end of the word starting at `at`: the first unquoted blank or operator character.
fn word_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    let start = at;
    loop {
        let Some(&c) = bytes.get(at) else {
            return Some(at);
        };
        match c {
            b' ' | b'\t' | b'&' | b';' | b'|' | b'<' | b'>' | b'\n' => return Some(at),
            // An operator, or an extended glob after `@`, `!`, `?`, `+` or `*`.
            b'(' | b')' => return None,
            b'\\' | b'`' => return None,
            b'\'' => {
                // `$'..'` is ANSI-C quoting, with escapes of its own.
                if at > start && bytes.get(at - 1) == Some(&b'$') {
                    return None;
                }
                let len = bytes.get(at + 1..)?.iter().position(|&b| b == b'\'')?;
                at += len + 2;
            }
            b'"' => {
                at += 1;
                loop {
                    match *bytes.get(at)? {
                        b'"' => {
                            at += 1;
                            break;
                        }
                        b'\\' | b'`' => return None,
                        b'$' => at = dollar_end(bytes, at)?,
                        _ => at += 1,
                    }
                }
            }
            b'$' => at = dollar_end(bytes, at)?,
            _ => at += 1,
        }
    }
}

/// Past the `$` at `at`: past a `$(..)` of plain text, or just past the `$` when no
/// expansion with its own tokenizing starts there.
fn dollar_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at + 1) {
        Some(b'(') => {
            // brush-parser tokenizes the inside as commands and joins their text: on plain
            // words and spaces that is the text itself.
            let inner = at + 2;
            let len = bytes.get(inner..)?.iter().position(|&b| b == b')')?;
            let plain = bytes.get(inner..inner + len)?.iter().all(|&b| {
                b.is_ascii_alphanumeric()
                    || matches!(
                        b,
                        b' ' | b'-' | b'+' | b'%' | b'.' | b'/' | b'_' | b':' | b'=' | b',' | b'@'
                    )
            });
            plain.then_some(inner + len + 1)
        }
        Some(b'{' | b'[') => None,
        _ => Some(at + 1),
    }
}

/// Source positions as brush-parser counts them: per character, lines from 1, columns from 1.
struct Cursor<'t> {
    bytes: &'t [u8],
    pos: SourcePosition,
}

impl Cursor<'_> {
    fn advance(&mut self, to: usize) -> Arc<SourcePosition> {
        let from = self.pos.index;
        for &b in self.bytes.get(from..to).unwrap_or_default() {
            if b == b'\n' {
                self.pos.line += 1;
                self.pos.column = 1;
            } else {
                self.pos.column += 1;
            }
        }
        self.pos.index = to.max(from);
        Arc::new(self.pos.clone())
    }

    fn span(&mut self, start: usize, end: usize) -> SourceSpan {
        SourceSpan {
            start: self.advance(start),
            end: self.advance(end),
        }
    }
}
