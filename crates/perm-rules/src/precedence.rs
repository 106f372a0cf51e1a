//! The multi-source precedence table (P0-P8), as one pure function.

use std::sync::Arc;

use serde::Serialize;

use crate::{Decision, PermissionMode, PermissionResult, PermissionRule};

/// Where a finding came from, in the order of the precedence table.
///
/// Config Ask rules have no row of their own in the seed's table; they sit between P4 (hook
/// permission requests) and P5 (session Ask) as [`Priority::ConfigAsk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Priority {
    /// P0: a Deny rule from the policy/environment.
    ConfigDeny,
    /// P1: a Deny from the tool's own rules.
    ToolDeny,
    /// P2: a session Deny rule.
    SessionDeny,
    /// P3: a hook blocked the call.
    HookBlock,
    /// P4: a hook asked for permission.
    HookPermissionRequired,
    /// P4.5: an Ask rule from the policy/environment.
    ConfigAsk,
    /// P5: a session Ask rule.
    SessionAsk,
    /// P6: an Ask from the tool's own rules.
    ToolAsk,
    /// P7: an Allow rule from the policy/environment.
    ConfigAllow,
    /// P8: no rule matched; the configured default.
    Default,
    /// The mode changed the combined decision.
    Mode,
}

impl Priority {
    /// A stable code such as `p0-config-deny`.
    pub fn code(self) -> &'static str {
        match self {
            Priority::ConfigDeny => "p0-config-deny",
            Priority::ToolDeny => "p1-tool-deny",
            Priority::SessionDeny => "p2-session-deny",
            Priority::HookBlock => "p3-hook-block",
            Priority::HookPermissionRequired => "p4-hook-permission-required",
            Priority::ConfigAsk => "p4-config-ask",
            Priority::SessionAsk => "p5-session-ask",
            Priority::ToolAsk => "p6-tool-ask",
            Priority::ConfigAllow => "p7-config-allow",
            Priority::Default => "p8-default",
            Priority::Mode => "mode",
        }
    }
}

/// A hook that blocked the call (P3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookBlock {
    /// The hook's name.
    pub hook: String,
    /// Why it blocked.
    pub reason: String,
}

/// A hook that asked for a person's approval (P4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookPermissionRequest {
    /// The hook's name.
    pub hook: String,
    /// The question.
    pub message: String,
}

/// Everything the resolver weighs, as plain data agent-core fills in.
#[derive(Debug, Clone)]
pub struct PrecedenceInputs {
    /// The tool being called.
    pub tool: String,
    /// Whether the tool is read-only (for `plan` mode).
    pub read_only: bool,
    /// The mode applied at the end.
    pub mode: PermissionMode,
    /// The policy checker's result (rule `None` = the default, P8).
    pub config: PermissionResult,
    /// The session checker's result, if there is a session checker (rule `None` = no opinion).
    pub session: Option<PermissionResult>,
    /// The tool's own rules evaluated with [`crate::PermissionChecker::check`] on a checker
    /// holding them (rule `None` = no opinion).
    pub tool_level: Option<PermissionResult>,
    /// A hook that blocked the call.
    pub hook_block: Option<HookBlock>,
    /// Hooks that asked for permission.
    pub hook_requests: Vec<HookPermissionRequest>,
}

/// One decision from one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Which row of the table.
    pub priority: Priority,
    /// What it said.
    pub decision: Decision,
    /// The rule behind it, when a rule decided.
    pub rule: Option<Arc<PermissionRule>>,
    /// The hook behind it, when a hook decided.
    pub hook: Option<String>,
    /// A sentence a person can act on.
    pub message: String,
}

/// The resolver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The final decision, after the mode.
    pub decision: Decision,
    /// The finding that decided (a [`Priority::Mode`] finding when the mode changed it).
    pub decided_by: Finding,
    /// Every finding that was overridden, in table order (and the pre-mode winner if the mode
    /// changed it).
    pub conflict_log: Vec<Finding>,
}

fn rule_finding(priority: Priority, result: &PermissionResult) -> Finding {
    Finding {
        priority,
        decision: result.decision,
        rule: result.rule.clone(),
        hook: None,
        message: result.message(),
    }
}

/// Resolves P0-P8: Denies are final, Asks only upgrade an Allow, then the mode adjusts the
/// combined decision (never weakening a Deny).
pub fn resolve_permission_precedence(inputs: &PrecedenceInputs) -> Resolution {
    let mut findings: Vec<Finding> = Vec::new();
    fn ruled(r: &Option<PermissionResult>, d: Decision) -> Option<&PermissionResult> {
        r.as_ref().filter(|r| r.rule.is_some() && r.decision == d)
    }
    let config = Some(inputs.config.clone());
    let config_ruled = inputs.config.rule.is_some();
    if let Some(r) = ruled(&config, Decision::Deny) {
        findings.push(rule_finding(Priority::ConfigDeny, r));
    }
    if let Some(r) = ruled(&inputs.tool_level, Decision::Deny) {
        findings.push(rule_finding(Priority::ToolDeny, r));
    }
    if let Some(r) = ruled(&inputs.session, Decision::Deny) {
        findings.push(rule_finding(Priority::SessionDeny, r));
    }
    if let Some(b) = &inputs.hook_block {
        findings.push(Finding {
            priority: Priority::HookBlock,
            decision: Decision::Deny,
            rule: None,
            hook: Some(b.hook.clone()),
            message: format!("hook `{}` blocked the call: {}", b.hook, b.reason),
        });
    }
    for req in &inputs.hook_requests {
        findings.push(Finding {
            priority: Priority::HookPermissionRequired,
            decision: Decision::Ask,
            rule: None,
            hook: Some(req.hook.clone()),
            message: format!("hook `{}` asks for permission: {}", req.hook, req.message),
        });
    }
    if let Some(r) = ruled(&config, Decision::Ask) {
        findings.push(rule_finding(Priority::ConfigAsk, r));
    }
    if let Some(r) = ruled(&inputs.session, Decision::Ask) {
        findings.push(rule_finding(Priority::SessionAsk, r));
    }
    if let Some(r) = ruled(&inputs.tool_level, Decision::Ask) {
        findings.push(rule_finding(Priority::ToolAsk, r));
    }
    if let Some(r) = ruled(&config, Decision::Allow) {
        findings.push(rule_finding(Priority::ConfigAllow, r));
    }
    // Session and tool Allow rules carry no row: they cannot loosen anything, so they are
    // logged as overridden only through the config they agree or disagree with.
    if !config_ruled {
        findings.push(rule_finding(Priority::Default, &inputs.config));
    }
    // The strictest kind wins; within it the highest row (findings are in table order).
    let strictest = findings
        .iter()
        .map(|f| f.decision)
        .max()
        .unwrap_or(inputs.config.decision);
    let winner_pos = findings
        .iter()
        .position(|f| f.decision == strictest)
        .unwrap_or(0);
    let mut conflict_log = Vec::new();
    let mut winner = None;
    for (i, f) in findings.into_iter().enumerate() {
        if i == winner_pos {
            winner = Some(f);
        } else {
            conflict_log.push(f);
        }
    }
    let winner = winner.unwrap_or_else(|| rule_finding(Priority::Default, &inputs.config));
    let decision = inputs
        .mode
        .transform(winner.decision, &inputs.tool, inputs.read_only);
    if decision == winner.decision {
        return Resolution {
            decision,
            decided_by: winner,
            conflict_log,
        };
    }
    let mode_finding = Finding {
        priority: Priority::Mode,
        decision,
        rule: None,
        hook: None,
        message: format!(
            "mode `{}` turned {} into {decision}",
            inputs.mode, winner.decision
        ),
    };
    conflict_log.push(winner);
    Resolution {
        decision,
        decided_by: mode_finding,
        conflict_log,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PermissionRule, RuleKind, RuleSource};

    // The codes are a machine-readable contract (audit rows, hook answers, dashboards): pin
    // each one, and keep them distinct.
    #[test]
    fn priority_codes_are_stable_and_distinct() {
        let table = [
            (Priority::ConfigDeny, "p0-config-deny"),
            (Priority::ToolDeny, "p1-tool-deny"),
            (Priority::SessionDeny, "p2-session-deny"),
            (Priority::HookBlock, "p3-hook-block"),
            (
                Priority::HookPermissionRequired,
                "p4-hook-permission-required",
            ),
            (Priority::ConfigAsk, "p4-config-ask"),
            (Priority::SessionAsk, "p5-session-ask"),
            (Priority::ToolAsk, "p6-tool-ask"),
            (Priority::ConfigAllow, "p7-config-allow"),
            (Priority::Default, "p8-default"),
            (Priority::Mode, "mode"),
        ];
        let mut seen = std::collections::HashSet::new();
        for (priority, code) in table {
            assert_eq!(priority.code(), code);
            assert!(seen.insert(priority.code()), "duplicate code {code}");
        }
    }

    fn result(kind: RuleKind, text: &str) -> PermissionResult {
        let rule = PermissionRule::parse(kind, text, RuleSource::Api).unwrap();
        PermissionResult {
            decision: kind.decision(),
            rule: Some(Arc::new(rule)),
            changed_by_mode: None,
        }
    }

    fn inputs(config: PermissionResult) -> PrecedenceInputs {
        PrecedenceInputs {
            tool: "run_bash".into(),
            read_only: false,
            mode: PermissionMode::Default,
            config,
            session: None,
            tool_level: None,
            hook_block: None,
            hook_requests: Vec::new(),
        }
    }

    #[test]
    fn table_rows() {
        let mut i = inputs(result(RuleKind::Allow, "run_bash"));
        assert_eq!(
            resolve_permission_precedence(&i).decided_by.priority,
            Priority::ConfigAllow
        );
        i.hook_requests.push(HookPermissionRequest {
            hook: "h".into(),
            message: "ok?".into(),
        });
        let r = resolve_permission_precedence(&i);
        assert_eq!(
            (r.decision, r.decided_by.priority),
            (Decision::Ask, Priority::HookPermissionRequired)
        );
        assert_eq!(r.conflict_log.len(), 1);
        i.session = Some(result(RuleKind::Deny, "run_bash"));
        i.hook_block = Some(HookBlock {
            hook: "b".into(),
            reason: "no".into(),
        });
        let r = resolve_permission_precedence(&i);
        assert_eq!(r.decided_by.priority, Priority::SessionDeny);
        assert_eq!(r.conflict_log.len(), 3);
        i.mode = PermissionMode::BypassPermissions;
        assert_eq!(resolve_permission_precedence(&i).decision, Decision::Deny);
    }

    #[test]
    fn mode_at_the_end() {
        let mut i = inputs(PermissionResult::default_decision(Decision::Allow));
        i.tool_level = Some(result(RuleKind::Ask, "run_bash"));
        i.mode = PermissionMode::DontAsk;
        let r = resolve_permission_precedence(&i);
        assert_eq!(
            (r.decision, r.decided_by.priority),
            (Decision::Deny, Priority::Mode)
        );
        assert!(
            r.conflict_log
                .iter()
                .any(|f| f.priority == Priority::ToolAsk)
        );
        i.mode = PermissionMode::Plan;
        i.tool_level = None;
        assert_eq!(resolve_permission_precedence(&i).decision, Decision::Deny);
        i.read_only = true;
        assert_eq!(resolve_permission_precedence(&i).decision, Decision::Allow);
    }
}
