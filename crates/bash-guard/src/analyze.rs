//! The walk: parses a command, visits every node of the tree and hands each simple command,
//! decoded, to the classifier.

use std::path::Path;

use brush_parser::ParserOptions;
use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect,
};

use crate::config::BashConfig;
use crate::error::ParseError;
use crate::judge::{PathAccess, PathJudge, PathVerdict};
use crate::limits::{self, INLINE_NESTING, MAX_COMMANDS, MAX_NESTING};
use crate::verdict::{Decision, Finding, Verdict};
use crate::walker::{StackMode, StdinKind, Walker, display_words};
use crate::words::{DecodeOut, Decoded};

/// Command strings nested in command strings (substitutions, `bash -c`, `eval`, ...) deeper
/// than this are denied.
pub(crate) const MAX_DEPTH: usize = 12;

/// Classifies bash commands. Cheap to share: it holds only the configuration.
#[derive(Debug, Clone)]
pub struct Analyzer {
    pub(crate) config: BashConfig,
    pub(crate) home: Option<String>,
    /// Computed when first asked for (by a cache): formatting the whole configuration was a
    /// tenth of building a guard in a hook process that never analyses a command.
    fingerprint: std::sync::OnceLock<u64>,
}

impl Analyzer {
    /// An analyzer for `config`; `~` expands to `$HOME` as read now.
    pub fn new(config: BashConfig) -> Analyzer {
        let home = std::env::var("HOME").ok().filter(|h| h.starts_with('/'));
        Analyzer::with_home(config, home)
    }

    /// An analyzer that expands `~` to `home` (or leaves `~` unresolved, hence dynamic).
    pub fn with_home(config: BashConfig, home: Option<String>) -> Analyzer {
        Analyzer {
            config,
            home,
            fingerprint: std::sync::OnceLock::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BashConfig {
        &self.config
    }

    /// A value that changes whenever this analyzer's configuration does.
    pub fn fingerprint(&self) -> u64 {
        *self.fingerprint.get_or_init(|| {
            use std::hash::{DefaultHasher, Hash, Hasher};
            let mut h = DefaultHasher::new();
            format!("{:?}", self.config).hash(&mut h);
            self.home.hash(&mut h);
            h.finish()
        })
    }

    /// Classifies `command` as run in `cwd`, asking `judge` about every path it reads or writes.
    pub fn analyze(&self, command: &str, cwd: &Path, judge: &dyn PathJudge) -> Verdict {
        self.analyze_tracked(command, cwd, judge).0
    }

    /// As [`Analyzer::analyze`], also saying whether the judge was consulted.
    pub(crate) fn analyze_tracked(
        &self,
        command: &str,
        cwd: &Path,
        judge: &dyn PathJudge,
    ) -> (Verdict, bool) {
        let run = |mode: StackMode| {
            let options = ParserOptions::default();
            let mut w = Walker::new(
                &self.config,
                self.home.as_deref(),
                judge,
                &options,
                Some(cwd.to_path_buf()),
                mode,
            );
            // Only bash's blanks make a command empty: a vertical tab or a carriage return
            // is a word to bash (a command of that name).
            let blank = command.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n'));
            if blank && command.len() <= limits::MAX_COMMAND_LEN {
                w.add(
                    Decision::Deny,
                    "empty_command",
                    "",
                    "the command is empty".to_owned(),
                );
            } else {
                w.script(command, StdinKind::Terminal);
                if w.findings.is_empty() {
                    w.add(
                        Decision::Deny,
                        "empty_command",
                        "",
                        "the command contains no command to run".to_owned(),
                    );
                }
            }
            (w.needs_big_stack, w.judged, w.findings)
        };
        let (again, judged, findings) = run(StackMode::Inline);
        if !again {
            return (Verdict::from_findings(findings), judged);
        }
        match limits::on_big_stack(|| run(StackMode::Big)) {
            Some((_, judged, findings)) => (Verdict::from_findings(findings), judged),
            None => (
                Verdict::from_findings(vec![Finding {
                    decision: Decision::Deny,
                    code: "analysis_failed",
                    subcommand: String::new(),
                    message: "the analysis could not run on its own thread; the command is refused unread".to_owned(),
                }]),
                false,
            ),
        }
    }
}

/// Parses a whole program.
pub(crate) fn parse_program(
    text: &str,
    options: &ParserOptions,
) -> Result<ast::Program, ParseError> {
    let err = |message: String| ParseError {
        command: text.to_owned(),
        message,
    };
    limits::guarded(|| {
        // Not `tokenize_str_with_options`: on a command it has not seen, its 64-entry global
        // cache copies the input and the options into a key and the token list into the cache
        // (dropping the oldest list), under a lock - 11% of analysing a new 200-character
        // command - and it only pays back for a text tokenized again, which `CachedAnalyzer`
        // already answers without parsing.
        // The everyday text is cut into the same tokens directly (see `fastlex`).
        let tokens = match crate::fastlex::tokenize(text, options) {
            Some(tokens) => tokens,
            None => brush_parser::uncached_tokenize_str(text, &options.tokenizer_options())
                .map_err(|e| e.to_string())?,
        };
        // Most commands are simple commands in pipelines and lists: parsed directly, to the
        // same tree (see `fastparse`); anything else goes to brush-parser's grammar.
        if let Some(program) = crate::fastparse::parse(&tokens, options) {
            return Ok(program);
        }
        let parsed = brush_parser::parse_tokens(&tokens, options).map_err(|e| e.to_string());
        if parsed.is_err()
            && let Some(as_for) = select_as_for(&tokens)
            && let Ok(p) = brush_parser::parse_tokens(&as_for, options)
        {
            return Ok(p);
        }
        parsed
    })
    .and_then(|r| r)
    .map_err(err)
}

/// brush-parser has no `select` loop. `select NAME [in WORDS]; do BODY; done` runs BODY with
/// NAME set to one of WORDS or to the empty string (a choice that is not on the menu), so it
/// is judged as `for NAME in WORDS ""; do BODY; done`: the same tokens with the reserved word
/// swapped and one empty word added, so nothing else can change meaning. Only a `select` in
/// command position, followed by a name and a word list that ends in `;` or a newline, is
/// rewritten; any other shape stays a parse error (denied).
fn select_as_for(tokens: &[brush_parser::Token]) -> Option<Vec<brush_parser::Token>> {
    use brush_parser::Token;
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len() + 2);
    let mut changed = false;
    let mut i = 0;
    while let Some(t) = tokens.get(i) {
        let command_position = match out.last() {
            None => true,
            Some(Token::Operator(op, _)) => matches!(
                op.as_str(),
                ";" | "&" | "&&" | "||" | "|" | "|&" | "(" | "\n" | ";;" | ";&" | ";;&"
            ),
            Some(Token::Word(w, _)) => matches!(
                w.as_str(),
                "do" | "then" | "else" | "elif" | "{" | "!" | "if" | "while" | "until"
            ),
        };
        let Token::Word(word, span) = t else {
            out.push(t.clone());
            i += 1;
            continue;
        };
        if word != "select" || !command_position {
            out.push(t.clone());
            i += 1;
            continue;
        }
        let Some(Token::Word(name, _)) = tokens.get(i + 1) else {
            return None;
        };
        let ident = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ident {
            return None;
        }
        out.push(Token::Word("for".to_owned(), span.clone()));
        out.push(tokens.get(i + 1)?.clone());
        i += 2;
        // Newlines may come before `in`.
        let mut k = i;
        while matches!(tokens.get(k), Some(Token::Operator(op, _)) if op == "\n") {
            k += 1;
        }
        if matches!(tokens.get(k), Some(Token::Word(w, _)) if w == "in") {
            while i <= k {
                out.push(tokens.get(i)?.clone());
                i += 1;
            }
            loop {
                match tokens.get(i)? {
                    Token::Word(w, _) if w != "do" => {
                        out.push(tokens.get(i)?.clone());
                        i += 1;
                    }
                    Token::Operator(op, end) if op == ";" || op == "\n" => {
                        out.push(Token::Word("\"\"".to_owned(), end.clone()));
                        break;
                    }
                    _ => return None,
                }
            }
        }
        changed = true;
    }
    changed.then_some(out)
}

/// Every simple command anywhere in `command` (inside substitutions, `bash -c` strings,
/// wrappers and `find -exec` too), as its decoded words joined by spaces. Used by perm-rules to
/// match content rules against each subcommand.
pub fn simple_commands(command: &str) -> Result<Vec<String>, ParseError> {
    let analyzer = Analyzer::with_home(BashConfig::default(), std::env::var("HOME").ok());
    struct NoJudge;
    impl PathJudge for NoJudge {
        fn judge(&self, _: &str, _: PathAccess, _: &Path) -> PathVerdict {
            PathVerdict::Inside
        }
    }
    let run = |mode: StackMode| {
        let options = ParserOptions::default();
        let mut w = Walker::new(
            &analyzer.config,
            analyzer.home.as_deref(),
            &NoJudge,
            &options,
            None,
            mode,
        );
        let mut out = Vec::new();
        let failure = w.collect(command, &mut out);
        (w.needs_big_stack, failure.map_or(Ok(out), Err))
    };
    let (again, result) = run(StackMode::Inline);
    let result = if again {
        limits::on_big_stack(|| run(StackMode::Big).1)
            .unwrap_or_else(|| Err("the analysis could not run on its own thread".to_owned()))
    } else {
        result
    };
    result.map_err(|message| ParseError {
        command: command.to_owned(),
        message,
    })
}

impl<'a> Walker<'a> {
    /// Walks `command` for [`simple_commands`]: every classified simple command is a finding
    /// carrying its subcommand text. Returns why the command cannot be split, if it cannot.
    fn collect(&mut self, command: &str, out: &mut Vec<String>) -> Option<String> {
        self.script(command, StdinKind::Terminal);
        if self.needs_big_stack {
            return None;
        }
        let verdict = Verdict {
            decision: Decision::Allow,
            findings: std::mem::take(&mut self.findings),
        };
        match verdict.simple_commands() {
            Ok(list) => {
                out.extend(list);
                None
            }
            Err(why) => Some(why),
        }
    }

    /// Parses and walks a command string (the command itself, a substitution, `bash -c`,
    /// `eval`, ...), after checking the caps of `limits` on it.
    pub(crate) fn script(&mut self, text: &str, stdin: StdinKind) {
        if self.needs_big_stack {
            return;
        }
        if self.depth >= MAX_DEPTH {
            self.add(
                Decision::Deny,
                "too_deep",
                text,
                format!("commands nested deeper than {MAX_DEPTH} levels cannot be reviewed"),
            );
            return;
        }
        let shape = match limits::scan(text) {
            Ok(shape) => shape,
            Err(r) => {
                self.add(Decision::Deny, r.code, "", r.message);
                return;
            }
        };
        let need = match self.mode {
            StackMode::Inline => shape.opens,
            StackMode::Big => shape.nesting,
        };
        let cap = match self.mode {
            StackMode::Inline => INLINE_NESTING,
            StackMode::Big => MAX_NESTING,
        };
        if self.nesting + need > cap {
            if self.mode == StackMode::Inline {
                self.needs_big_stack = true;
            } else {
                let r = limits::too_deep(self.nesting + need);
                self.add(Decision::Deny, r.code, "", r.message);
            }
            return;
        }
        self.commands += shape.commands;
        if self.commands > MAX_COMMANDS {
            self.add(
                Decision::Deny,
                "too_many_commands",
                "",
                format!("the command holds more than {MAX_COMMANDS} commands, counting nested command strings; split it into reviewable steps"),
            );
            return;
        }
        let mut parsed = parse_program(text, self.options);
        let mut patched = None;
        if parsed.is_err()
            && let Some((fixed, endless)) = fill_for_headers(text)
            && let Ok(p) = parse_program(&fixed, self.options)
        {
            // brush-parser rejects empty parts of `for ((;;))`; bash reads an empty condition
            // as true.
            if endless {
                self.add(
                    Decision::Ask,
                    "endless_loop",
                    "for",
                    "`for ((..;;..))` has no condition: it runs until it is stopped".to_owned(),
                );
            }
            parsed = Ok(p);
            patched = Some(fixed);
        }
        let text = patched.as_deref().unwrap_or(text);
        match parsed {
            Ok(program) => {
                self.depth += 1;
                self.nesting += need;
                self.sources.push(text.to_owned());
                for cc in &program.complete_commands {
                    self.compound_list(cc, &stdin);
                }
                self.sources.pop();
                self.nesting -= need;
                self.depth -= 1;
            }
            Err(e) => self.add(
                Decision::Deny,
                "parse_error",
                text,
                format!("the shell parser rejects `{text}`: {}", e.message),
            ),
        }
    }

    fn compound_list(&mut self, list: &CompoundList, stdin: &StdinKind) {
        for item in &list.0 {
            let ao = &item.0;
            if matches!(item.1, ast::SeparatorOperator::Async) {
                self.add(
                    Decision::Ask,
                    "background",
                    "&",
                    "`&` leaves a command running in the background after the call returns"
                        .to_owned(),
                );
            }
            self.pipeline(&ao.first, stdin);
            for next in &ao.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, stdin),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, stdin: &StdinKind) {
        let multi = p.seq.len() > 1;
        for (i, cmd) in p.seq.iter().enumerate() {
            let input = if i == 0 {
                stdin.clone()
            } else {
                StdinKind::Pipe
            };
            // Every stage of a real pipeline runs in a subshell: a `cd` there does not leak.
            let saved = multi.then(|| self.cwd.clone());
            let piped = self.stdout_piped;
            self.stdout_piped |= i + 1 < p.seq.len();
            self.command(cmd, &input);
            self.stdout_piped = piped;
            if let Some(cwd) = saved {
                self.cwd = cwd;
            }
        }
    }

    fn command(&mut self, cmd: &Command, stdin: &StdinKind) {
        match cmd {
            Command::Simple(sc) => self.simple(sc, stdin),
            Command::Compound(cc, redirects) => {
                let input = redirects
                    .as_ref()
                    .and_then(|r| self.redirects(&r.0, "compound command"))
                    .unwrap_or_else(|| stdin.clone());
                self.compound(cc, &input);
            }
            Command::Function(f) => self.function(f),
            Command::ExtendedTest(t, redirects) => {
                self.extended_test(&t.expr);
                if let Some(r) = redirects {
                    self.redirects(&r.0, "[[ ]]");
                }
                self.add(
                    Decision::Allow,
                    "read_only",
                    "[[ ]]",
                    "a test expression".to_owned(),
                );
            }
        }
    }

    fn extended_test(&mut self, e: &ast::ExtendedTestExpr) {
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test(a);
                self.extended_test(b);
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test(a),
            E::UnaryTest(op, w) => {
                let d = self.words(std::slice::from_ref(w));
                if matches!(
                    op,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) {
                    for n in &d {
                        crate::vars::name_word(self, n, "[[ -v ]]");
                    }
                }
            }
            E::BinaryTest(op, a, b) => {
                let d = self.words(&[a.clone(), b.clone()]);
                use ast::BinaryPredicate as B;
                if matches!(
                    op,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                ) {
                    // `[[ A -eq B ]]` expands each operand and evaluates the result as
                    // arithmetic, where `a[$(cmd)]` runs cmd: `[[ $x -eq 1 ]]` with
                    // x='a[$(cmd)]' does.
                    for (word, decoded) in [a, b].into_iter().zip(&d) {
                        self.arith_operand(&word.value, decoded, "[[ ]]");
                    }
                }
            }
        }
    }

    fn compound(&mut self, cc: &CompoundCommand, stdin: &StdinKind) {
        match cc {
            CompoundCommand::Arithmetic(a) => {
                // brush-parser reads `( (cmd) )` as arithmetic; bash only does for an
                // unbroken `((` closed by an unbroken `))`, and runs nested subshells otherwise.
                let (start, end) = (a.loc.start.index, a.loc.end.index);
                let span: Option<String> = self.sources.last().map(|src| {
                    src.chars()
                        .skip(start)
                        .take(end.saturating_sub(start))
                        .collect()
                });
                let Some(span) = span else {
                    self.add(
                        Decision::Deny,
                        "parse_error",
                        "(( ))",
                        "cannot locate an arithmetic command in its source".to_owned(),
                    );
                    return;
                };
                if !(span.starts_with("((") && span.ends_with("))")) {
                    let inner = span
                        .strip_prefix('(')
                        .and_then(|s| s.strip_suffix(')'))
                        .unwrap_or(&span)
                        .to_owned();
                    let saved = self.cwd.clone();
                    self.script(&inner, stdin.clone());
                    self.cwd = saved;
                    return;
                }
                self.arith(&a.expr.value);
                // Bash reads `((rm -rf ~))` as arithmetic and fails; other shells (and
                // `( (rm -rf ~) )` one space away) run it as nested subshells. A catastrophe
                // spelled there is refused whichever reading applies.
                if let Some(what) = crate::backstop::catastrophic(&a.expr.value) {
                    self.add(
                        Decision::Deny,
                        "catastrophic_text",
                        "(( ))",
                        format!("the arithmetic command's text holds {what}; as nested subshells it would run"),
                    );
                }
                self.add(
                    Decision::Allow,
                    "read_only",
                    "(( ))",
                    "an arithmetic expression".to_owned(),
                );
            }
            CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arith(&e.value);
                }
                self.compound_list(&f.body.list, stdin);
            }
            CompoundCommand::BraceGroup(b) => self.compound_list(&b.list, stdin),
            CompoundCommand::Subshell(s) => {
                let saved = self.cwd.clone();
                self.compound_list(&s.list, stdin);
                self.cwd = saved;
            }
            CompoundCommand::ForClause(f) => {
                let values = f.values.as_ref().map(|v| self.words(v));
                let value = match values.as_deref() {
                    Some([one]) if !one.dynamic => Some(one.clone()),
                    Some(all)
                        if all.iter().all(|v| {
                            !v.dynamic && v.text.bytes().all(|b| b.is_ascii_digit() || b == b'-')
                        }) =>
                    {
                        Some(crate::words::Decoded {
                            text: "0".to_owned(),
                            ..crate::words::Decoded::default()
                        })
                    }
                    _ => None,
                };
                crate::vars::check_set(self, &f.variable_name, "for");
                crate::vars::record(self, &f.variable_name, value.as_ref());
                self.compound_list(&f.body.list, stdin);
            }
            CompoundCommand::CaseClause(c) => {
                self.words(std::slice::from_ref(&c.value));
                for item in &c.cases {
                    self.words(&item.patterns);
                    if let Some(body) = &item.cmd {
                        self.compound_list(body, stdin);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.compound_list(&i.condition, stdin);
                self.compound_list(&i.then, stdin);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.compound_list(c, stdin);
                    }
                    self.compound_list(&e.body, stdin);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                let cond = w.0.to_string();
                let cond = cond.trim().trim_end_matches(';').trim();
                let endless = if matches!(cc, CompoundCommand::WhileClause(_)) {
                    matches!(cond, "true" | ":" | "[ 1 ]" | "(( 1 ))" | "((1))")
                } else {
                    cond == "false"
                };
                if endless {
                    self.add(
                        Decision::Ask,
                        "endless_loop",
                        "while",
                        "the loop's condition never changes: it runs until it is stopped"
                            .to_owned(),
                    );
                }
                self.compound_list(&w.0, stdin);
                self.compound_list(&w.1.list, stdin);
            }
            CompoundCommand::Coprocess(c) => {
                self.add(
                    Decision::Ask,
                    "coprocess",
                    "coproc",
                    "a coprocess keeps running in the background".to_owned(),
                );
                self.command(&c.body, stdin);
            }
        }
    }

    /// An arithmetic expression: its substitutions run, and the variables it names are
    /// evaluated as arithmetic in turn.
    /// A word whose expansion bash evaluates as arithmetic (`[[ A -eq B ]]`): a static text is
    /// judged as the expression it is; a run-time one is judged through the variables it
    /// expands (their tracked values), and asks when its value comes from elsewhere
    /// (positional parameters, command output).
    pub(crate) fn arith_operand(&mut self, raw: &str, decoded: &Decoded, sub: &str) {
        if !decoded.dynamic {
            self.arith(&decoded.text.clone());
            return;
        }
        if crate::vars::unknown_arith_source(raw) {
            self.add(
                Decision::Ask,
                "dynamic_code_value",
                sub,
                format!("`{raw}` is only known at run time and bash evaluates it as arithmetic, where an array subscript runs commands"),
            );
            return;
        }
        self.arith(raw);
    }

    pub(crate) fn arith(&mut self, text: &str) {
        // `(( $1 ))`, `$(( $(cat f) + 1 ))`: the expanded value is evaluated as an expression
        // in turn, like a variable holding a command's output (`y=$(cat f); $((y))`).
        if crate::vars::unknown_arith_source(text) {
            self.add(
                Decision::Ask,
                "dynamic_code_value",
                "arithmetic",
                format!("`{text}` expands a value only known at run time, and bash evaluates it as arithmetic, where an array subscript runs commands"),
            );
        }
        let mut out = DecodeOut::default();
        self.decoder().decode_into(text, &mut out);
        self.nested(&out, "arithmetic");
        crate::vars::arith_names(self, text, 0);
    }

    fn function(&mut self, f: &ast::FunctionDefinition) {
        let name = {
            let mut out = DecodeOut::default();
            self.decoder().decode_into(&f.fname.value, &mut out);
            out.words
                .first()
                .map(|w| w.text.clone())
                .unwrap_or_default()
        };
        let body_text = f.body.0.to_string();
        if crate::classify::is_known_command(&name) {
            self.add(
                Decision::Deny,
                "function_shadows_command",
                &name,
                format!("defining a function named `{name}` changes what that command does for the rest of the script"),
            );
        }
        if is_fork_bomb(&name, &body_text) {
            self.add(
                Decision::Deny,
                "fork_bomb",
                &name,
                format!("function `{name}` calls itself through a pipe or in the background: a fork bomb"),
            );
        }
        self.functions.insert(name);
        self.compound(&f.body.0, &StdinKind::Terminal);
        if let Some(r) = &f.body.1 {
            self.redirects(&r.0, "function");
        }
    }

    /// Decodes words and walks their substitutions.
    pub(crate) fn words(&mut self, words: &[ast::Word]) -> Vec<Decoded> {
        self.words_of(words.iter().map(|w| w.value.as_str()))
    }

    /// As [`Walker::words`], for raw texts.
    pub(crate) fn words_of<'t>(
        &mut self,
        words: impl IntoIterator<Item = &'t str>,
    ) -> Vec<Decoded> {
        let mut out = DecodeOut::default();
        let decoder = self.decoder();
        for w in words {
            decoder.decode_into(w, &mut out);
        }
        self.nested(&out, "");
        out.words
    }

    pub(crate) fn nested_subs(&mut self, out: &DecodeOut, context: &str) {
        self.nested(out, context);
    }

    fn nested(&mut self, out: &DecodeOut, context: &str) {
        for a in &out.arith {
            // `$(( $(cat f) + 1 ))`, `${s:$1}`: an expanded value evaluated as arithmetic.
            if crate::vars::unknown_arith_source(a) {
                self.add(
                    Decision::Ask,
                    "dynamic_code_value",
                    "arithmetic",
                    format!("`{a}` expands a value only known at run time, and bash evaluates it as arithmetic, where an array subscript runs commands"),
                );
            }
            crate::vars::arith_names(self, a, 0);
        }
        for name in &out.indirect {
            crate::vars::value_as_code(
                self,
                name,
                0,
                "a variable name (`${!x}` indirection)",
                true,
            );
        }
        for s in &out.substitutions {
            let saved = self.cwd.clone();
            self.script(s, StdinKind::Terminal);
            self.cwd = saved;
        }
        for e in &out.errors {
            self.add(Decision::Deny, "parse_error", context, e.clone());
        }
        if out.words.iter().any(|w| w.prompt_expansion) {
            self.add(
                Decision::Deny,
                "prompt_expansion",
                context,
                "`${var@P}` runs the command substitutions stored in a variable, which cannot be reviewed".to_owned(),
            );
        }
    }

    /// Walks redirections; returns where stdin then comes from, if redirected.
    fn redirects(&mut self, list: &[IoRedirect], sub: &str) -> Option<StdinKind> {
        let mut stdin = None;
        for r in list {
            if let Some(s) = self.redirect(r, sub) {
                stdin = Some(s);
            }
        }
        stdin
    }

    fn redirect(&mut self, r: &IoRedirect, sub: &str) -> Option<StdinKind> {
        match r {
            IoRedirect::File(fd, kind, target) => {
                let access = match kind {
                    IoFileRedirectKind::Read => PathAccess::Read,
                    IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput => {
                        match target {
                            IoFileRedirectTarget::Duplicate(w)
                            | IoFileRedirectTarget::Filename(w) => {
                                let d = self.words(std::slice::from_ref(w));
                                let all_fd = d.iter().all(|w| {
                                    !w.dynamic
                                        && (w.text == "-"
                                            || w.text
                                                .trim_end_matches('-')
                                                .bytes()
                                                .all(|b| b.is_ascii_digit()))
                                });
                                if all_fd {
                                    return None;
                                }
                                if matches!(kind, IoFileRedirectKind::DuplicateInput) {
                                    PathAccess::Read
                                } else {
                                    PathAccess::Write
                                }
                            }
                            _ => return None,
                        }
                    }
                    _ => PathAccess::Write,
                };
                match target {
                    IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w) => {
                        let d = self.words(std::slice::from_ref(w));
                        let what = if access == PathAccess::Read {
                            "input redirection"
                        } else {
                            "output redirection"
                        };
                        for word in &d {
                            self.path(word, access, sub, what);
                        }
                        let is_stdin = fd.is_none_or(|f| f == 0) && access == PathAccess::Read;
                        is_stdin.then_some(StdinKind::Dynamic)
                    }
                    IoFileRedirectTarget::Fd(_) => None,
                    IoFileRedirectTarget::ProcessSubstitution(_, s) => {
                        let saved = self.cwd.clone();
                        self.compound_list(&s.list, &StdinKind::Terminal);
                        self.cwd = saved;
                        Some(StdinKind::Dynamic)
                    }
                }
            }
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let mut out = DecodeOut::default();
                    let dynamic = self.decoder().scan_heredoc(&doc.doc.value, &mut out);
                    self.nested(&out, "here-document");
                    if dynamic {
                        return Some(StdinKind::Dynamic);
                    }
                }
                Some(StdinKind::Literal(doc.doc.value.clone()))
            }
            IoRedirect::HereString(_, w) => {
                let d = self.words(std::slice::from_ref(w));
                match d.as_slice() {
                    [one] if !one.dynamic => Some(StdinKind::Literal(one.text.clone())),
                    _ => Some(StdinKind::Dynamic),
                }
            }
            IoRedirect::OutputAndError(w, _) => {
                let d = self.words(std::slice::from_ref(w));
                for word in &d {
                    self.path(word, PathAccess::Write, sub, "output redirection");
                }
                None
            }
        }
    }

    fn simple(&mut self, sc: &ast::SimpleCommand, stdin: &StdinKind) {
        // The words' texts, borrowed from the tree: decoding makes the owned copies.
        let mut argv: Vec<&str> = Vec::new();
        let mut redirects: Vec<&IoRedirect> = Vec::new();
        let mut assignments: Vec<(&ast::Assignment, &ast::Word)> = Vec::new();
        let mut procsubs: Vec<&ast::SubshellCommand> = Vec::new();
        let prefix = sc.prefix.iter().flat_map(|p| p.0.iter());
        let suffix = sc.suffix.iter().flat_map(|p| p.0.iter());
        let mut items: Vec<Option<&CommandPrefixOrSuffixItem>> = prefix.map(Some).collect();
        items.push(None); // the command name's position
        items.extend(suffix.map(Some));
        for item in items {
            match item {
                None => {
                    if let Some(name) = &sc.word_or_name {
                        argv.push(&name.value);
                    }
                }
                Some(CommandPrefixOrSuffixItem::IoRedirect(r)) => redirects.push(r),
                Some(CommandPrefixOrSuffixItem::Word(w)) => argv.push(&w.value),
                Some(CommandPrefixOrSuffixItem::AssignmentWord(a, w)) => {
                    if argv.is_empty() {
                        assignments.push((a, w));
                    } else {
                        argv.push(&w.value);
                    }
                }
                Some(CommandPrefixOrSuffixItem::ProcessSubstitution(_, s)) => {
                    procsubs.push(s);
                    argv.push("/dev/fd/63");
                }
            }
        }

        let decoded = self.words_of(argv);
        let display = display_words(&decoded);
        for s in procsubs {
            let saved = self.cwd.clone();
            self.compound_list(&s.list, &StdinKind::Terminal);
            self.cwd = saved;
        }
        let mut input = stdin.clone();
        let to_file = stdout_redirected(&redirects);
        for r in redirects {
            if let Some(s) = self.redirect(r, &display) {
                input = s;
            }
        }
        let mut env_names = Vec::new();
        for (a, _) in &assignments {
            let name = match &a.name {
                ast::AssignmentName::VariableName(n)
                | ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
            };
            let value = match &a.value {
                ast::AssignmentValue::Scalar(w) => {
                    let d = self.words(std::slice::from_ref(w));
                    match d.as_slice() {
                        [one] if !a.append => Some(one.clone()),
                        _ => None,
                    }
                }
                ast::AssignmentValue::Array(items) => {
                    for (k, v) in items {
                        if let Some(k) = k {
                            self.words(std::slice::from_ref(k));
                        }
                        self.words(std::slice::from_ref(v));
                    }
                    None
                }
            };
            if let ast::AssignmentName::ArrayElementName(_, idx) = &a.name {
                self.arith(idx);
            }
            if decoded.is_empty() {
                crate::vars::record(self, &name, value.as_ref());
            }
            env_names.push((name, value));
        }
        let env_depth = self.env.len();
        for (name, value) in &env_names {
            if decoded.is_empty() {
                crate::vars::check_set(self, name, name);
            } else if name != "IFS" {
                // `IFS= read -r line`: a prefix assignment of IFS only changes that one
                // command; any other waits for a program of the command that reads it.
                crate::vars::set_for_command(self, name, value.as_ref(), &display);
            }
        }
        let env_names: Vec<String> = env_names.into_iter().map(|(n, _)| n).collect();
        if decoded.is_empty() {
            if !assignments.is_empty() {
                self.add(
                    Decision::Allow,
                    "assignment",
                    &env_names.join(" "),
                    "sets shell variables".to_owned(),
                );
            } else if !self.findings.is_empty() {
                // Redirections alone (`> file`): already judged above.
            }
            return;
        }
        let before = self.findings.len();
        let piped = self.stdout_piped;
        if let Some(to_file) = to_file {
            self.stdout_piped = to_file;
        }
        crate::classify::classify(self, &decoded, &display, &input);
        self.stdout_piped = piped;
        self.env.truncate(env_depth);
        crate::destination::check(self, before, &decoded, &display);
    }
}

/// Where a command's redirections send its standard output: `Some(true)` into a file or a
/// pipe-like target (not a terminal), `Some(false)` onto the terminal (`> /dev/tty`), `None`
/// when they leave it alone. The last redirection of fd 1 wins, as in bash.
fn stdout_redirected(redirects: &[&IoRedirect]) -> Option<bool> {
    // A file is not a terminal; a device, a descriptor path or a name only known at run time
    // may be one (`> /dev/tty`, `> /dev/stderr`, `> $OUT`). `/dev/null` is not.
    let not_a_terminal = |w: &ast::Word| {
        let t = w.value.as_str();
        t == "/dev/null"
            || (!t.starts_with("/dev/")
                && !t.starts_with("/proc/")
                && !t.contains(['$', '`', '\'', '"', '\\']))
    };
    let mut out = None;
    for r in redirects {
        match r {
            IoRedirect::File(fd, kind, IoFileRedirectTarget::Filename(w))
                if fd.is_none_or(|f| f == 1)
                    && matches!(
                        kind,
                        IoFileRedirectKind::Write
                            | IoFileRedirectKind::Append
                            | IoFileRedirectKind::Clobber
                            | IoFileRedirectKind::ReadAndWrite
                    ) =>
            {
                out = Some(not_a_terminal(w));
            }
            IoRedirect::OutputAndError(w, _) => out = Some(not_a_terminal(w)),
            // `>&2`: stderr may be a terminal.
            IoRedirect::File(fd, IoFileRedirectKind::DuplicateOutput, _)
                if fd.is_none_or(|f| f == 1) =>
            {
                out = Some(false);
            }
            _ => {}
        }
    }
    out
}

/// Fills the empty parts of every `for ((init; cond; step))` header (`0`, `1`, `0`), as bash
/// reads them; says whether a condition was empty (an endless loop). `None` if nothing changed.
fn fill_for_headers(text: &str) -> Option<(String, bool)> {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    let mut changed = false;
    let mut endless = false;
    while let Some(at) = rest.find("for ((") {
        let (before, after) = rest.split_at(at + "for ((".len());
        out.push_str(before);
        let Some(end) = after.find("))") else {
            rest = after;
            break;
        };
        let (header, tail) = after.split_at(end);
        let parts: Vec<&str> = header.split(';').collect();
        if let [a, b, c] = parts.as_slice() {
            let fill = |p: &str, with: &str| {
                if p.trim().is_empty() {
                    with.to_owned()
                } else {
                    p.to_owned()
                }
            };
            changed |= a.trim().is_empty() || b.trim().is_empty() || c.trim().is_empty();
            endless |= b.trim().is_empty();
            out.push_str(&format!(
                "{};{};{}",
                fill(a, "0"),
                fill(b, "1"),
                fill(c, "0")
            ));
        } else {
            out.push_str(header);
        }
        rest = tail;
    }
    out.push_str(rest);
    changed.then_some((out, endless))
}

/// `f(){ f|f& }`-style bodies: the function calls itself through a pipe or in the background.
fn is_fork_bomb(name: &str, body: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let calls_self = body
        .split(|c: char| c.is_whitespace() || matches!(c, '|' | '&' | ';' | '{' | '}' | '(' | ')'))
        .any(|t| t == name);
    calls_self && (body.contains('|') || body.contains('&'))
}

#[cfg(test)]
mod fingerprint_tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_the_configuration_and_home() {
        let home = Some("/home/u".to_owned());
        let base = Analyzer::with_home(BashConfig::default(), home.clone());
        let same = Analyzer::with_home(BashConfig::default(), home.clone());
        assert_eq!(base.fingerprint(), same.fingerprint());
        assert_eq!(base.fingerprint(), base.clone().fingerprint());
        let stricter = BashConfig {
            deny_commands: vec!["make".to_owned()],
            ..BashConfig::default()
        };
        assert_ne!(
            base.fingerprint(),
            Analyzer::with_home(stricter, home).fingerprint()
        );
        assert_ne!(
            base.fingerprint(),
            Analyzer::with_home(BashConfig::default(), Some("/home/v".to_owned())).fingerprint()
        );
    }
}
