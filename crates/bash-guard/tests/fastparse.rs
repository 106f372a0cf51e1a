#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The direct parser of the everyday command shape against brush-parser's grammar: wherever it
//! takes a command, its tree must be brush-parser's tree for the same tokens (a difference is a
//! parser differential). `check_fast_parse` panics on a difference and says whether the direct
//! parser took the text.

use std::path::{Path, PathBuf};

use bash_guard::fuzz::{FastPaths, check_fast_parse};
use proptest::prelude::*;

/// The analysis benchmark's typical command.
const TYPICAL: &str = "cd crates/bash-guard && grep -rn \"fn analyze\" src/*.rs | sort -u | head -n 20 && git diff --stat HEAD~1 -- src && find . -name '*.rs' -newer Cargo.toml | wc -l; echo \"done: $(date +%s)\" >/dev/null";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// The command of each line of a `decision | command | why` corpus file.
fn decision_corpus(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let rest = line.split_once(" | ").map_or("", |(_, r)| r);
            let command = rest.rsplit_once(" | ").map_or(rest, |(c, _)| c);
            command.replace("\\n", "\n")
        })
        .collect()
}

/// Every command the project's corpora hold: bash-guard's decision corpus, adversarial corpus,
/// benign corpus and fuzz corpus, agent-guard's policy-test cases and perm-rules' fuzz corpus.
fn corpora() -> Vec<(String, Vec<String>)> {
    let root = workspace();
    let bg = root.join("crates/bash-guard");
    let mut out = Vec::new();
    let text = std::fs::read_to_string(bg.join("tests/data/corpus.txt")).unwrap();
    out.push(("corpus.txt".to_owned(), decision_corpus(&text)));
    for p in files(&bg.join("tests/corpus")) {
        let text = std::fs::read_to_string(&p).unwrap();
        out.push((p.display().to_string(), decision_corpus(&text)));
    }
    let benign = std::fs::read_to_string(bg.join("tests/data/benign.txt")).unwrap();
    out.push((
        "benign.txt".to_owned(),
        benign
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(str::to_owned)
            .collect(),
    ));
    let raw = |dir: &Path| -> Vec<String> {
        files(dir)
            .into_iter()
            .map(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned())
            .collect()
    };
    out.push((
        "fuzz/corpus/check_command".to_owned(),
        raw(&bg.join("fuzz/corpus/check_command")),
    ));
    out.push((
        "perm-rules/tests/corpus".to_owned(),
        raw(&root.join("crates/perm-rules/tests/corpus")),
    ));
    let mut cases = Vec::new();
    for p in files(&root.join("crates/agent-guard/tests/data")) {
        if p.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line)
                && let Some(c) = v.pointer("/input/command").and_then(|c| c.as_str())
            {
                cases.push(c.to_owned());
            }
        }
    }
    assert!(!cases.is_empty(), "no agent-guard case holds a command");
    out.push(("agent-guard/tests/data/*.jsonl".to_owned(), cases));
    out
}

/// The texts nested in `command` that the analysis parses too (quoted `bash -c` strings,
/// substitutions), roughly: every stretch between two quote characters.
fn pieces(command: &str) -> impl Iterator<Item = &str> {
    command.split(['\'', '"']).filter(|p| !p.trim().is_empty())
}

#[test]
fn the_direct_parse_is_brush_parsers_on_every_corpus_command() {
    let mut total = 0usize;
    let (mut lexed, mut parsed) = (0usize, 0usize);
    let (mut benign, mut benign_lexed, mut benign_parsed) = (0usize, 0usize, 0usize);
    for (name, commands) in corpora() {
        assert!(!commands.is_empty(), "{name} is empty");
        for command in &commands {
            for text in std::iter::once(command.as_str()).chain(pieces(command)) {
                total += 1;
                let took = check_fast_parse(text);
                lexed += usize::from(took.tokens);
                parsed += usize::from(took.tree);
                if name == "benign.txt" && text == command {
                    benign += 1;
                    benign_lexed += usize::from(took.tokens);
                    benign_parsed += usize::from(took.tree);
                }
            }
        }
    }
    eprintln!(
        "of {total} texts, {lexed} cut directly and {parsed} parsed directly; \
         of {benign} benign commands, {benign_lexed} and {benign_parsed}"
    );
    // Most everyday commands are in the subset; a direct path that gave up on them would
    // cost nothing in safety but gain nothing either.
    assert!(
        benign_parsed * 2 > benign && benign_lexed * 2 > benign,
        "of {benign} benign commands only {benign_lexed} were cut and {benign_parsed} parsed directly"
    );
}

#[test]
fn the_typical_command_and_its_substitution_take_the_direct_parse() {
    let both = FastPaths {
        tokens: true,
        tree: true,
    };
    assert_eq!(check_fast_parse(TYPICAL), both);
    assert_eq!(check_fast_parse("date +%s"), both);
    for taken in [
        "git status",
        "ls -la >/dev/null 2>&1 &",
        "RUST_LOG=debug cargo test -p x 2>err.txt | tail -n 5",
        "make CC=gcc V+=1 all; echo ok\n\nls",
        "a &&\n b ||\n c |\n d",
        "echo if then fi { } ! time",
        ">out",
        "<in cat >>log 3<&0 4>&-",
        "cat x[1] a+b a[1]b",
    ] {
        assert!(
            check_fast_parse(taken).tree,
            "{taken:?} was not parsed directly"
        );
    }
    for left in [
        "",
        "\n",
        "(ls)",
        "{ ls; }",
        "! ls",
        "time ls",
        "if true; then ls; fi",
        "for x in a; do ls; done",
        "a[1]=x ls",
        "echo a[1]=x",
        "arr=(a b)",
        "f() { ls; }",
        "cat <<EOF\nx\nEOF",
        "cat <<< x",
        "ls &> x",
        "ls |& cat",
        "cat <> x",
        "ls >| x",
        "cat <(ls)",
        "diff <(ls) >(cat)",
        "((x++))",
        "[[ -f x ]]",
        "ls ;; ls",
        "; ls",
        "ls | ",
        "ls && ",
        "ls > ",
        "ls 2>",
        "ls & & ls",
        "select x in a; do ls; done",
        "coproc ls",
        "function f { ls; }",
        "echo 99999999999>x",
        ">x if",
    ] {
        assert!(!check_fast_parse(left).tree, "{left:?} was parsed directly");
    }
    for cut in [
        "a  b\tc\n\nd;e&f&&g||h|i<j>k>>l<&m>&n 2>&1",
        "echo 'a \"b\" $(c)' \"d 'e' $HOME $1 $? $ $(date +%s) $( a  b )\" x$\"y\"",
        "printf '%s\\n' \"x\ny\" 'p\nq'",
        "a#b {x} !y ~z *.rs ?[ab]",
        "\"$(a)\"$(b)",
        "$()",
    ] {
        assert!(check_fast_parse(cut).tokens, "{cut:?} was not cut directly");
    }
    for left in [
        "\\x",
        "a\\\nb",
        "`pwd`",
        "# c",
        "a # c",
        "$'x'",
        "a$'x'",
        "${x}",
        "$((1))",
        "$[1]",
        "$(a | b)",
        "$(a\tb)",
        "$(a \"b\")",
        "$(a $b)",
        "$(a (b))",
        "$(a #b)",
        "@(x)",
        "(a)",
        "a <<b",
        "a <<<b",
        "a &>b",
        "a ;; b",
        "caf\u{e9}",
        "a\rb",
        "'unterminated",
        "\"unterminated",
        "$(unterminated",
    ] {
        assert!(!check_fast_parse(left).tokens, "{left:?} was cut directly");
    }
}

/// Words both direct paths take: plain, quoted, `$NAME`, `$(..)` over plain text, globs,
/// assignments, numbers.
fn plain_word() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-z][a-z0-9._/-]{0,6}",
        "-{1,2}[a-z]{1,5}(=[a-z0-9]{1,3})?",
        "[A-Z_][A-Z0-9_]{0,4}\\+?=[a-z0-9$/]{0,4}",
        // No `<` in quotes: a quoted `<<` before a `$` or at the end is refused by the scan
        // (an empty here-document delimiter cannot be told apart), which this test is not about.
        "'[ -&(-;=-~]{0,6}'",
        "\"[ !#%-;=-\\[\\]-_a-~]{0,6}\"",
        Just("\"fn analyze\"".to_owned()),
        Just("'*.rs'".to_owned()),
        Just("src/*.rs".to_owned()),
        Just("\"done: $(date +%s)\"".to_owned()),
        Just("$(git rev-parse --show-toplevel)".to_owned()),
        Just("$HOME/x".to_owned()),
        Just("~/src".to_owned()),
        Just("{a,b}".to_owned()),
        Just("x[1]".to_owned()),
        "[0-9]{1,3}",
    ]
    .boxed()
}

/// Words the direct parser takes but the direct tokenizer leaves to brush-parser's.
fn subset_word() -> BoxedStrategy<String> {
    prop_oneof![
        3 => plain_word(),
        1 => prop::sample::select(vec!["$(ls -1 | wc -l)", "`pwd`", "a\\ b", "${x:-y}", "$'\\t'"])
            .prop_map(str::to_owned),
    ]
    .boxed()
}

/// Redirections of the subset.
fn subset_redirect() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(">/dev/null".to_owned()),
        Just("2>&1".to_owned()),
        Just("> out.txt".to_owned()),
        Just(">>log".to_owned()),
        Just("2>err".to_owned()),
        Just("< in".to_owned()),
        Just("0<in".to_owned()),
        Just("3>&-".to_owned()),
        Just("<&3".to_owned()),
        Just("1>>x".to_owned()),
    ]
}

fn subset_simple(word: BoxedStrategy<String>) -> impl Strategy<Value = String> {
    (
        prop::collection::vec(
            prop_oneof![
                "[A-Za-z_][A-Za-z0-9_]{0,4}\\+?=[a-z0-9$/.]{0,4}",
                subset_redirect()
            ],
            0..3,
        ),
        prop::collection::vec(prop_oneof![3 => word, 1 => subset_redirect()], 0..5),
        "[a-z][a-z0-9-]{0,5}",
    )
        .prop_map(|(prefix, rest, name)| {
            // A command name that is no reserved word and no assignment.
            let name = match name.as_str() {
                "if" | "in" | "do" | "fi" | "for" | "case" | "done" | "else" | "elif" | "esac"
                | "then" | "time" | "until" | "while" | "select" | "coproc" | "function" => {
                    format!("{name}x")
                }
                _ => name,
            };
            prefix
                .into_iter()
                .chain(std::iter::once(name))
                .chain(rest)
                .collect::<Vec<_>>()
                .join(" ")
        })
}

/// A command of the subset: simple commands in pipelines, and-or lists and sequences.
fn command_of(word: fn() -> BoxedStrategy<String>) -> impl Strategy<Value = String> {
    (
        subset_simple(word()),
        prop::collection::vec(
            (
                prop_oneof![
                    Just(" | "),
                    Just("|"),
                    Just(" && "),
                    Just(" ||\n"),
                    Just("; "),
                    Just(" & "),
                    Just("\n"),
                    Just(";\n\n"),
                    Just(" |\n "),
                    Just("\t&&\t"),
                ],
                subset_simple(word()),
            ),
            0..6,
        ),
        prop_oneof![Just(""), Just(";"), Just(" &"), Just("\n"), Just(" ;\n")],
    )
        .prop_map(|(first, rest, end)| {
            let mut s = first;
            for (op, c) in rest {
                s.push_str(op);
                s.push_str(&c);
            }
            s.push_str(end);
            s
        })
}

fn subset_command() -> impl Strategy<Value = String> {
    command_of(subset_word)
}

fn plain_command() -> impl Strategy<Value = String> {
    command_of(plain_word)
}

/// Tokens from the subset and just outside it, to be joined with or without blanks.
fn near_miss_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => subset_word(),
        2 => subset_redirect(),
        1 => prop::sample::select(vec![
            "if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until",
            "case", "esac", "time", "-p", "!", "{", "}", "[[", "]]", "function", "select",
            "coproc", "#", "# c", "\\", "\\\n", "'", "\"", "$(", ")", "(", "((", "))", "`",
            ";", "&", "&&", "||", "|", "|&", ";;", ";&", ";;&", "\n", "<", ">", ">>", "<<",
            "<<-", "<<<", "<&", ">&", "<>", ">|", "&>", "&>>", "<(", ">(", "=", "a=", "a+=",
            "a[1]=x", "a[", "]=", "x=(", "2", "99999999999", "2>", "-", "2>&", "f()", "{x}>",
            "\t", " ", "$'x'", "${x}", "$((1))", "$[1]", "$(a b)", "$( a  b )", "$(a\tb)",
            "\"$(a)\"", "@(x)", "\r", "\u{e9}", "\"x\ny\"", "'x\ny'", "$\"x\"", "a$", "\"$'\"",
            "$", "$(", "$(a", "a#b", "x#", "\"'\"", "<<  ", "\u{c}",
        ])
        .prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn a_subset_command_takes_the_direct_parse_to_brush_parsers_tree(c in subset_command()) {
        prop_assert!(check_fast_parse(&c).tree, "{:?} was not parsed directly", c);
    }

    #[test]
    fn a_plain_subset_command_takes_both_direct_paths(c in plain_command()) {
        let took = check_fast_parse(&c);
        prop_assert!(took.tokens && took.tree, "{:?}: {:?}", c, took);
    }

    #[test]
    fn near_misses_parse_as_brush_parser_parses_them(
        pieces in prop::collection::vec((near_miss_piece(), prop_oneof![Just(" "), Just("")]), 1..14)
    ) {
        let text: String = pieces.into_iter().flat_map(|(p, sep)| [p, sep.to_owned()]).collect();
        check_fast_parse(&text);
    }

    #[test]
    fn arbitrary_text_parses_as_brush_parser_parses_it(s in "[a-z0-9 =+|&;<>()\\[\\]{}!#'\"$\\\\\n\t`@*?%-]{0,40}") {
        check_fast_parse(&s);
    }
}
