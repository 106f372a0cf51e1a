//! One analysis in a fresh process, as a hook's: what the table costs a short-lived process
//! (docs/performance.md). `perf stat -r 50 target/release/examples/first_call`.

use std::path::Path;

use bash_guard::{Analyzer, BashConfig, PathAccess, PathJudge, PathVerdict};

struct Judge;
impl PathJudge for Judge {
    fn judge(&self, path: &str, _: PathAccess, _: &Path) -> PathVerdict {
        if path.starts_with('/') {
            PathVerdict::OutsideRoots
        } else {
            PathVerdict::Inside
        }
    }
}

fn main() {
    let command = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "git status && grep -rn TODO src | head -n 5".to_owned());
    let analyzer = Analyzer::with_home(BashConfig::default(), Some("/home/bench".into()));
    let verdict = analyzer.analyze(&command, Path::new("/proj"), &Judge);
    println!("{}", verdict.decision);
}
