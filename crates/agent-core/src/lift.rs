//! The two kinds of ask (design.md section 7) and what may lift them.
//!
//! An ask is either a *known side effect* (writes inside the project, builds and tests, network
//! where it is allowed, a read outside the roots) or something that *cannot be reviewed* (hidden
//! execution, unknown options, arguments only known at run time, a configured ask). A
//! configured allow rule, an "allow for session" answer and auto mode may lift the first kind,
//! each for the simple commands it matches; nothing lifts the second kind, and nothing lifts a
//! deny. bash-guard says which kind each of its findings is ([`bash_guard::ask_kind`], one table
//! keyed by finding code); the other layers' asks are kinded here by [`STEP_ASK_KINDS`].
//!
//! [`Executor::evaluate`](crate::Executor::evaluate) is where the lifting happens: per simple
//! command, an allow rule lifts a side-effect finding of bash-guard only for the subcommand it
//! matches (the subjects the rules layer matches too), so `cargo test && ./evil.sh` with
//! `run_bash(cargo test:*)` still asks for `./evil.sh`.

use bash_guard::{Decision as BashDecision, Finding};
use perm_rules::Decision;
use serde::Serialize;

pub use bash_guard::AskKind;

use crate::executor::Executor;
use crate::verdict::Step;

/// One ask of a verdict: which layer and code, the simple command it is about (bash), its
/// kind, and the allow rule that lifted it, if one did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AskItem {
    /// The layer that asked.
    pub layer: &'static str,
    /// Its reason code.
    pub code: String,
    /// The simple command (bash-guard), else empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subcommand: String,
    /// Why, in the layer's words.
    pub message: String,
    /// What kind of ask it is.
    pub kind: AskKind,
    /// The allow rule that lifted it (policy or session), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifted_by: Option<String>,
}

impl AskItem {
    /// "a known side effect" / "cannot be reviewed" / "asked by the policy" (a configured ask
    /// is final for every lifting, like the second kind, but is no failure to review).
    pub fn kind_words(&self) -> &'static str {
        if CONFIGURED_ASKS.contains(&self.code.as_str()) {
            "asked by the policy"
        } else {
            self.kind.as_str()
        }
    }
}

/// Who resolved an ask into an answer (for the audit log and the refusal text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum AskResolution {
    /// Allow rules that matched every simple command whose ask was a known side effect.
    Rule {
        /// The rules' texts, each once.
        rules: Vec<String>,
    },
    /// A person's `agent-guard allow-once` grant for exactly this call.
    AllowOnce {
        /// The grant's code.
        code: String,
    },
    /// Auto mode's model.
    Auto {
        /// The model's decision (`allow` or `deny`).
        decision: Decision,
        /// The configured model name.
        model: String,
        /// How long the model took (0 for an answer reused from the session's cache).
        latency_ms: u64,
        /// The model's reason.
        reason: String,
        /// The answer was reused from an identical call of the session.
        cached: bool,
    },
    /// A person answered (an approver, the approval server). Set by the front end that asked.
    Person {
        /// How (`approver`, `approval-server`, `allow-for-session` ...).
        how: String,
    },
}

/// The rules layer's codes of a configured ask: an ask or permission request the policy, the
/// session, a tool or a hook made on purpose. No lifting overrides them.
pub const CONFIGURED_ASKS: &[&str] = &[
    "p4-config-ask",
    "p4-hook-permission-required",
    "p5-session-ask",
    "p6-tool-ask",
    "policy_ask",
];

/// Asks of layers other than bash-guard that are a known side effect, by `(layer, code)`.
/// Every other ask step cannot be lifted by auto mode (a configured ask, a protected file,
/// a client flag that hides the call from review, ...).
pub const STEP_ASK_KINDS: &[(&str, &str, &str)] = &[
    (
        "perm-rules",
        "p8-default",
        "no rule names the call and the policy's default asks",
    ),
    (
        "fs-sandbox",
        "outside_roots",
        "a read or listing of a named path outside the roots",
    ),
];

/// The kind of a non-bash ask step.
pub fn step_ask_kind(layer: &str, code: &str) -> AskKind {
    if STEP_ASK_KINDS
        .iter()
        .any(|(l, c, _)| *l == layer && *c == code)
    {
        AskKind::SideEffect
    } else {
        AskKind::Unreviewable
    }
}

/// bash-guard's verdict on one command after the allow rules had their say.
pub(crate) struct BashJudgement {
    pub(crate) decision: Decision,
    pub(crate) code: String,
    pub(crate) message: String,
    /// Every ask finding, lifted or not.
    pub(crate) items: Vec<AskItem>,
    /// The simple commands (the rules' subjects); `None` when the command is unsplittable.
    pub(crate) subjects: Option<Vec<String>>,
}

/// Judges bash-guard's findings: a deny stands; each ask finding that is a known side effect
/// is lifted when an allow rule (policy or session) matches its own simple command; the rest
/// decide.
pub(crate) fn judge_bash(exec: &Executor, verdict: &bash_guard::Verdict) -> BashJudgement {
    let mut items: Vec<AskItem> = Vec::new();
    for f in verdict
        .findings
        .iter()
        .filter(|f| f.decision == BashDecision::Ask)
    {
        if items
            .iter()
            .any(|i| i.code == f.code && i.subcommand == f.subcommand)
        {
            continue;
        }
        let kind = f.ask_kind().unwrap_or(AskKind::Unreviewable);
        let lifted_by = match (verdict.decision, kind) {
            (BashDecision::Ask, AskKind::SideEffect) if !f.subcommand.is_empty() => {
                exec.allow_rule_for("run_bash", &f.subcommand)
            }
            _ => None,
        };
        items.push(AskItem {
            layer: "bash-guard",
            code: f.code.to_owned(),
            subcommand: f.subcommand.clone(),
            message: f.message.clone(),
            kind,
            lifted_by,
        });
    }
    let unlifted: Vec<&AskItem> = items.iter().filter(|i| i.lifted_by.is_none()).collect();
    let (decision, deciding): (Decision, Vec<(&str, String)>) = match verdict.decision {
        BashDecision::Deny => (Decision::Deny, describe(verdict.deciding())),
        BashDecision::Allow => (Decision::Allow, describe(verdict.deciding())),
        BashDecision::Ask if unlifted.is_empty() => {
            let lifted = items
                .iter()
                .map(|i| {
                    (
                        "allowed_by_rule",
                        format!(
                            "`{}`: {} ({}, allowed by `{}`)",
                            i.subcommand,
                            i.message,
                            i.kind,
                            i.lifted_by.as_deref().unwrap_or_default()
                        ),
                    )
                })
                .collect();
            (Decision::Allow, lifted)
        }
        BashDecision::Ask => (
            Decision::Ask,
            unlifted
                .iter()
                .map(|i| {
                    (
                        i.code.as_str(),
                        format!("`{}`: {} ({})", i.subcommand, i.message, i.kind_words()),
                    )
                })
                .collect(),
        ),
    };
    let code = deciding
        .first()
        .map_or("no_findings", |(c, _)| *c)
        .to_owned();
    let message = if deciding.is_empty() {
        "no simple command was found".to_owned()
    } else {
        deciding
            .into_iter()
            .map(|(_, m)| m)
            .collect::<Vec<_>>()
            .join("; ")
    };
    BashJudgement {
        decision,
        code,
        message,
        items,
        subjects: verdict.simple_commands().ok(),
    }
}

fn describe<'a>(findings: impl Iterator<Item = &'a Finding>) -> Vec<(&'a str, String)> {
    findings
        .map(|f| (f.code, format!("`{}`: {}", f.subcommand, f.message)))
        .collect()
}

/// How a person can let an asked `run_bash` call through with allow rules, when rules can:
/// every ask still standing is a known side effect of bash-guard or the rules' default, and
/// the rules suggested match exactly the simple commands that need one (each checked against
/// its subject, so the advice works as written). Else why no rule can, naming the kind.
pub(crate) fn advice(
    exec: &Executor,
    asks: &[AskItem],
    subjects: Option<&[String]>,
    cwd: &std::path::Path,
) -> Option<String> {
    let standing: Vec<&AskItem> = asks.iter().filter(|a| a.lifted_by.is_none()).collect();
    if standing.is_empty() {
        return None;
    }
    if let Some(stuck) = standing
        .iter()
        .find(|a| a.kind != AskKind::SideEffect || CONFIGURED_ASKS.contains(&a.code.as_str()))
    {
        let what = if stuck.subcommand.is_empty() {
            format!("[{}] {}", stuck.layer, stuck.code)
        } else {
            format!("`{}` ({})", stuck.subcommand, stuck.code)
        };
        return Some(format!(
            "No allow rule lifts this ask: {what} {}, so a person must confirm it each time",
            stuck.kind_words()
        ));
    }
    let subjects = subjects?;
    let default_asks = standing.iter().any(|a| a.layer == "perm-rules");
    let mut needed: Vec<&str> = Vec::new();
    for subject in subjects {
        let asked = standing
            .iter()
            .any(|a| a.layer == "bash-guard" && a.subcommand == *subject);
        let unruled = default_asks && exec.allow_rule_for("run_bash", subject).is_none();
        if (asked || unruled) && !needed.contains(&subject.as_str()) {
            needed.push(subject);
        }
    }
    let cwd = cwd.to_string_lossy();
    let mut rules: Vec<String> = Vec::new();
    for subject in &needed {
        let rule = suggest_rule(subject);
        let works = perm_rules::PermissionRule::parse(
            perm_rules::RuleKind::Allow,
            &rule,
            perm_rules::RuleSource::Session,
        )
        .is_ok_and(|r| {
            r.matches_content(
                &perm_rules::Subjects::List(vec![(*subject).to_owned()]),
                Some(&cwd),
            )
        });
        if !works {
            return None;
        }
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    if rules.is_empty() {
        return None;
    }
    Some(format!(
        "Its asks are known side effects: to allow such calls deliberately, add {} to the policy's `[permissions] allow`",
        rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    ))
}

/// `run_bash(PROGRAM SUBCOMMAND:*)` when the second word looks like a subcommand (`git add`,
/// `npm test`), else `run_bash(PROGRAM:*)`.
fn suggest_rule(subject: &str) -> String {
    let mut words = subject.split_whitespace();
    let first = words.next().unwrap_or_default();
    match words.next() {
        Some(sub)
            if sub
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !sub.starts_with('-') =>
        {
            format!("run_bash({first} {sub}:*)")
        }
        _ => format!("run_bash({first}:*)"),
    }
}

/// The asks of a verdict's steps other than bash-guard's (which come per finding), kinded.
pub(crate) fn step_items(steps: &[Step]) -> Vec<AskItem> {
    steps
        .iter()
        .filter(|s| s.decision == Decision::Ask && s.layer != "bash-guard")
        .map(|s| AskItem {
            layer: s.layer,
            code: s.code.clone(),
            subcommand: String::new(),
            message: s.message.clone(),
            kind: step_ask_kind(s.layer, &s.code),
            lifted_by: None,
        })
        .collect()
}

/// Whether every ask still standing among `items` is a known side effect (and there is one):
/// what auto mode and an "allow for session" answer may lift.
pub fn only_side_effects(items: &[AskItem]) -> bool {
    let mut standing = items.iter().filter(|i| i.lifted_by.is_none()).peekable();
    standing.peek().is_some()
        && standing
            .all(|i| i.kind == AskKind::SideEffect && !CONFIGURED_ASKS.contains(&i.code.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_kinds_are_unique_and_never_a_configured_ask() {
        for (layer, code, why) in STEP_ASK_KINDS {
            assert!(!why.is_empty());
            assert!(!CONFIGURED_ASKS.contains(code), "{code}");
            assert_eq!(step_ask_kind(layer, code), AskKind::SideEffect);
            assert_eq!(
                STEP_ASK_KINDS
                    .iter()
                    .filter(|(l, c, _)| l == layer && c == code)
                    .count(),
                1
            );
        }
        assert_eq!(
            step_ask_kind("perm-rules", "p4-config-ask"),
            AskKind::Unreviewable
        );
        assert_eq!(
            step_ask_kind("fs-sandbox", "protected_path"),
            AskKind::Unreviewable
        );
        assert_eq!(
            step_ask_kind("client", "anything-new"),
            AskKind::Unreviewable
        );
    }

    fn item(code: &str, kind: AskKind, lifted: bool) -> AskItem {
        AskItem {
            layer: "bash-guard",
            code: code.to_owned(),
            subcommand: "x".to_owned(),
            message: String::new(),
            kind,
            lifted_by: lifted.then(|| "run_bash(x:*)".to_owned()),
        }
    }

    #[test]
    fn only_side_effects_needs_every_standing_ask_to_be_one() {
        assert!(!only_side_effects(&[]));
        assert!(only_side_effects(&[item(
            "build",
            AskKind::SideEffect,
            false
        )]));
        assert!(!only_side_effects(&[
            item("build", AskKind::SideEffect, false),
            item("runs_program", AskKind::Unreviewable, false),
        ]));
        // A lifted ask does not count either way; nothing left standing is nothing to lift.
        assert!(!only_side_effects(&[item(
            "build",
            AskKind::SideEffect,
            true
        )]));
        assert!(!only_side_effects(&[item(
            "p4-config-ask",
            AskKind::SideEffect,
            false
        )]));
    }
}
