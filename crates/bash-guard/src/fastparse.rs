//! A direct parse of the everyday shape of a command - simple commands in pipelines, and-or
//! lists and `;`/`&`/newline sequences, with plain file redirections and scalar assignments -
//! from brush-parser's token list into the very `ast::Program` brush-parser's PEG grammar builds
//! from the same tokens. The grammar tries every rule on every token (a simple command's words
//! are each tried as an assignment, a process substitution and a redirection first), which made
//! it half the cost of analysing a typical command; this parser looks at each token once.
//!
//! A parse that differed from brush-parser's would be a parser differential: the guard would
//! judge one program while bash runs another. So this parser accepts only token lists whose
//! parse it can mirror rule by rule, and returns `None` (brush-parser then parses as before) on
//! anything else: an operator outside the subset (`(`, `)`, here-documents, `<<<`, `&>`, `<>`,
//! `>|`, `|&`, `;;`, ...), a reserved word or `time` where a command name goes, an array or
//! array-element assignment, an fd number bash cannot hold. The equality is tested on every
//! command of the corpora, by a property test and by the fuzz target.

use brush_parser::ast::{
    self, AndOr, AndOrList, Assignment, AssignmentName, AssignmentValue, Command,
    CommandPrefixOrSuffixItem as Item, CompoundList, CompoundListItem, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, SeparatorOperator, SimpleCommand,
};
use brush_parser::{ParserOptions, SourceSpan, Token};

/// The operators this parser handles; a token list with any other is left to brush-parser.
const OPERATORS: &[&str] = &[";", "&", "&&", "||", "|", "\n", "<", ">", ">>", "<&", ">&"];

/// Words brush-parser does not take as a command name (its `reserved_word` rule, bash
/// extensions included), and `time`, which starts a timed pipeline.
const RESERVED: &[&str] = &[
    "!", "{", "}", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then",
    "until", "while", "[[", "]]", "function", "select", "coproc", "time",
];

/// `tokens` parsed as brush-parser's `parse_tokens` would, or `None` when they are outside the
/// subset this parser mirrors (or brush-parser would reject them).
pub(crate) fn parse(tokens: &[Token], options: &ParserOptions) -> Option<ast::Program> {
    // The grammar's bash extensions are switched by the options; mirror only the defaults.
    if *options != ParserOptions::default() {
        return None;
    }
    let in_subset = tokens.iter().all(|t| match t {
        Token::Operator(op, _) => OPERATORS.contains(&op.as_str()),
        Token::Word(..) => true,
    });
    if !in_subset {
        return None;
    }
    Parser { tokens, at: 0 }.program()
}

struct Parser<'t> {
    tokens: &'t [Token],
    at: usize,
}

impl<'t> Parser<'t> {
    fn token(&self) -> Option<&'t Token> {
        self.tokens.get(self.at)
    }

    fn operator(&self) -> Option<&'t str> {
        match self.token() {
            Some(Token::Operator(op, _)) => Some(op),
            _ => None,
        }
    }

    /// The grammar's `linebreak`: any number of newlines.
    fn linebreak(&mut self) -> bool {
        let start = self.at;
        while self.operator() == Some("\n") {
            self.at += 1;
        }
        self.at > start
    }

    /// `program := linebreak complete_command (newline_list complete_command)* linebreak`.
    fn program(mut self) -> Option<ast::Program> {
        self.linebreak();
        // An empty program is brush-parser's second alternative; cheap there, left to it.
        self.token()?;
        let mut complete_commands = Vec::new();
        loop {
            complete_commands.push(self.complete_command()?);
            let newlines = self.linebreak();
            if self.token().is_none() {
                return Some(ast::Program { complete_commands });
            }
            if !newlines {
                return None;
            }
        }
    }

    /// `complete_command := and_or (separator_op and_or)* separator_op?`; it ends before a
    /// newline or at the end, where no and-or list can start.
    fn complete_command(&mut self) -> Option<CompoundList> {
        let mut items = Vec::new();
        loop {
            let and_or = self.and_or()?;
            let separator = match self.operator() {
                Some(";") => SeparatorOperator::Sequence,
                Some("&") => SeparatorOperator::Async,
                Some("\n") => {
                    items.push(CompoundListItem(and_or, SeparatorOperator::Sequence));
                    return Some(CompoundList(items));
                }
                Some(_) => return None,
                None if self.token().is_none() => {
                    items.push(CompoundListItem(and_or, SeparatorOperator::Sequence));
                    return Some(CompoundList(items));
                }
                None => return None,
            };
            self.at += 1;
            items.push(CompoundListItem(and_or, separator));
            if self.token().is_none() || self.operator() == Some("\n") {
                return Some(CompoundList(items));
            }
        }
    }

    /// `and_or := pipeline (('&&' | '||') linebreak pipeline)*`.
    fn and_or(&mut self) -> Option<AndOrList> {
        let first = self.pipeline()?;
        let mut additional = Vec::new();
        loop {
            let and = match self.operator() {
                Some("&&") => true,
                Some("||") => false,
                _ => return Some(AndOrList { first, additional }),
            };
            self.at += 1;
            self.linebreak();
            let next = self.pipeline()?;
            additional.push(if and {
                AndOr::And(next)
            } else {
                AndOr::Or(next)
            });
        }
    }

    /// `pipeline := simple_command ('|' linebreak simple_command)*` (no `time`, no `!`).
    fn pipeline(&mut self) -> Option<Pipeline> {
        let mut seq = vec![Command::Simple(self.simple_command()?)];
        while self.operator() == Some("|") {
            self.at += 1;
            self.linebreak();
            seq.push(Command::Simple(self.simple_command()?));
        }
        Some(Pipeline {
            timed: None,
            bang: false,
            seq,
        })
    }

    /// `simple_command := cmd_prefix (cmd_word cmd_suffix?)? | cmd_name cmd_suffix?`, the
    /// prefix being redirections and assignments, the suffix redirections, assignments and
    /// words, each taken greedily as the grammar does.
    fn simple_command(&mut self) -> Option<SimpleCommand> {
        let mut prefix = Vec::new();
        loop {
            if let Some(r) = self.redirect()? {
                prefix.push(Item::IoRedirect(r));
                continue;
            }
            let Some(Token::Word(w, loc)) = self.token() else {
                break;
            };
            let Some(a) = assignment(w, loc)? else {
                break;
            };
            prefix.push(Item::AssignmentWord(a, ast::Word::with_location(w, loc)));
            self.at += 1;
        }
        let name = match self.token() {
            Some(t @ Token::Word(w, _)) if !RESERVED.contains(&w.as_str()) => ast::Word::from(t),
            // A reserved word ends a prefix-only command in the grammar; it then has to be
            // part of a compound command this parser does not build.
            Some(Token::Word(..)) => return None,
            _ if prefix.is_empty() => return None,
            _ => {
                return Some(SimpleCommand {
                    prefix: Some(ast::CommandPrefix(prefix)),
                    word_or_name: None,
                    suffix: None,
                });
            }
        };
        self.at += 1;
        let mut suffix = Vec::new();
        loop {
            if let Some(r) = self.redirect()? {
                suffix.push(Item::IoRedirect(r));
                continue;
            }
            let Some(t @ Token::Word(w, loc)) = self.token() else {
                break;
            };
            suffix.push(match assignment(w, loc)? {
                Some(a) => Item::AssignmentWord(a, ast::Word::with_location(w, loc)),
                None => Item::Word(ast::Word::from(t)),
            });
            self.at += 1;
        }
        Some(SimpleCommand {
            prefix: (!prefix.is_empty()).then_some(ast::CommandPrefix(prefix)),
            word_or_name: Some(name),
            suffix: (!suffix.is_empty()).then_some(ast::CommandSuffix(suffix)),
        })
    }

    /// The grammar's `io_redirect` for `[N]<`, `[N]>`, `[N]>>`, `[N]<&`, `[N]>&` and a word:
    /// `Some(None)` if no redirection starts here, `None` for one this parser does not build.
    fn redirect(&mut self) -> Option<Option<IoRedirect>> {
        let (fd, op_at) = match self.token() {
            // `io_number`: all digits, written against a `<` or `>` operator.
            Some(Token::Word(w, wloc)) => match self.tokens.get(self.at + 1) {
                Some(Token::Operator(op, oloc))
                    if w.chars().all(|c| c.is_ascii_digit())
                        && op.starts_with(['<', '>'])
                        && wloc.end.index == oloc.start.index =>
                {
                    // brush-parser panics on a number past `i32`; leave that to it.
                    (Some(w.parse::<ast::IoFd>().ok()?), self.at + 1)
                }
                _ => return Some(None),
            },
            Some(Token::Operator(op, _)) if op.starts_with(['<', '>']) => (None, self.at),
            _ => return Some(None),
        };
        let Some(Token::Operator(op, _)) = self.tokens.get(op_at) else {
            return None;
        };
        let kind = match op.as_str() {
            "<" => IoFileRedirectKind::Read,
            ">" => IoFileRedirectKind::Write,
            ">>" => IoFileRedirectKind::Append,
            "<&" => IoFileRedirectKind::DuplicateInput,
            ">&" => IoFileRedirectKind::DuplicateOutput,
            _ => return None,
        };
        // A word must follow: after `<` or `>` an operator could start a process
        // substitution.
        let target @ Token::Word(..) = self.tokens.get(op_at + 1)? else {
            return None;
        };
        let word = ast::Word::from(target);
        let target = match kind {
            IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput => {
                IoFileRedirectTarget::Duplicate(word)
            }
            _ => IoFileRedirectTarget::Filename(word),
        };
        self.at = op_at + 2;
        Some(Some(IoRedirect::File(fd, kind, target)))
    }
}

/// The grammar's scalar `assignment_word` (`NAME=value`, `NAME+=value`) on a word token:
/// `Some(None)` if brush-parser would not read `word` as an assignment, `None` if it might read
/// it as one this parser does not build (`NAME[index]=value`).
fn assignment(word: &str, loc: &SourceSpan) -> Option<Option<Assignment>> {
    let bytes = word.as_bytes();
    if !bytes
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
    {
        return Some(None);
    }
    // The grammar's name is greedy: after it only `=`, `+=` or `[` can make an assignment.
    let n = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    let (append, value_at) = match bytes.get(n) {
        Some(b'=') => (false, n + 1),
        Some(b'+') if bytes.get(n + 1) == Some(&b'=') => (true, n + 2),
        // An element assignment needs an `=` after the index.
        Some(b'[') if word.get(n..)?.contains('=') => return None,
        _ => return Some(None),
    };
    Some(Some(Assignment {
        name: AssignmentName::VariableName(word.get(..n)?.to_owned()),
        value: AssignmentValue::Scalar(ast::Word::from(word.get(value_at..)?.to_owned())),
        append,
        loc: loc.clone(),
    }))
}
