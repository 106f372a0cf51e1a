//! Decoding shell words the way bash would before running them: quote removal, backslashes,
//! ANSI-C `$'..'`, `~`, brace expansion. What only the running shell can know (parameters,
//! command output) is marked dynamic, and nested command strings are collected for the walker.

use brush_parser::ParserOptions;
use brush_parser::word::{
    self, BraceExpressionMember, BraceExpressionOrText, ParameterExpr, ParameterTransformOp,
    WordPiece, WordPieceWithSource,
};

/// Brace expansions producing more words than this are treated as dynamic.
const MAX_BRACE_WORDS: usize = 256;
/// Brace expansions producing more words than this are refused: bash would exhaust memory
/// building them.
const MAX_BRACE_PRODUCT: u128 = 1 << 16;

/// One decoded word.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Decoded {
    /// The text with quoting removed; dynamic parts contribute nothing.
    pub text: String,
    /// Some part is only known at run time (`$x`, `$(..)`, `~user`, ...).
    pub dynamic: bool,
    /// Contains unquoted glob characters.
    pub glob: bool,
    /// `${x@P}`: prompt expansion runs command substitutions stored in a variable.
    pub prompt_expansion: bool,
    /// For a dynamic word whose only run-time parts are `$HOME` / `${HOME}`: the text with the
    /// home directory the walker knows in their place (`cat $HOME/.ssh/id_rsa` reads the same
    /// key as `cat ~/.ssh/id_rsa`). Judged in addition to the run-time ask, never instead.
    pub likely: Option<String>,
}

impl Decoded {
    /// Text known now: the word's and its likely expansion's.
    fn push(&mut self, text: &str) {
        self.text.push_str(text);
        if let Some(likely) = self.likely.as_mut() {
            likely.push_str(text);
        }
    }

    /// A part only known at run time, with no likely value.
    fn run_time(&mut self) {
        self.dynamic = true;
        self.likely = None;
    }
}

/// The result of decoding: the words and every nested command string met on the way.
#[derive(Debug, Default)]
pub(crate) struct DecodeOut {
    pub words: Vec<Decoded>,
    /// `$(..)` and backtick bodies, in order; the walker parses and classifies them.
    pub substitutions: Vec<String>,
    /// A word the word parser rejected (it is also marked dynamic).
    pub errors: Vec<String>,
    /// Arithmetic expressions (`$((..))`, array subscripts): bash evaluates the values of the
    /// variables they name as arithmetic in turn.
    pub arith: Vec<String>,
    /// Variables expanded indirectly (`${!x}`): bash expands the variable their value names.
    pub indirect: Vec<String>,
}

/// Characters after which a word needs the full word parser.
/// A home directory that bash neither splits nor globs and the word parser reads back as it is.
fn plain_home(home: &str) -> bool {
    home.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-'))
}

fn is_plain(raw: &str) -> bool {
    !raw.bytes().any(|b| {
        matches!(
            b,
            b'\''
                | b'"'
                | b'\\'
                | b'$'
                | b'`'
                | b'~'
                | b'*'
                | b'?'
                | b'['
                | b'{'
                | b'!'
                | b'@'
                | b'+'
        )
    })
}

/// The text of a word that is one quoted string with nothing in it to expand (`'*.rs'`,
/// `"fn analyze"`), which the word parser would read back as that text: no glob, nothing
/// dynamic. Braces are left to the parser (`check_braces` caps them, quoted or not).
fn literal_quoted(raw: &str) -> Option<&str> {
    if let Some(inner) = raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\''))
        && !inner.contains(['\'', '{'])
    {
        return Some(inner);
    }
    raw.strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .filter(|inner| !inner.contains(['"', '\\', '$', '`', '{']))
}

pub(crate) struct Decoder<'a> {
    pub options: &'a ParserOptions,
    pub home: Option<&'a str>,
}

impl Decoder<'_> {
    /// Decodes one raw word, applying brace expansion first as bash does.
    pub(crate) fn decode_into(&self, raw: &str, out: &mut DecodeOut) {
        if crate::limits::overflowing_number(raw) {
            // brush-parser panics on these (brace sequences, `~+N`); bash rejects them.
            out.errors
                .push(format!("a number in `{raw}` is past 64 bits"));
            out.words.push(Decoded {
                dynamic: true,
                ..Decoded::default()
            });
            return;
        }
        if is_plain(raw) {
            out.words.push(Decoded {
                text: raw.to_owned(),
                ..Decoded::default()
            });
            return;
        }
        if let Some(text) = literal_quoted(raw) {
            out.words.push(Decoded {
                text: text.to_owned(),
                ..Decoded::default()
            });
            return;
        }
        // A `~` makes a word not plain, so only these words can need it.
        let rewritten = self.assignment_tilde(raw);
        let raw = rewritten.as_deref().unwrap_or(raw);
        if raw.contains('{')
            && let Err(r) = crate::limits::check_braces(raw)
        {
            out.errors.push(r.message);
            out.words.push(Decoded {
                dynamic: true,
                ..Decoded::default()
            });
            return;
        }
        if raw.contains('{')
            && (raw.contains(',') || raw.contains(".."))
            && let Ok(Ok(Some(exprs))) =
                crate::limits::guarded(|| word::parse_brace_expansions(raw, self.options))
        {
            {
                let mut expanded = vec![String::new()];
                if expand_braces(&exprs, &mut expanded) {
                    for one in expanded {
                        self.decode_one(&one, out);
                    }
                } else {
                    let words = brace_count(&exprs);
                    if words > MAX_BRACE_PRODUCT {
                        // bash would build every word before running anything: memory runs out.
                        out.errors.push(format!(
                            "`{raw}` brace-expands to {words} words or more; the limit is {MAX_BRACE_PRODUCT}"
                        ));
                    }
                    out.words.push(Decoded {
                        text: String::new(),
                        dynamic: true,
                        ..Decoded::default()
                    });
                    // Still look for substitutions in the unexpanded text.
                    let mut sink = DecodeOut::default();
                    self.decode_one(raw, &mut sink);
                    out.substitutions.extend(sink.substitutions);
                }
                return;
            }
        }
        self.decode_one(raw, out);
    }

    /// bash (outside POSIX mode) expands `~` after the first `=` and after each `:` of a word
    /// shaped like an assignment, arguments included (`dd of=~/x`, `PATH=~/bin:~/x`), but not
    /// in a word whose left side is not a name (`--output=~/x` keeps its `~`). The word with
    /// those tildes replaced by the home directory, or `None` when nothing changes (a value
    /// with quoting or expansions is left to the word parser, which keeps the `~`).
    fn assignment_tilde(&self, raw: &str) -> Option<String> {
        let (name, value) = raw.split_once('=')?;
        let name = name.strip_suffix('+').unwrap_or(name);
        let ident = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ident || !value.contains('~') || value.contains(['\'', '"', '\\', '$', '`']) {
            return None;
        }
        let home = self.home?;
        // The home text goes back through the word parser: quote it unless it is plain.
        let home = if plain_home(home) {
            home.to_owned()
        } else if !home.contains('\'') {
            format!("'{home}'")
        } else {
            return None;
        };
        let mut changed = false;
        let parts: Vec<String> = value
            .split(':')
            .map(|part| match part.strip_prefix('~') {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                    changed = true;
                    format!("{home}{rest}")
                }
                _ => part.to_owned(),
            })
            .collect();
        changed.then(|| {
            format!(
                "{}={}",
                raw.split_once('=').map_or("", |(n, _)| n),
                parts.join(":")
            )
        })
    }

    fn decode_one(&self, raw: &str, out: &mut DecodeOut) {
        let mut decoded = Decoded {
            likely: Some(String::new()),
            ..Decoded::default()
        };
        match crate::limits::guarded(|| word::parse(raw, self.options).map_err(|e| e.to_string()))
            .and_then(|r| r)
        {
            Ok(pieces) => {
                self.pieces(&pieces, false, &mut decoded, out);
                if !decoded.dynamic {
                    decoded.likely = None;
                }
            }
            Err(err) => {
                decoded.dynamic = true;
                decoded.likely = None;
                out.errors
                    .push(format!("cannot decode word `{raw}`: {err}"));
                // A word the word parser cannot read may still hide a substitution.
                if raw.contains("$(") || raw.contains('`') {
                    out.errors
                        .push(format!("unreadable substitution in `{raw}`"));
                }
            }
        }
        out.words.push(decoded);
    }

    /// Decodes a here-document body or other expanding text: only its substitutions matter.
    pub(crate) fn scan_heredoc(&self, body: &str, out: &mut DecodeOut) -> bool {
        match crate::limits::guarded(|| {
            word::parse_heredoc(body, self.options).map_err(|e| e.to_string())
        })
        .and_then(|r| r)
        {
            Ok(pieces) => {
                let mut decoded = Decoded::default();
                let before = out.substitutions.len();
                self.pieces(&pieces, true, &mut decoded, out);
                // An unreadable `$(..)` comes back as plain text: bash would fail on it, and
                // this walker cannot see what it holds.
                if out.substitutions.len() == before
                    && !decoded.dynamic
                    && has_unescaped_substitution(body)
                {
                    out.errors.push(
                        "a command substitution in a here-document cannot be read".to_owned(),
                    );
                    return true;
                }
                decoded.dynamic
            }
            Err(err) => {
                out.errors.push(format!("cannot read here-document: {err}"));
                true
            }
        }
    }

    /// Scans a raw fragment (a `${x:-..}` default, an arithmetic expression) for substitutions.
    fn scan_fragment(&self, text: &str, out: &mut DecodeOut) {
        if !text.contains('$') && !text.contains('`') {
            return;
        }
        let mut sink = DecodeOut::default();
        self.decode_one(text, &mut sink);
        out.substitutions.extend(sink.substitutions);
        out.errors.extend(sink.errors);
        if sink.words.iter().any(|w| w.prompt_expansion) {
            out.words.push(Decoded {
                dynamic: true,
                prompt_expansion: true,
                ..Decoded::default()
            });
        }
    }

    fn pieces(
        &self,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        d: &mut Decoded,
        out: &mut DecodeOut,
    ) {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(s) => {
                    if !quoted && s.contains(['*', '?', '[']) {
                        d.glob = true;
                    }
                    d.push(s);
                }
                WordPiece::SingleQuotedText(s) => d.push(s),
                WordPiece::AnsiCQuotedText(s) => d.push(&decode_ansi_c(s)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, true, d, out);
                }
                WordPiece::TildeExpansion(t) => match (t, self.home) {
                    (word::TildeExpr::Home, Some(home)) => d.push(home),
                    _ => d.run_time(),
                },
                WordPiece::ParameterExpansion(expr) => {
                    d.dynamic = true;
                    match (self.home_of(expr, quoted), d.likely.as_mut()) {
                        (Some(home), Some(likely)) => likely.push_str(home),
                        _ => d.likely = None,
                    }
                    self.parameter(expr, d, out);
                }
                WordPiece::CommandSubstitution(s) => {
                    d.run_time();
                    out.substitutions.push(s.clone());
                }
                WordPiece::BackquotedCommandSubstitution(s) => {
                    d.run_time();
                    out.substitutions.push(unescape_backquoted(s));
                }
                WordPiece::EscapeSequence(s) => {
                    let mut chars = s.chars();
                    if chars.next() == Some('\\') {
                        let rest: String = chars.collect();
                        if rest != "\n" {
                            d.push(&rest);
                        }
                    } else {
                        d.push(s);
                    }
                }
                WordPiece::ArithmeticExpression(expr) => {
                    d.run_time();
                    self.scan_fragment(&expr.value, out);
                    out.arith.push(expr.value.clone());
                }
            }
        }
    }

    /// The home directory a plain `$HOME` / `${HOME}` expands to, when the walker knows it and
    /// the expansion cannot be split or globbed into something else (quoted, or a home of
    /// plain characters).
    fn home_of(&self, expr: &ParameterExpr, quoted: bool) -> Option<&str> {
        let ParameterExpr::Parameter {
            parameter: word::Parameter::Named(name),
            indirect: false,
        } = expr
        else {
            return None;
        };
        let home = self.home.filter(|_| name == "HOME")?;
        (quoted || plain_home(home)).then_some(home)
    }

    fn parameter(&self, expr: &ParameterExpr, d: &mut Decoded, out: &mut DecodeOut) {
        use ParameterExpr as P;
        let fragments: Vec<&str> = match expr {
            P::UseDefaultValues { default_value, .. }
            | P::AssignDefaultValues { default_value, .. } => {
                default_value.iter().map(String::as_str).collect()
            }
            P::IndicateErrorIfNullOrUnset { error_message, .. } => {
                error_message.iter().map(String::as_str).collect()
            }
            P::UseAlternativeValue {
                alternative_value, ..
            } => alternative_value.iter().map(String::as_str).collect(),
            P::RemoveSmallestSuffixPattern { pattern, .. }
            | P::RemoveLargestSuffixPattern { pattern, .. }
            | P::RemoveSmallestPrefixPattern { pattern, .. }
            | P::RemoveLargestPrefixPattern { pattern, .. }
            | P::UppercaseFirstChar { pattern, .. }
            | P::UppercasePattern { pattern, .. }
            | P::LowercaseFirstChar { pattern, .. }
            | P::LowercasePattern { pattern, .. } => pattern.iter().map(String::as_str).collect(),
            P::ReplaceSubstring {
                pattern,
                replacement,
                ..
            } => {
                let mut v = vec![pattern.as_str()];
                v.extend(replacement.iter().map(String::as_str));
                v
            }
            P::Substring { offset, length, .. } => {
                // `${x:OFFSET:LENGTH}`: both are arithmetic, whose names are evaluated in turn.
                out.arith.push(offset.value.clone());
                out.arith.extend(length.iter().map(|l| l.value.clone()));
                let mut v = vec![offset.value.as_str()];
                v.extend(length.iter().map(|l| l.value.as_str()));
                v
            }
            P::Transform { op, .. } => {
                if matches!(op, ParameterTransformOp::PromptExpand) {
                    d.prompt_expansion = true;
                }
                Vec::new()
            }
            P::Parameter { .. }
            | P::ParameterLength { .. }
            | P::VariableNames { .. }
            | P::MemberKeys { .. } => Vec::new(),
        };
        let (parameter, indirect) = match expr {
            P::Parameter {
                parameter,
                indirect,
            }
            | P::UseDefaultValues {
                parameter,
                indirect,
                ..
            }
            | P::AssignDefaultValues {
                parameter,
                indirect,
                ..
            }
            | P::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                ..
            }
            | P::UseAlternativeValue {
                parameter,
                indirect,
                ..
            }
            | P::ParameterLength {
                parameter,
                indirect,
            }
            | P::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                ..
            }
            | P::Substring {
                parameter,
                indirect,
                ..
            }
            | P::Transform {
                parameter,
                indirect,
                ..
            }
            | P::UppercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | P::UppercasePattern {
                parameter,
                indirect,
                ..
            }
            | P::LowercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | P::LowercasePattern {
                parameter,
                indirect,
                ..
            }
            | P::ReplaceSubstring {
                parameter,
                indirect,
                ..
            } => (Some(parameter), *indirect),
            _ => (None, false),
        };
        match parameter {
            Some(word::Parameter::NamedWithIndex { name, index }) => {
                self.scan_fragment(index, out);
                out.arith.push(index.clone());
                if indirect {
                    out.indirect.push(name.clone());
                }
            }
            Some(word::Parameter::Named(name)) if indirect => out.indirect.push(name.clone()),
            _ => {}
        }
        for f in fragments {
            self.scan_fragment(f, out);
        }
    }
}

/// Expands `exprs` into `acc` (the cartesian product bash builds); false when too many words.
/// How many words a brace expansion produces, saturating.
fn brace_count(exprs: &[BraceExpressionOrText]) -> u128 {
    let mut total: u128 = 1;
    for e in exprs {
        if let BraceExpressionOrText::Expr(members) = e {
            let mut alternatives: u128 = 0;
            for m in members {
                let n = match m {
                    BraceExpressionMember::Child(children) => brace_count(children),
                    BraceExpressionMember::NumberSequence {
                        start,
                        end,
                        increment,
                    } => u128::from(start.abs_diff(*end) / increment.unsigned_abs().max(1)) + 1,
                    BraceExpressionMember::CharSequence { start, end, .. } => {
                        u128::from((*start as u32).abs_diff(*end as u32)) + 1
                    }
                };
                alternatives = alternatives.saturating_add(n);
            }
            total = total.saturating_mul(alternatives.max(1));
        }
    }
    total
}

fn expand_braces(exprs: &[BraceExpressionOrText], acc: &mut Vec<String>) -> bool {
    for e in exprs {
        match e {
            BraceExpressionOrText::Text(t) => {
                for a in acc.iter_mut() {
                    a.push_str(t);
                }
            }
            BraceExpressionOrText::Expr(members) => {
                let mut alternatives: Vec<String> = Vec::new();
                for m in members {
                    match m {
                        BraceExpressionMember::Child(children) => {
                            let mut sub = vec![String::new()];
                            if !expand_braces(children, &mut sub) {
                                return false;
                            }
                            alternatives.extend(sub);
                        }
                        BraceExpressionMember::NumberSequence {
                            start,
                            end,
                            increment,
                        } => {
                            let step = increment.unsigned_abs().max(1);
                            let span = start.abs_diff(*end) / step;
                            if span as usize >= MAX_BRACE_WORDS {
                                return false;
                            }
                            let mut v = *start;
                            loop {
                                alternatives.push(v.to_string());
                                if v == *end {
                                    break;
                                }
                                let next = if start <= end {
                                    v.checked_add(step as i64)
                                } else {
                                    v.checked_sub(step as i64)
                                };
                                match next {
                                    Some(n)
                                        if (start <= end && n <= *end)
                                            || (start > end && n >= *end) =>
                                    {
                                        v = n
                                    }
                                    _ => break,
                                }
                            }
                        }
                        BraceExpressionMember::CharSequence { start, end, .. } => {
                            let (a, b) = (*start as u32, *end as u32);
                            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                            if (hi - lo) as usize >= MAX_BRACE_WORDS {
                                return false;
                            }
                            for c in (lo..=hi).filter_map(char::from_u32) {
                                alternatives.push(c.to_string());
                            }
                        }
                    }
                    if alternatives.len() > MAX_BRACE_WORDS {
                        return false;
                    }
                }
                let mut next = Vec::with_capacity(acc.len() * alternatives.len().max(1));
                for a in acc.iter() {
                    for alt in &alternatives {
                        next.push(format!("{a}{alt}"));
                    }
                }
                if next.len() > MAX_BRACE_WORDS {
                    return false;
                }
                *acc = next;
            }
        }
    }
    true
}

/// Removes the backslashes bash removes inside backticks (before `$`, `` ` `` and `\`).
fn unescape_backquoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && matches!(n, '$' | '`' | '\\')
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Decodes the body of `$'..'` as bash does.
pub(crate) fn decode_ansi_c(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            v = v.wrapping_mul(16).wrapping_add(d);
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    out.push('\\');
                    out.push(e);
                } else {
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
            }
            'c' => {
                if let Some(x) = chars.next() {
                    out.push(char::from_u32((x as u32) & 0x1f).unwrap_or('\u{fffd}'));
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// Whether `text` holds a `$(` or a backtick that no backslash escapes.
fn has_unescaped_substitution(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 1,
            b'`' => return true,
            b'$' if b.get(i + 1) == Some(&b'(') => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// An option's value as getopt takes it: the text attached to the option word (`--opt=V`,
/// `-oV`), else, when the option takes one, the next argument (consumed: `next` moves past it).
pub(crate) fn option_value(
    word: &Decoded,
    attached: Option<&str>,
    takes_next: bool,
    args: &[Decoded],
    next: &mut usize,
) -> Option<Decoded> {
    match attached {
        Some(v) => Some(Decoded {
            text: v.to_owned(),
            ..word.clone()
        }),
        None if takes_next => {
            let value = args.get(*next).cloned();
            *next += 1;
            value
        }
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_quoted_word_decodes_as_the_word_parser_reads_it() {
        let options = ParserOptions::default();
        let d = Decoder {
            options: &options,
            home: Some("/home/u"),
        };
        for raw in [
            "'*.rs'",
            "\"fn analyze\"",
            "''",
            "\"\"",
            "\"a'b\"",
            "'a\"b'",
            "\"~/x\"",
            "'~'",
            "\"[a-z]?\"",
            "'$HOME'",
            "\"!x @(y) +(z)\"",
            "'a\\b'",
            "'line\nbreak'",
        ] {
            assert!(literal_quoted(raw).is_some(), "{raw}");
            let mut fast = DecodeOut::default();
            d.decode_into(raw, &mut fast);
            let mut full = DecodeOut::default();
            d.decode_one(raw, &mut full);
            assert_eq!(fast.words, full.words, "{raw}");
            assert!(
                full.substitutions.is_empty() && full.errors.is_empty(),
                "{raw}"
            );
        }
        for raw in [
            "'",
            "\"",
            "'a'b'",
            "\"$x\"",
            "\"a\\\"b\"",
            "\"`id`\"",
            "'{a,b}'",
            "\"{a,b}\"",
            "'a'\"b\"",
            "x'y'",
        ] {
            assert!(literal_quoted(raw).is_none(), "{raw}");
        }
    }

    fn dec(raw: &str) -> DecodeOut {
        let options = ParserOptions::default();
        let d = Decoder {
            options: &options,
            home: Some("/home/u"),
        };
        let mut out = DecodeOut::default();
        d.decode_into(raw, &mut out);
        out
    }

    #[test]
    fn quote_tricks_decode_to_the_real_name() {
        assert_eq!(dec("r''m").words[0].text, "rm");
        assert_eq!(dec("\\rm").words[0].text, "rm");
        assert_eq!(dec("$'\\x72m'").words[0].text, "rm");
        assert_eq!(dec("$'\\162m'").words[0].text, "rm");
        assert_eq!(dec("\"r\"m").words[0].text, "rm");
    }

    #[test]
    fn braces_expand_to_several_words() {
        let w: Vec<String> = dec("{rm,-rf,/}")
            .words
            .into_iter()
            .map(|w| w.text)
            .collect();
        assert_eq!(w, ["rm", "-rf", "/"]);
    }

    #[test]
    fn substitutions_are_collected_inside_double_quotes_and_defaults() {
        assert_eq!(dec("\"a $(id) b\"").substitutions, ["id"]);
        assert_eq!(dec("${x:-$(whoami)}").substitutions, ["whoami"]);
        assert_eq!(dec("`ls \\`pwd\\``").substitutions, ["ls `pwd`"]);
        assert!(dec("${x@P}").words[0].prompt_expansion);
    }

    #[test]
    fn tilde_expands_to_home() {
        assert_eq!(dec("~/.ssh").words[0].text, "/home/u/.ssh");
        // After `=` and `:` only in a word shaped like an assignment, as bash does.
        assert_eq!(dec("of=~/x").words[0].text, "of=/home/u/x");
        assert_eq!(
            dec("P=~/a:~/b:c~").words[0].text,
            "P=/home/u/a:/home/u/b:c~"
        );
        assert_eq!(dec("--output=~/x").words[0].text, "--output=~/x");
        assert_eq!(dec("of='~/x'").words[0].text, "of=~/x");
    }
}
