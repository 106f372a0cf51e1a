#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Behaviour tests of the analyzer: the corpus, properties, the cache and the fuzz corpus.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bash_guard::{
    Analyzer, BashConfig, CachedAnalyzer, Decision, PathAccess, PathJudge, PathVerdict, Verdict,
    simple_commands,
};
use proptest::prelude::*;

const HOME: &str = "/home/agent";

/// A judge over lexical paths: one writable root (the project) and `/usr` read-only.
struct TestJudge {
    root: PathBuf,
}

fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

impl PathJudge for TestJudge {
    fn judge(&self, path: &str, access: PathAccess, cwd: &Path) -> PathVerdict {
        let abs = normalize(&cwd.join(path));
        if abs == self.root {
            return PathVerdict::Root;
        }
        if abs.starts_with(&self.root) {
            return PathVerdict::Inside;
        }
        if abs.starts_with("/usr") {
            return match access {
                PathAccess::Read => PathVerdict::Inside,
                PathAccess::Write => PathVerdict::Denied {
                    code: "read_only_root".into(),
                    message: "read-only root".into(),
                },
            };
        }
        PathVerdict::OutsideRoots
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    analyzer: Analyzer,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    Fixture {
        _dir: dir,
        root,
        analyzer: Analyzer::with_home(BashConfig::default(), Some(HOME.to_owned())),
    }
}

impl Fixture {
    fn check(&self, command: &str) -> Verdict {
        let judge = TestJudge {
            root: self.root.clone(),
        };
        self.analyzer.analyze(command, &self.root, &judge)
    }
}

/// One corpus case: expected decision, command, why, line.
type Case = (Decision, String, String, usize);

fn corpus() -> Vec<Case> {
    parse_corpus(include_str!("data/corpus.txt"))
}

/// The adversarial corpus in `tests/corpus/`, one file per area, with file names for messages.
fn adversarial() -> Vec<(String, Vec<Case>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                parse_corpus(&text),
            )
        })
        .collect()
}

#[test]
fn adversarial_corpus_decisions() {
    let blocked = fixture();
    // `net-open-*.txt` is judged with the network allowed: what a network client's options
    // read and write must be refused even when the transfer itself would only ask.
    let mut open = fixture();
    open.analyzer = Analyzer::with_home(
        BashConfig {
            block_network: false,
            ..BashConfig::default()
        },
        Some(HOME.to_owned()),
    );
    let mut failures = Vec::new();
    let mut n = 0;
    for (file, cases) in adversarial() {
        let f = if file.starts_with("net-open") {
            &open
        } else {
            &blocked
        };
        for (expected, command, why, line) in cases {
            n += 1;
            let v = f.check(&command);
            if v.decision != expected {
                failures.push(format!(
                    "{file}:{line}: `{command}` expected {expected}, got {} ({why})\n    {:?}",
                    v.decision,
                    v.findings
                        .iter()
                        .map(|f| format!("{} {} [{}]", f.decision, f.code, f.subcommand))
                        .collect::<Vec<_>>()
                ));
            }
        }
    }
    assert!(n >= 100, "{n}");
    assert!(
        failures.is_empty(),
        "{} of {n} adversarial cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_variable_table_entry_has_a_corpus_case() {
    let cases: Vec<String> = adversarial()
        .into_iter()
        .flat_map(|(_, c)| c.into_iter().map(|(_, command, _, _)| command))
        .collect();
    for pattern in bash_guard::tidy::variable_patterns() {
        let stem = pattern.trim_end_matches('*');
        assert!(
            cases.iter().any(|c| c.contains(stem)),
            "the variable table entry `{pattern}` has no case in tests/corpus/"
        );
    }
}

#[test]
fn every_effect_option_of_the_command_table_has_a_corpus_case() {
    assert!(bash_guard::tidy::table_parses());
    let cases: Vec<String> = adversarial()
        .into_iter()
        .flat_map(|(_, c)| c.into_iter().map(|(_, command, _, _)| command))
        .collect();
    let mut missing = Vec::new();
    for (command, option) in bash_guard::tidy::effect_options() {
        let found = cases.iter().any(|c| {
            c.split_whitespace().next() == Some(command.as_str())
                && c.split_whitespace().any(|w| {
                    w == option
                        || w.starts_with(&format!("{option}="))
                        || (option.len() == 2
                            && w.starts_with('-')
                            && !w.starts_with("--")
                            && w.contains(&option[1..]))
                })
        });
        if !found {
            missing.push(format!("{command} {option}"));
        }
    }
    assert!(
        missing.is_empty(),
        "table options without a corpus case: {missing:?}"
    );
}

#[test]
fn every_command_table_entry_has_a_corpus_case() {
    let cases: Vec<Vec<String>> = adversarial()
        .into_iter()
        .flat_map(|(_, c)| c.into_iter().map(|(_, command, _, _)| command))
        .chain(corpus().into_iter().map(|(_, command, _, _)| command))
        .map(|c| c.split_whitespace().map(str::to_owned).collect())
        .collect();
    let mut missing = Vec::new();
    for entry in bash_guard::tidy::table_entries() {
        let mut parts = entry.split(' ');
        let command = parts.next().unwrap_or_default();
        let subs: Vec<&str> = parts.collect();
        // `git *` is any subcommand the table does not list: a case with an unlisted one.
        let found = cases.iter().any(|words| {
            words.first().map(String::as_str) == Some(command)
                && subs.iter().all(|s| {
                    if *s == "*" {
                        words.iter().any(|w| w == "frobnicate")
                    } else {
                        words.iter().any(|w| w == s)
                    }
                })
        });
        if !found {
            missing.push(entry);
        }
    }
    assert!(
        missing.is_empty(),
        "command table entries without a corpus case: {missing:?}"
    );
}

fn parse_corpus(text: &str) -> Vec<Case> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut parts = line.splitn(2, " | ");
        let decision = match parts.next().unwrap().trim() {
            "allow" => Decision::Allow,
            "ask" => Decision::Ask,
            "deny" => Decision::Deny,
            other => panic!("line {}: bad decision `{other}`", n + 1),
        };
        let rest = parts.next().unwrap_or("");
        let (command, why) = rest.rsplit_once(" | ").unwrap_or((rest, ""));
        out.push((
            decision,
            command.replace("\\n", "\n"),
            why.to_owned(),
            n + 1,
        ));
    }
    out
}

#[test]
fn corpus_has_at_least_200_commands() {
    assert!(corpus().len() >= 200, "{}", corpus().len());
}

#[test]
fn corpus_decisions() {
    let f = fixture();
    let mut failures = Vec::new();
    for (expected, command, why, line) in corpus() {
        let v = f.check(&command);
        if v.decision != expected {
            failures.push(format!(
                "line {line}: `{command}` expected {expected}, got {} ({why})\n    {:?}",
                v.decision,
                v.findings
                    .iter()
                    .map(|f| format!("{} {} [{}]", f.decision, f.code, f.subcommand))
                    .collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_refusal_names_a_finding_with_a_code() {
    let f = fixture();
    for (_, command, _, _) in corpus() {
        let v = f.check(&command);
        assert!(
            v.findings
                .iter()
                .any(|x| x.decision == v.decision && !x.code.is_empty()),
            "{command}"
        );
    }
}

#[test]
fn network_class_follows_the_config() {
    let f = fixture();
    let open = Analyzer::with_home(
        BashConfig {
            block_network: false,
            ..BashConfig::default()
        },
        Some(HOME.into()),
    );
    let judge = TestJudge {
        root: f.root.clone(),
    };
    assert_eq!(f.check("curl https://example.com").decision, Decision::Deny);
    assert_eq!(
        open.analyze("curl https://example.com", &f.root, &judge)
            .decision,
        Decision::Ask
    );
    assert_eq!(
        open.analyze("git push", &f.root, &judge).decision,
        Decision::Ask
    );
}

#[test]
fn parse_errors_are_denied_with_the_parser_message() {
    let v = fixture().check("echo \"unterminated");
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.findings.iter().any(|f| f.code == "parse_error"), "{v:?}");
}

#[test]
fn simple_commands_lists_every_subcommand() {
    let got = simple_commands("git status && (ls -la | wc -l); echo \"$(r''m -rf x)\"").unwrap();
    for want in ["git status", "ls -la", "wc -l", "rm -rf x"] {
        assert!(got.iter().any(|g| g == want), "{want} missing from {got:?}");
    }
    assert!(simple_commands("echo \"oops").is_err());
}

#[test]
fn cache_answers_repeats_and_respects_the_key() {
    let f = fixture();
    let judge = Arc::new(TestJudge {
        root: f.root.clone(),
    });
    let cached = CachedAnalyzer::new(f.analyzer.clone(), judge, 16);
    let a = cached.analyze("git status", &f.root);
    let b = cached.analyze("git status", &f.root);
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(
        cached.analyze("cat a.txt", &f.root).decision,
        Decision::Allow
    );
    // Same command, other cwd: a new verdict, judged against that cwd.
    assert_eq!(
        cached.analyze("cat a.txt", Path::new("/etc")).decision,
        Decision::Ask
    );
}

fn check_str(command: &str) -> Decision {
    let analyzer = Analyzer::with_home(BashConfig::default(), Some(HOME.to_owned()));
    let judge = TestJudge {
        root: PathBuf::from("/proj"),
    };
    analyzer
        .analyze(command, Path::new("/proj"), &judge)
        .decision
}

fn command_strategy() -> impl Strategy<Value = String> {
    let f = fixture();
    let cmds: Vec<String> = corpus()
        .into_iter()
        .map(|(_, c, _, _)| c)
        .filter(|c| {
            !c.contains('\n') && !c.contains('\'') && !c.contains('#') && !c.trim().is_empty()
        })
        .filter(|c| f.check(c).findings.iter().all(|x| x.code != "parse_error"))
        .collect();
    proptest::sample::select(cmds)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn wrapping_never_lowers_the_decision(c in command_strategy()) {
        let base = check_str(&c);
        for wrapped in [
            format!("( {c}\n)"),
            format!("{{ {c}\n}}"),
            format!("bash -c '{c}'"),
            format!("echo \"$( {c}\n)\""),
            format!("true | {c}"),
            format!("{c}\n true"),
            format!("{c}; true"),
            format!("env {c}"),
            format!("timeout 5 {c}"),
        ] {
            let w = check_str(&wrapped);
            prop_assert!(w >= base, "`{}` is {} but `{}` is {}", c, base, wrapped, w);
        }
    }

    #[test]
    fn adding_a_subcommand_never_lowers_the_decision(a in command_strategy(), b in command_strategy()) {
        let da = check_str(&a);
        let both = check_str(&format!("{a}\n{b}"));
        prop_assert!(both >= da, "`{}` is {} but with `{}` it is {}", a, da, b, both);
    }

    #[test]
    fn never_panics(s in ".{0,200}") {
        bash_guard::fuzz::check_command(s.as_bytes());
    }
}

/// The shapes that crash or stall a naive parser, at many times the caps.
fn hostile_shapes() -> Vec<(&'static str, String)> {
    let n = 4800; // 100x the nesting cap
    vec![
        ("subshells", "( ".repeat(n) + "ls" + &" )".repeat(n)),
        ("groups", "{ ".repeat(n) + "ls;" + &" }".repeat(n)),
        (
            "substitutions",
            "echo ".to_owned() + &"\"$(".repeat(n) + "ls" + &")\"".repeat(n),
        ),
        (
            "ifs",
            "if true; then ".repeat(n) + "ls;" + &" fi;".repeat(n),
        ),
        (
            "defaults",
            "echo ".to_owned() + &"${x:-".repeat(n) + "a" + &"}".repeat(n),
        ),
        (
            "arithmetic",
            "echo ".to_owned() + &"$((".repeat(n) + "1" + &"))".repeat(n),
        ),
        (
            "backticks",
            "echo ".to_owned() + &"`echo \\".repeat(12) + "`",
        ),
        (
            "nested braces",
            "echo ".to_owned() + &"{".repeat(40) + "a,b" + &"}".repeat(40),
        ),
        (
            "brace product",
            "echo ".to_owned() + &"{a,b,c,d}".repeat(40),
        ),
        (
            "brace sequence",
            "echo {1..99999999999999999999}".to_owned(),
        ),
        ("tilde number", "ls ~+99999999999999999999999".to_owned()),
        ("fd number", "echo 99999999999>x".to_owned()),
        ("one mebibyte", "echo ".to_owned() + &"a".repeat(1 << 20)),
        ("many commands", "ls; ".repeat(5000)),
        (
            "decoded nesting",
            "bash -c $'".to_owned() + &"\\x28".repeat(5000) + "'",
        ),
        ("unterminated quote", "\"$(".to_owned() + &"( ".repeat(n)),
        (
            "quote inside default",
            "echo \"${x:-'}\" ".to_owned() + &"( ".repeat(n) + &" )".repeat(n),
        ),
        ("spaced double paren", "( (rm -rf ~) )".to_owned()),
        // brush-parser's tokenizer allocates without end on these.
        ("empty here-doc delimiter", "cat <<'' ".to_owned()),
        ("empty here-doc delimiter, strip", "x <<-\"\" ".to_owned()),
        ("empty here-doc delimiter, list", "x <<\"\";y ".to_owned()),
        (
            "empty here-doc delimiter, nested",
            "echo \"$(cat <<'' )\"".to_owned(),
        ),
        // Inside `$(..)` brush-parser keeps blanks, so this `#` starts no comment there.
        (
            "empty here-doc delimiter, after a hash",
            "$(x  #<<\"\" )".to_owned(),
        ),
        (
            "empty here-doc delimiter, continued",
            "x <<\\\n'' ".to_owned(),
        ),
        ("empty here-doc delimiter, blank", "$(cat << )".to_owned()),
        // Inside `$(..)` the delimiter brush-parser cuts is the second blank, or a token
        // cut inside the nested `$(`.
        (
            "here-doc delimiter after two blanks",
            "$(cat <<  x)".to_owned(),
        ),
        (
            "here-doc delimiter of white space",
            "x <<-\r 0<in | ".to_owned(),
        ),
        // Every quote character is dropped from a delimiter, nested or not.
        ("here-doc delimiter of quotes", "1>>x<< \"'\" ".to_owned()),
        (
            "here-doc delimiter in a nested substitution",
            "$(a/>/dev/null<< $( < --mvv\"fn analyze\" ".to_owned(),
        ),
    ]
}

#[test]
fn shift_operators_and_here_strings_are_no_empty_here_documents() {
    let f = fixture();
    for c in [
        "grep -n '<<' src/main.rs",
        "grep -rn \"<<\" src",
        "echo \"a << b\"",
        "echo $((1 << 2))",
        "cat <<< \"\"",
        "cat <<<''",
        "cat <<'EOF'\nx\nEOF",
        "cat <<-\"EOF\"\n\tx\n\tEOF",
        "cat <<\\EOF\nx\nEOF",
        "cat << EOF\nx\nEOF",
        "echo \"$(cat <<EOF\nx\nEOF\n)\"",
        "grep -c '<<' a '>>' b",
        "sed -n '/<<EOF/p' f",
    ] {
        let v = f.check(c);
        assert!(
            v.findings.iter().all(|x| x.code != "parse_error"),
            "{c:?}: {v:?}"
        );
    }
}

#[test]
fn hostile_shapes_are_refused_on_a_small_stack() {
    // Test threads have a 2 MiB stack: the analyzer must not depend on the caller's.
    let f = fixture();
    for (name, command) in hostile_shapes() {
        let v = f.check(&command);
        assert_ne!(v.decision, Decision::Allow, "{name}: {v:?}");
        assert!(
            v.findings
                .iter()
                .any(|x| x.decision == v.decision && !x.code.is_empty()),
            "{name}"
        );
        if name != "spaced double paren" && name != "brace product" {
            assert!(simple_commands(&command).is_err(), "{name} was split");
        }
    }
}

#[test]
fn spaced_double_parens_are_subshells() {
    let f = fixture();
    for c in [
        "( (rm -rf ~) )",
        "((rm -rf ~) )",
        "( (rm -rf ~))",
        "echo $( (rm -rf ~) )",
    ] {
        assert_eq!(f.check(c).decision, Decision::Deny, "{c}");
    }
    assert_eq!(f.check("(( i = 1 + 2 ))").decision, Decision::Allow);
    assert_eq!(f.check("( (ls) )").decision, Decision::Allow);
}

#[test]
fn a_parse_error_anywhere_makes_the_command_unsplittable() {
    for c in [
        "echo ok; echo \"$(echo \"oops)\"",
        "bash -c 'echo \"unterminated'",
        "cat <<EOF\n$(echo \"x)\nEOF",
        "echo 99999999999>x",
    ] {
        assert!(simple_commands(c).is_err(), "{c}");
    }
    assert!(simple_commands("ls && bash -c 'git status'").is_ok());
}

#[test]
fn fuzz_corpus_holds_the_invariants() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/check_command");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        bash_guard::fuzz::check_command(&data);
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn the_agent_running_the_guard_cli_is_denied_with_the_reason() {
    let f = fixture();
    for command in [
        "agent-guard allow-once 4F2K",
        "./target/debug/agent-guard allow-once 4F2K",
        "cargo run -p agent-guard -- allow-once 4F2K",
    ] {
        let v = f.check(command);
        assert_eq!(v.decision, Decision::Deny, "{command}");
        assert!(
            v.findings.iter().any(|x| x.code == "denied_command"
                && x.message.contains("the agent cannot approve its own calls")),
            "{command}: {:?}",
            v.findings
        );
    }
}

/// Bash expands a glob word before the command runs: the names it expands to are judged, not
/// only its directory (`cat .en?` reads `.env`).
#[test]
fn glob_words_are_judged_by_the_names_they_expand_to() {
    let f = fixture();
    for file in [".env", "main.rs", "lib.rs", "sub/.env"] {
        let path = f.root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    for command in [
        "cat .en?",
        "cat .e*",
        "cat .*",
        "head */.env",
        "cat */.e*",
        "cp .e* copy/",
        "grep KEY .[a-z]nv",
    ] {
        let v = f.check(command);
        assert_ne!(v.decision, Decision::Allow, "{command}: {v:?}");
    }
    // A directory too large to expand over asks: its names are not seen.
    let big = f.root.join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..4100 {
        std::fs::write(big.join(format!("f{i}")), "").unwrap();
    }
    let v = f.check("cat big/*.rs");
    assert_eq!(v.decision, Decision::Ask, "{v:?}");
    // `*` skips dot-names and `[.]` never matches a leading dot, as in bash.
    for command in ["cat *.rs", "wc -l *", "cat [.]env", "ls */"] {
        let v = f.check(command);
        assert_eq!(v.decision, Decision::Allow, "{command}: {v:?}");
    }
}

/// A fixture with the network allowed and `terraform` in `ask_commands` (the settings the
/// examples of the ask-kind table need).
fn ask_kind_fixture() -> Fixture {
    let mut f = fixture();
    f.analyzer = Analyzer::with_home(
        BashConfig {
            block_network: false,
            ask_commands: vec!["terraform".to_owned()],
            ..BashConfig::default()
        },
        Some(HOME.to_owned()),
    );
    f
}

#[test]
fn every_ask_kind_entry_is_earned_by_its_example() {
    let f = ask_kind_fixture();
    let mut failures = Vec::new();
    for entry in bash_guard::ASK_KINDS {
        let v = f.check(entry.example);
        let hit = v
            .findings
            .iter()
            .find(|x| x.code == entry.code && x.decision == Decision::Ask);
        match hit {
            Some(finding) => assert_eq!(finding.ask_kind(), Some(entry.kind), "{}", entry.code),
            None => failures.push(format!(
                "`{}` ({}) gave {:?}",
                entry.example,
                entry.code,
                v.findings
                    .iter()
                    .map(|x| format!("{} {}", x.decision, x.code))
                    .collect::<Vec<_>>()
            )),
        }
        assert_eq!(
            bash_guard::ask_kind(entry.code),
            entry.kind,
            "{}",
            entry.code
        );
        assert_eq!(
            bash_guard::ASK_KINDS
                .iter()
                .filter(|e| e.code == entry.code)
                .count(),
            1,
            "{} is listed twice",
            entry.code
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unlisted_ask_code_cannot_be_reviewed_and_no_other_finding_has_a_kind() {
    assert_eq!(
        bash_guard::ask_kind("a_code_nobody_wrote"),
        bash_guard::AskKind::Unreviewable
    );
    let f = fixture();
    let v = f.check("ls; rm -rf /");
    assert!(
        v.findings
            .iter()
            .all(|x| x.decision == Decision::Ask || x.ask_kind().is_none())
    );
}

#[test]
fn every_ask_code_of_the_corpus_has_a_kind_in_the_table() {
    // A code missing from the table fails closed (cannot be reviewed), which is friction for
    // a side effect: every code the corpus meets must have been classified on purpose.
    let f = ask_kind_fixture();
    let mut missing = std::collections::BTreeSet::new();
    let cases = corpus()
        .into_iter()
        .chain(adversarial().into_iter().flat_map(|(_, cases)| cases));
    for (_, command, _, _) in cases {
        for finding in f.check(&command).findings {
            if finding.decision == Decision::Ask
                && !bash_guard::ASK_KINDS.iter().any(|e| e.code == finding.code)
            {
                missing.insert(finding.code);
            }
        }
    }
    assert!(missing.is_empty(), "ask codes without a kind: {missing:?}");
}

#[test]
fn a_build_is_a_side_effect_until_an_option_could_change_what_it_runs() {
    let f = ask_kind_fixture();
    let kinds = |c: &str| -> Vec<bash_guard::AskKind> {
        f.check(c)
            .findings
            .iter()
            .filter_map(|x| x.ask_kind())
            .collect()
    };
    for c in [
        "cargo test",
        "cargo build --release",
        "npm test",
        "go test ./...",
        "make -j4",
    ] {
        assert_eq!(kinds(c), vec![bash_guard::AskKind::SideEffect], "{c}");
    }
    for c in [
        r#"cargo test --config 'target.x86_64-unknown-linux-gnu.runner="sh -c id"'"#,
        "cargo test $OPTS",
        "make CC=./evil",
        "timeout 60 go test -exec ./evil ./...",
    ] {
        assert!(
            kinds(c).contains(&bash_guard::AskKind::Unreviewable),
            "{c}: {:?}",
            f.check(c).findings
        );
    }
}

/// `rm -rf link/` follows the symlink: with the slash, rm removes the tree the link points to,
/// so a link to the project (or the home, or `/`) is judged as that directory (issue 25).
#[test]
fn a_trailing_slash_on_a_symlink_removes_its_target() {
    let f = fixture();
    std::os::unix::fs::symlink(&f.root, f.root.join("link")).unwrap();
    std::os::unix::fs::symlink("/", f.root.join("rootlink")).unwrap();
    for command in ["rm -rf link/", "rm -r rootlink/", "chmod -R 777 link/"] {
        let v = f.check(command);
        assert_eq!(v.decision, Decision::Deny, "{command}: {v:?}");
        assert!(
            v.findings.iter().any(|x| x.code == "destroys_system"),
            "{command}: {v:?}"
        );
    }
    // Without the slash only the link itself goes.
    for command in ["rm -rf link", "rm rootlink"] {
        let v = f.check(command);
        assert_eq!(v.decision, Decision::Ask, "{command}: {v:?}");
    }
}

/// The tree readers of issue 29 item 4 consult the judge's `secrets_below`, as `grep -r` does:
/// the guard's own state directory (`~/.agent-guard`) below a read-only home is refused.
#[test]
fn tree_readers_ask_the_judge_what_lies_below() {
    struct StateJudge;
    impl PathJudge for StateJudge {
        fn judge(&self, _: &str, _: PathAccess, _: &Path) -> PathVerdict {
            PathVerdict::Inside
        }
        fn secrets_below(&self, path: &str, cwd: &Path) -> Option<String> {
            let abs = normalize(&cwd.join(path));
            Path::new("/home/agent/.agent-guard")
                .starts_with(&abs)
                .then(|| "the guard's own state".to_owned())
        }
    }
    let an = Analyzer::with_home(BashConfig::default(), Some(HOME.to_owned()));
    for command in [
        "tar cf - ~/.agent-guard",
        "tar -c -f /dev/null /home/agent",
        "git diff --no-index ~/.agent-guard /tmp/empty",
        "zip -r /dev/null ~/.agent-guard",
        "grep -r x ~/.agent-guard",
    ] {
        let v = an.analyze(command, Path::new("/work"), &StateJudge);
        assert!(
            v.findings.iter().any(|x| x.code == "reads_secrets_tree"),
            "{command}: {v:?}"
        );
        assert_eq!(v.decision, Decision::Deny, "{command}");
    }
    let v = an.analyze("tar cf - src", Path::new("/work"), &StateJudge);
    assert_ne!(v.decision, Decision::Deny, "{v:?}");
}

/// The analysis modules import one way (docs/architecture.md): a module names only modules of
/// a lower layer, so the judges never reach back into the walk that calls them.
#[test]
fn analysis_modules_import_one_way() {
    let layers: &[(&str, usize)] = &[
        ("stores", 0),
        ("vartable", 0),
        ("walker", 1),
        ("vars", 2),
        ("awk", 2),
        ("destination", 2),
        ("builtins", 3),
        ("classify", 4),
        ("analyze", 5),
    ];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for (module, rank) in layers {
        let text = std::fs::read_to_string(src.join(format!("{module}.rs"))).unwrap();
        for (other, other_rank) in layers {
            if other != module
                && other_rank >= rank
                && (text.contains(&format!("crate::{other}::"))
                    || text.contains(&format!("crate::{other};"))
                    || text.contains(&format!("crate::{other}::{{")))
            {
                wrong.push(format!("{module} -> {other}"));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layering: {wrong:?}");
}

/// The benign corpus (`tests/data/benign.txt`): everyday read-only and query commands as
/// developers type them, from the EXAMPLES sections of the manuals on a Debian machine, the
/// tools' documentation and the allow-labelled cases of peer guards' suites. Friction is a
/// defect: at most 2% may ask, and none may be denied.
#[test]
fn benign_corpus_friction_is_low() {
    let f = fixture();
    let text = include_str!("data/benign.txt");
    let mut asked = Vec::new();
    let mut denied = Vec::new();
    let mut n = 0usize;
    for (line, command) in text.lines().enumerate() {
        if command.starts_with('#') || command.trim().is_empty() {
            continue;
        }
        n += 1;
        let v = f.check(command);
        let why = v
            .findings
            .iter()
            .filter(|x| x.decision != Decision::Allow)
            .map(|x| format!("{} {}: {}", x.decision, x.code, x.message))
            .collect::<Vec<_>>()
            .join("; ");
        match v.decision {
            Decision::Allow => {}
            Decision::Ask => {
                asked.push(format!("benign.txt:{}: `{command}` asks ({why})", line + 1))
            }
            Decision::Deny => {
                denied.push(format!(
                    "benign.txt:{}: `{command}` denied ({why})",
                    line + 1
                ));
            }
        }
    }
    assert!(
        n >= 1000,
        "the benign corpus has {n} commands, fewer than 1000"
    );
    let share = |k: usize| 100.0 * k as f64 / n as f64;
    println!(
        "benign corpus: {n} commands, {} asked ({:.2}%), {} denied ({:.2}%)",
        asked.len(),
        share(asked.len()),
        denied.len(),
        share(denied.len())
    );
    for o in asked.iter().chain(&denied) {
        println!("  {o}");
    }
    assert!(
        denied.is_empty(),
        "{} benign commands denied:\n{}",
        denied.len(),
        denied.join("\n")
    );
    assert!(
        asked.len() * 50 <= n,
        "{} of {n} benign commands ask ({:.2}%, above 2%):\n{}",
        asked.len(),
        share(asked.len()),
        asked.join("\n")
    );
}

/// `$HOME` names the home directory in the messages and in the simple commands rules match,
/// as `~` does: `cat $HOME/.ssh/id_rsa` is quoted with the key's real path, not `/.ssh/id_rsa`.
#[test]
fn home_variable_is_shown_as_the_home_directory() {
    let f = fixture();
    for command in ["cat $HOME/.ssh/id_rsa", "cat \"${HOME}/.ssh/id_rsa\""] {
        let v = f.check(command);
        assert_eq!(v.decision, Decision::Deny, "{command}: {v:?}");
        assert_eq!(
            v.simple_commands().unwrap(),
            vec![format!("cat {HOME}/.ssh/id_rsa")],
            "{command}"
        );
        assert!(
            v.findings.iter().all(|x| !x.subcommand.contains(" /.ssh")),
            "{command}: {v:?}"
        );
    }
}
