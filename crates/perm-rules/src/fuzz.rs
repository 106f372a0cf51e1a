//! Entry points for the fuzz targets in `crates/perm-rules/fuzz` (also run by `cargo test`
//! over a committed corpus).

use serde_json::Value;

use crate::{
    PermissionChecker, PermissionMode, PermissionRule, RuleKind, RuleSource, split_simple_commands,
};

/// Treats `data` as `rule text \n tool \n command`: parses the rule, checks a call, and
/// asserts the invariants that must hold on any input (never panics on its own).
///
/// Returns `false` when an invariant is broken (the fuzz target panics on that).
pub fn check_rule_text(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\n');
    let rule_text = parts.next().unwrap_or_default();
    let tool = parts.next().unwrap_or("run_bash");
    let command = parts.next().unwrap_or_default();
    let _ = split_simple_commands(command);
    let args: Value =
        serde_json::json!({ "command": command, "file_path": command, "url": command });
    for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
        let Ok(rule) = PermissionRule::parse(kind, rule_text, RuleSource::Api) else {
            continue;
        };
        let mut checker = PermissionChecker::new();
        checker.add_rule(rule.clone());
        let result = checker.check(tool, Some(&args));
        let expected_match = rule.matches_tool(tool);
        if result.rule.is_some() != expected_match && !rule.has_content() {
            return false;
        }
        if kind == RuleKind::Deny && result.is_denied() {
            for mode in PermissionMode::ALL {
                if !checker.apply_mode(result.clone(), tool, false).is_denied()
                    || mode.transform(result.decision, tool, true) != result.decision
                {
                    return false;
                }
            }
        }
    }
    true
}
