//! The check the fuzz target runs (and `cargo test` runs over the committed corpus).

use std::path::Path;

use crate::analyze::{Analyzer, simple_commands};
use crate::config::BashConfig;
use crate::judge::{PathAccess, PathJudge, PathVerdict};
use crate::verdict::Decision;

struct Everything;

impl PathJudge for Everything {
    fn judge(&self, path: &str, _: PathAccess, _: &Path) -> PathVerdict {
        if path.starts_with('/') {
            PathVerdict::OutsideRoots
        } else {
            PathVerdict::Inside
        }
    }
}

/// Analyzes arbitrary bytes as a command and checks the invariants that must hold for every
/// input: no panic, the verdict is the strictest finding, a deny always has a deny finding,
/// and wrapping the command in a subshell never lowers the decision.
pub fn check_command(data: &[u8]) {
    // No input filter: invalid UTF-8 is decoded lossily, any length goes through the caps.
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    check_fast_parse(text);
    let analyzer = Analyzer::with_home(BashConfig::default(), Some("/home/fuzz".to_owned()));
    let cwd = Path::new("/proj");
    let v = analyzer.analyze(text, cwd, &Everything);
    let max = v.findings.iter().map(|f| f.decision).max();
    assert_eq!(
        max.unwrap_or(Decision::Deny),
        v.decision,
        "verdict is not the strictest finding"
    );
    let wrapped = analyzer.analyze(&format!("( {text}\n)"), cwd, &Everything);
    // A trailing backslash would join the closing line: the wrapped text is another command.
    if v.decision == Decision::Deny
        && !text.contains(')')
        && !text.contains('#')
        && !text.ends_with('\\')
    {
        assert_eq!(
            wrapped.decision,
            Decision::Deny,
            "wrapping lowered a deny: {text:?}"
        );
    }
    assert_eq!(
        analyzer.analyze(text, cwd, &Everything),
        v,
        "the verdict is not deterministic: {text:?}"
    );
    // A command the analyzer could not parse must not be splittable for allow rules.
    if v.findings
        .iter()
        .any(|f| crate::limits::UNPARSABLE.contains(&f.code))
    {
        assert!(
            simple_commands(text).is_err(),
            "an unparsable command was split: {text:?}"
        );
    } else {
        let _ = simple_commands(text);
    }
}

/// Which of the direct paths took a text (see [`check_fast_parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastPaths {
    /// `fastlex` cut the text into tokens.
    pub tokens: bool,
    /// `fastparse` parsed brush-parser's tokens of the text.
    pub tree: bool,
}

/// Which of the direct tokenizer (`fastlex`) and the direct parser (`fastparse`) took `text`;
/// panics if either's result differs from brush-parser's for the same text (a parser
/// differential), or if either takes a text brush-parser rejects. Texts past the analysis's
/// caps are not compared (brush-parser is never handed them).
pub fn check_fast_parse(text: &str) -> FastPaths {
    let neither = FastPaths {
        tokens: false,
        tree: false,
    };
    let shape = match crate::limits::scan(text) {
        Ok(shape) if shape.nesting <= crate::limits::MAX_NESTING => shape,
        _ => return neither,
    };
    // brush-parser recurses per nesting level: deep texts are compared on the analysis's
    // big stack, as they are analysed.
    let result = if shape.opens <= crate::limits::INLINE_NESTING {
        compare(text)
    } else {
        crate::limits::on_big_stack(|| compare(text))
            .unwrap_or_else(|| Err(format!("the comparison's thread died on {text:?}")))
    };
    let error = result.as_ref().err();
    assert!(error.is_none(), "{}", error.map_or("", String::as_str));
    result.unwrap_or(neither)
}

fn compare(text: &str) -> Result<FastPaths, String> {
    let options = brush_parser::ParserOptions::default();
    let brush_tokens = crate::limits::guarded(|| {
        brush_parser::uncached_tokenize_str(text, &options.tokenizer_options())
    });
    let fast_tokens = crate::fastlex::tokenize(text, &options);
    if let Some(fast) = &fast_tokens {
        let brush = match &brush_tokens {
            Ok(Ok(tokens)) => format!("{tokens:#?}"),
            other => format!("brush-parser's tokenizer rejects it: {other:?}"),
        };
        same(text, "the direct tokens differ", fast, brush)?;
    }
    let tree = match &brush_tokens {
        Ok(Ok(tokens)) => same_tree(text, tokens, &options)?,
        _ => false,
    };
    Ok(FastPaths {
        tokens: fast_tokens.is_some(),
        tree,
    })
}

/// Whether the direct parser takes `tokens`; an error when its tree is not brush-parser's.
fn same_tree(
    text: &str,
    tokens: &[brush_parser::Token],
    options: &brush_parser::ParserOptions,
) -> Result<bool, String> {
    let Some(fast) = crate::fastparse::parse(tokens, options) else {
        return Ok(false);
    };
    let brush = match crate::limits::guarded(|| brush_parser::parse_tokens(tokens, options)) {
        Ok(Ok(brush)) => format!("{brush:#?}"),
        other => format!("brush-parser rejects it: {other:?}"),
    };
    same(text, "the direct parse differs", &fast, brush)?;
    Ok(true)
}

/// `fast` against brush-parser's `brush`, by `Debug`: the AST and tokens have no `PartialEq`
/// outside brush-parser's own tests, and their derived `Debug` shows every field, source
/// positions included.
fn same(text: &str, lead: &str, fast: &impl std::fmt::Debug, brush: String) -> Result<(), String> {
    let fast = format!("{fast:#?}");
    if fast == brush {
        return Ok(());
    }
    Err(format!(
        "{lead} from brush-parser's on {text:?}:\n{fast}\nbrush-parser:\n{brush}"
    ))
}
