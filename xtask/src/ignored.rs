//! The ignored-test summary of `cargo xtask ci`: a skipped test must be visible, counted and
//! explained, never a silent pass.

/// What libtest's output says about ignored tests.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Ignored {
    /// The sum of `N ignored` over every `test result:` line.
    pub count: usize,
    /// `name: reason` for every `test name ... ignored[, reason]` line.
    pub tests: Vec<String>,
}

/// Reads libtest's output (the stdout of `cargo test`).
pub(crate) fn parse(output: &str) -> Ignored {
    let mut ignored = Ignored::default();
    for line in output.lines() {
        if let Some(summary) = line.strip_prefix("test result: ") {
            ignored.count += summary
                .split(';')
                .filter_map(|part| part.trim().strip_suffix(" ignored"))
                .filter_map(|n| n.trim().parse::<usize>().ok())
                .sum::<usize>();
        } else if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, outcome)) = rest.split_once(" ... ")
            && let Some(reason) = outcome.strip_prefix("ignored")
        {
            let reason = reason.trim_start_matches(',').trim();
            let reason = if reason.is_empty() {
                "(no reason given)"
            } else {
                reason
            };
            ignored.tests.push(format!("{name}: {reason}"));
        }
    }
    ignored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_lists_ignored_tests() {
        let out = "\
running 3 tests
test a::child ... ignored, child process of `parent`, which runs it
test b ... ok
test c ... ignored
test result: ok. 1 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.1s

running 1 test
test d ... ok
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.0s
test result: FAILED. 0 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0s
";
        let got = parse(out);
        assert_eq!(got.count, 3);
        assert_eq!(
            got.tests,
            vec![
                "a::child: child process of `parent`, which runs it".to_owned(),
                "c: (no reason given)".to_owned(),
            ]
        );
    }
}
