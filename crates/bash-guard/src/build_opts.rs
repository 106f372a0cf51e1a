//! What may follow a build tool's name on a command line the guard can still review.
//!
//! A build or test run is a known side effect: it runs the project's own code (build
//! scripts, tests, package scripts), which a person who allows `cargo test` has accepted. An
//! option can change *what* runs instead: `cargo --config target.X.runner="sh -c id"`,
//! `go test -exec`, `make CC=...`, `npm --script-shell`, `pytest -p plugin`. So a build is a
//! known side effect only while every option it is given is one this table knows to leave
//! the programs it runs unchanged; any other option, a `NAME=value` operand of `make`, or an
//! argument only known at run time makes the ask one that cannot be reviewed (the class rule
//! covers the next option nobody listed).

use crate::verdict::Decision;
use crate::walker::Walker;
use crate::words::Decoded;

/// One build tool and the options known not to change what it runs.
pub(crate) struct BuildOptions {
    /// The program name.
    pub name: &'static str,
    /// Options, long as `--name` (compared before any `=`), short as `-x` (a word starting
    /// with it: `-j4`, `-vv`). A value in the next word is read as an operand, which is fine:
    /// operands of these tools name targets, packages and test filters.
    pub options: &'static [&'static str],
    /// Operands of the form `NAME=value` set variables that name programs (`make CC=...`).
    pub assignments_run_code: bool,
    /// The word after which the rest goes to the program under test (`cargo test -- ...`).
    pub passthrough: &'static [&'static str],
}

/// Cargo: targets, features, profiles and output; not `--config`, `-Z`, `--manifest-path`,
/// `--target-dir` (a path the table does not judge).
const CARGO: &[&str] = &[
    "-p",
    "--package",
    "--workspace",
    "--all",
    "--exclude",
    "--lib",
    "--bin",
    "--bins",
    "--example",
    "--examples",
    "--test",
    "--tests",
    "--bench",
    "--benches",
    "--all-targets",
    "--doc",
    "--no-run",
    "--no-fail-fast",
    "-F",
    "--features",
    "--all-features",
    "--no-default-features",
    "-r",
    "--release",
    "--profile",
    "-j",
    "--jobs",
    "--target",
    "-q",
    "--quiet",
    "-v",
    "--verbose",
    "--color",
    "--message-format",
    "--locked",
    "--offline",
    "--frozen",
    "--keep-going",
    "--timings",
    "-h",
    "--help",
    "--ignore-rust-version",
    "--fix",
    "--allow-dirty",
    "--allow-staged",
    "--no-deps",
    "--document-private-items",
    "--check",
    "--all-features",
];

const NPM: &[&str] = &[
    "-s",
    "--silent",
    "-q",
    "--quiet",
    "--if-present",
    "--workspaces",
    "-w",
    "--workspace",
    "-r",
    "--recursive",
    "--filter",
    "--loglevel",
    "--color",
    "-h",
    "--help",
];

const GO: &[&str] = &[
    "-v",
    "-run",
    "-count",
    "-race",
    "-cover",
    "-short",
    "-timeout",
    "-tags",
    "-bench",
    "-benchmem",
    "-benchtime",
    "-p",
    "-failfast",
    "-json",
    "-mod",
    "-x",
    "-trimpath",
    "-shuffle",
];

const MAKE: &[&str] = &[
    "-j",
    "--jobs",
    "-k",
    "--keep-going",
    "-s",
    "--silent",
    "--quiet",
    "-n",
    "--dry-run",
    "-B",
    "--always-make",
    "-q",
    "--question",
    "--no-print-directory",
    "-w",
    "--print-directory",
    "-O",
    "--output-sync",
];

const PYTEST: &[&str] = &[
    "-q",
    "--quiet",
    "-v",
    "--verbose",
    "-x",
    "--exitfirst",
    "-k",
    "-m",
    "--maxfail",
    "-s",
    "--tb",
    "-r",
    "--lf",
    "--last-failed",
    "--ff",
    "--failed-first",
    "--co",
    "--collect-only",
    "--no-header",
    "--durations",
];

/// The build tools whose options are known. A build tool not listed here reviews no option:
/// any option makes its ask one that cannot be reviewed.
pub(crate) const BUILD_OPTIONS: &[BuildOptions] = &[
    BuildOptions {
        name: "cargo",
        options: CARGO,
        assignments_run_code: false,
        passthrough: &["--"],
    },
    BuildOptions {
        name: "npm",
        options: NPM,
        assignments_run_code: false,
        passthrough: &["--"],
    },
    BuildOptions {
        name: "yarn",
        options: NPM,
        assignments_run_code: false,
        passthrough: &["--"],
    },
    BuildOptions {
        name: "pnpm",
        options: NPM,
        assignments_run_code: false,
        passthrough: &["--"],
    },
    BuildOptions {
        name: "go",
        options: GO,
        assignments_run_code: false,
        passthrough: &["-args", "--args"],
    },
    BuildOptions {
        name: "make",
        options: MAKE,
        assignments_run_code: true,
        passthrough: &[],
    },
    BuildOptions {
        name: "pytest",
        options: PYTEST,
        assignments_run_code: false,
        passthrough: &[],
    },
];

/// The first argument of `name`'s command line that the table cannot vouch for, in words.
pub(crate) fn unreviewed_argument(name: &str, args: &[Decoded]) -> Option<String> {
    let entry = BUILD_OPTIONS.iter().find(|e| e.name == name);
    for a in args {
        if a.dynamic {
            return Some("an argument only known at run time".to_owned());
        }
        let text = a.text.as_str();
        if entry.is_some_and(|e| e.passthrough.contains(&text)) {
            return None;
        }
        if let Some(e) = entry
            && e.assignments_run_code
            && !text.starts_with('-')
            && text.contains('=')
        {
            return Some(format!(
                "`{text}` sets a variable the build may run as a program"
            ));
        }
        if !text.starts_with('-') || text == "-" {
            continue;
        }
        let known = entry.is_some_and(|e| known_option(e.options, text));
        if !known {
            let shown = text.split_once('=').map_or(text, |(o, _)| o);
            return Some(format!(
                "`{}` is an option this analyzer does not know to leave what `{name}` runs unchanged (it may name a runner, a wrapper, a shell or a configuration)",
                shown.chars().take(80).collect::<String>()
            ));
        }
    }
    None
}

fn known_option(options: &[&str], word: &str) -> bool {
    if word.starts_with("--") {
        let opt = word.split_once('=').map_or(word, |(o, _)| o);
        return options.contains(&opt);
    }
    // Go spells long options with one dash (`-run=X`, `-count=1`).
    let opt = word.split_once('=').map_or(word, |(o, _)| o);
    if options.contains(&opt) {
        return true;
    }
    // A short option with its value or a cluster attached: `-j4`, `-vv`, `-pfoo`.
    word.get(..2).is_some_and(|short| options.contains(&short))
}

/// Adds a `build_option` ask (cannot be reviewed) when `name`'s arguments hold one the table
/// cannot vouch for.
pub(crate) fn check(w: &mut Walker<'_>, name: &str, args: &[Decoded], sub: &str) {
    if let Some(why) = unreviewed_argument(name, args) {
        w.add(Decision::Ask, "build_option", sub, why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Decoded> {
        text.split_whitespace()
            .map(|t| Decoded {
                text: t.to_owned(),
                ..Decoded::default()
            })
            .collect()
    }

    #[test]
    fn every_listed_option_is_accepted_alone() {
        for e in BUILD_OPTIONS {
            for opt in e.options {
                assert_eq!(
                    unreviewed_argument(e.name, &words(opt)),
                    None,
                    "{} {opt}",
                    e.name
                );
            }
        }
    }

    #[test]
    fn options_that_change_what_runs_are_not() {
        for (name, line) in [
            ("cargo", "test --config target.x.runner=sh"),
            ("cargo", "test -Zbuild-std"),
            ("cargo", "build --manifest-path /tmp/x/Cargo.toml"),
            ("go", "test -exec sh ./..."),
            ("go", "build -toolexec sh"),
            ("npm", "test --script-shell=sh"),
            ("make", "CC=sh"),
            ("make", "-f /tmp/Makefile"),
            ("pytest", "-p evil"),
            ("gcc", "-O2 x.c"),
        ] {
            assert!(
                unreviewed_argument(name, &words(line)).is_some(),
                "{name} {line}"
            );
        }
    }

    #[test]
    fn plain_runs_and_passthrough_arguments_are_reviewed() {
        for (name, line) in [
            ("cargo", "test"),
            (
                "cargo",
                "test -p bash-guard --test analysis corpus -- --nocapture --config x",
            ),
            ("cargo", "+nightly build --release -j4"),
            ("npm", "test -- --watch --script-shell=x"),
            ("npm", "run build"),
            ("go", "test -v -run=TestX -count=1 ./..."),
            ("make", "-j4 all"),
            ("gcc", "x.c"),
        ] {
            assert_eq!(
                unreviewed_argument(name, &words(line)),
                None,
                "{name} {line}"
            );
        }
        let mut dynamic = words("test");
        dynamic.push(Decoded {
            text: String::new(),
            dynamic: true,
            ..Decoded::default()
        });
        assert!(unreviewed_argument("cargo", &dynamic).is_some());
    }
}
