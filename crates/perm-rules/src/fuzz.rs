//! Entry points for the fuzz targets in `crates/perm-rules/fuzz` (also run by `cargo test`
//! over a committed corpus).

use serde_json::Value;

use crate::{
    Decision, PermissionChecker, PermissionMode, PermissionResult, PermissionRule, RuleKind,
    RuleSource, split_simple_commands,
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
        for mode in PermissionMode::ALL {
            checker.set_mode(mode);
            for read_only in [false, true] {
                if !mode_invariants_hold(&checker, &result, tool, read_only) {
                    return false;
                }
            }
        }
    }
    true
}

/// What a mode may do to a decision, stated as invariants rather than as the mode table again:
/// a Deny stays a Deny, `default` changes nothing, `plan` denies what is not read-only,
/// `dontAsk` and `bypassPermissions` leave no Ask, only `plan`/`dontAsk` may add a Deny,
/// `acceptEdits` only turns an edit tool's Ask into Allow, and the result names the mode
/// exactly when it changed the decision.
fn mode_invariants_hold(
    checker: &PermissionChecker,
    result: &PermissionResult,
    tool: &str,
    read_only: bool,
) -> bool {
    let mode = checker.mode();
    let before = result.decision;
    let after = checker.apply_mode(result.clone(), tool, read_only);
    let changed = after.decision != before;
    if before == Decision::Deny && after.decision != Decision::Deny {
        return false;
    }
    if after.changed_by_mode != changed.then_some(mode) {
        return false;
    }
    let edit_tool = matches!(tool, "file_write" | "file_edit");
    match mode {
        PermissionMode::Default => !changed,
        PermissionMode::Plan => {
            if read_only {
                !changed
            } else {
                after.decision == Decision::Deny
            }
        }
        PermissionMode::DontAsk => {
            after.decision != Decision::Ask && (!changed || before == Decision::Ask)
        }
        PermissionMode::BypassPermissions => {
            after.decision != Decision::Ask && (!changed || after.decision == Decision::Allow)
        }
        PermissionMode::AcceptEdits => {
            !changed || (edit_tool && before == Decision::Ask && after.decision == Decision::Allow)
        }
    }
}
