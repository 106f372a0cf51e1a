//! Masks secrets in tool output before the model sees it.

use std::borrow::Cow;
use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;

use crate::hook::{AgentHook, HookResult, PostToolUseAction, PostToolUseContext};

struct Pattern {
    re: Regex,
    replacement: &'static str,
}

#[allow(clippy::expect_used)] // the patterns are constants, checked by the unit tests
fn pattern(re: &str, replacement: &'static str) -> Pattern {
    Pattern {
        re: Regex::new(re).expect("redaction patterns are valid"),
        replacement,
    }
}

static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    vec![
        // A key block cut off by truncation is still a key: redact to the end.
        pattern(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)",
            "[REDACTED:private_key]",
        ),
        pattern(
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            "[REDACTED:aws_access_key]",
        ),
        pattern(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b", "[REDACTED:github_token]"),
        pattern(r"\bgithub_pat_[A-Za-z0-9_]{22,}", "[REDACTED:github_token]"),
        pattern(r"\bxox[abposr]-[A-Za-z0-9-]{10,}", "[REDACTED:slack_token]"),
        pattern(r"\bsk-[A-Za-z0-9_-]{20,}", "[REDACTED:api_key]"),
        pattern(
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            "[REDACTED:jwt]",
        ),
        pattern(
            r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}",
            "$1 [REDACTED:bearer_token]",
        ),
        // `NAME=value` / `NAME: value` where the name looks secret; the name stays visible.
        pattern(
            r#"(?i)\b([A-Z0-9_.-]*(?:SECRET|PASSWORD|PASSWD|TOKEN|API[_-]?KEY|PRIVATE[_-]?KEY|ACCESS[_-]?KEY|CREDENTIALS?|AUTH)[A-Z0-9_.-]*)("?\s*[=:]\s*)("[^"\n]*"|'[^'\n]*'|[^\s"',;]+)"#,
            "$1$2[REDACTED]",
        ),
    ]
});

/// Masks private key blocks, common token formats (AWS, GitHub, Slack, OpenAI-style `sk-`,
/// JWT, Bearer) and `KEY=value` pairs whose name looks secret.
pub fn redact_secrets(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    for p in PATTERNS.iter() {
        if let Cow::Owned(replaced) = p.re.replace_all(&out, p.replacement) {
            out = Cow::Owned(replaced);
        }
    }
    out
}

/// A post hook that applies [`redact_secrets`] to every tool output.
#[derive(Debug, Default, Clone, Copy)]
pub struct RedactionHook;

#[async_trait]
impl AgentHook for RedactionHook {
    fn name(&self) -> &str {
        "redaction"
    }

    async fn post_tool_use(&self, ctx: &PostToolUseContext) -> HookResult<PostToolUseAction> {
        Ok(match redact_secrets(&ctx.output) {
            Cow::Borrowed(_) => PostToolUseAction::Continue,
            Cow::Owned(updated_content) => PostToolUseAction::MutateOutput { updated_content },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_each_format() {
        let cases = [
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN OPENSSH PRIVATE KEY-----\ntruncated",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "xoxb-123456789012-abcdefghij",
            "sk-proj-abcdefghijklmnopqrstuvwx",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "Authorization: Bearer abcdefghijklmnop1234",
        ];
        for secret in cases {
            let text = format!("before {secret} after");
            let out = redact_secrets(&text);
            assert!(out.contains("[REDACTED"), "{secret}: {out}");
            assert!(!out.contains(secret), "{secret}: {out}");
        }
    }

    #[test]
    fn keeps_names_and_masks_values() {
        let out = redact_secrets("DB_PASSWORD=hunter2\nAPI_KEY: \"abc def\"\nPATH=/usr/bin");
        assert_eq!(
            out,
            "DB_PASSWORD=[REDACTED]\nAPI_KEY: [REDACTED]\nPATH=/usr/bin"
        );
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(
            redact_secrets("cargo test: 12 passed"),
            Cow::Borrowed(_)
        ));
    }
}
