//! The compiled rule set.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use crate::{
    ContentSubjects, Decision, DefaultSubjects, PermissionMode, PermissionRule, RuleKind, Subjects,
};

/// The outcome of [`PermissionChecker::check`]: the decision and the rule that decided it
/// (`None` when no rule matched and the configured default applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionResult {
    /// What to do with the call.
    pub decision: Decision,
    /// The deciding rule, with its source; `None` for the default.
    pub rule: Option<Arc<PermissionRule>>,
    /// The mode that changed the decision, when [`PermissionChecker::apply_mode`] did.
    pub changed_by_mode: Option<PermissionMode>,
}

impl PermissionResult {
    /// A result decided by the default (no rule matched).
    pub fn default_decision(decision: Decision) -> Self {
        PermissionResult {
            decision,
            rule: None,
            changed_by_mode: None,
        }
    }

    /// Whether the call may run.
    pub fn is_allowed(&self) -> bool {
        self.decision == Decision::Allow
    }

    /// Whether a person must approve the call.
    pub fn is_ask(&self) -> bool {
        self.decision == Decision::Ask
    }

    /// Whether the call must not run.
    pub fn is_denied(&self) -> bool {
        self.decision == Decision::Deny
    }

    /// A stable reason code: `rule-deny`, `rule-ask`, `rule-allow`, `default-allow`, ...
    pub fn code(&self) -> String {
        let base = match &self.rule {
            Some(rule) => format!("rule-{}", rule.kind().as_str()),
            None => format!("default-{}", self.decision),
        };
        match self.changed_by_mode {
            Some(mode) => format!("mode-{}", mode.as_str().to_ascii_lowercase()),
            None => base,
        }
    }

    /// A sentence a person can act on.
    pub fn message(&self) -> String {
        let mut msg = match &self.rule {
            Some(rule) => match rule.message() {
                Some(m) => format!("{}: {m}", rule.describe()),
                None => rule.describe(),
            },
            None => format!("no rule matched; the default is {}", self.decision),
        };
        if let Some(mode) = self.changed_by_mode {
            msg.push_str(&format!("; mode `{mode}` made it {}", self.decision));
        }
        msg
    }
}

/// The index built from the rules on first use (and rebuilt after `add_rule`).
#[derive(Debug, Default)]
struct Compiled {
    /// Exact tool name -> rule indices of each kind, in insertion order ([deny, ask, allow]).
    exact: HashMap<String, [Vec<u32>; 3]>,
    /// One glob per tool-glob rule; `glob_rules[i]` is the rule of glob `i`.
    globs: GlobSet,
    glob_rules: Vec<u32>,
}

fn slot(kind: RuleKind) -> usize {
    match kind {
        RuleKind::Deny => 0,
        RuleKind::Ask => 1,
        RuleKind::Allow => 2,
    }
}

/// An ordered set of Deny/Ask/Allow rules, compiled for lookup.
///
/// Deny beats Ask beats Allow whatever the order; within one kind the first-added matching
/// rule is reported. No match gives the default (Allow unless configured otherwise).
///
/// ```
/// use perm_rules::{Decision, PermissionChecker, PermissionRule, RuleKind, RuleSource};
/// let mut checker = PermissionChecker::new();
/// checker.add_rule(PermissionRule::parse(RuleKind::Deny, "run_bash(rm:*)", RuleSource::Api).unwrap());
/// checker.add_rule(PermissionRule::parse(RuleKind::Allow, "run_bash(ls:*)", RuleSource::Api).unwrap());
/// let args = serde_json::json!({"command": "ls && rm -rf x"});
/// assert!(checker.check("run_bash", Some(&args)).is_denied());
/// assert!(checker.check("read_file", None).is_allowed());
/// ```
#[derive(Clone)]
pub struct PermissionChecker {
    rules: Vec<Arc<PermissionRule>>,
    default: Decision,
    mode: PermissionMode,
    cwd: Option<String>,
    subjects: Arc<dyn ContentSubjects>,
    compiled: Arc<OnceLock<Compiled>>,
}

impl std::fmt::Debug for PermissionChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionChecker")
            .field("rules", &self.rules)
            .field("default", &self.default)
            .field("mode", &self.mode)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl Default for PermissionChecker {
    fn default() -> Self {
        Self::new()
    }
}

impl PermissionChecker {
    /// An empty checker: everything is allowed, mode `default`, the default splitter.
    pub fn new() -> Self {
        PermissionChecker {
            rules: Vec::new(),
            default: Decision::Allow,
            mode: PermissionMode::Default,
            cwd: None,
            subjects: Arc::new(DefaultSubjects),
            compiled: Arc::new(OnceLock::new()),
        }
    }

    /// Adds a rule after the existing ones.
    pub fn add_rule(&mut self, rule: PermissionRule) {
        self.rules.push(Arc::new(rule));
        self.compiled = Arc::new(OnceLock::new());
    }

    /// The rules in insertion order.
    pub fn rules(&self) -> impl Iterator<Item = &PermissionRule> {
        self.rules.iter().map(|r| &**r)
    }

    /// Sets the decision when no rule matches. Deny is accepted too (a closed policy).
    pub fn set_default(&mut self, default: Decision) {
        self.default = default;
    }

    /// The decision when no rule matches.
    pub fn default_decision(&self) -> Decision {
        self.default
    }

    /// Sets the mode used by [`PermissionChecker::apply_mode`].
    pub fn set_mode(&mut self, mode: PermissionMode) {
        self.mode = mode;
    }

    /// The configured mode.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// Sets the working directory that `./` path specifiers are relative to.
    pub fn set_cwd(&mut self, cwd: impl Into<String>) {
        self.cwd = Some(cwd.into());
    }

    /// Replaces the content-subject provider (agent-core wires bash-guard's parser in here).
    pub fn set_subjects(&mut self, subjects: Arc<dyn ContentSubjects>) {
        self.subjects = subjects;
    }

    fn compiled(&self) -> &Compiled {
        self.compiled.get_or_init(|| {
            let mut compiled = Compiled::default();
            let mut builder = GlobSetBuilder::new();
            for (i, rule) in self.rules.iter().enumerate() {
                let idx = u32::try_from(i).unwrap_or(u32::MAX);
                if rule.is_tool_glob() {
                    // The pattern compiled once already in `PermissionRule::parse`.
                    if let Ok(glob) = Glob::new(rule.tool_pattern()) {
                        builder.add(glob);
                        compiled.glob_rules.push(idx);
                    }
                } else {
                    let entry = compiled
                        .exact
                        .entry(rule.tool_pattern().to_owned())
                        .or_default();
                    if let Some(list) = entry.get_mut(slot(rule.kind())) {
                        list.push(idx);
                    }
                }
            }
            compiled.globs = builder.build().unwrap_or_else(|_| GlobSet::empty());
            compiled
        })
    }

    /// Decides `tool` called with `args` (`None`: the content is unknown).
    pub fn check(&self, tool: &str, args: Option<&Value>) -> PermissionResult {
        let compiled = self.compiled();
        let exact = compiled.exact.get(tool);
        let glob_hits: Vec<u32> = if compiled.glob_rules.is_empty() {
            Vec::new()
        } else {
            compiled
                .globs
                .matches(tool)
                .into_iter()
                .filter_map(|g| compiled.glob_rules.get(g).copied())
                .collect()
        };
        let mut subjects: Option<Subjects> = None;
        for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
            let from_exact: &[u32] = exact
                .and_then(|e| e.get(slot(kind)))
                .map_or(&[], Vec::as_slice);
            let mut candidates: Vec<u32>;
            let list: &[u32] = if glob_hits.is_empty() {
                from_exact
            } else {
                candidates = from_exact.to_vec();
                candidates.extend(
                    glob_hits
                        .iter()
                        .copied()
                        .filter(|&i| self.rules.get(i as usize).is_some_and(|r| r.kind() == kind)),
                );
                candidates.sort_unstable();
                &candidates
            };
            for &i in list {
                let Some(rule) = self.rules.get(i as usize) else {
                    continue;
                };
                if rule.has_content() {
                    let subj = subjects.get_or_insert_with(|| match args {
                        Some(args) => self.subjects.subjects(tool, args),
                        None => Subjects::Unsplittable,
                    });
                    if !rule.matches_content(subj, self.cwd.as_deref()) {
                        continue;
                    }
                }
                return PermissionResult {
                    decision: kind.decision(),
                    rule: Some(Arc::clone(rule)),
                    changed_by_mode: None,
                };
            }
        }
        PermissionResult::default_decision(self.default)
    }

    /// Whether `tool` is denied when its content is unknown (content deny rules count).
    pub fn is_denied(&self, tool: &str) -> bool {
        self.check(tool, None).is_denied()
    }

    /// Applies the checker's mode to `result` for `tool` (`read_only` as the tool declares).
    pub fn apply_mode(
        &self,
        result: PermissionResult,
        tool: &str,
        read_only: bool,
    ) -> PermissionResult {
        let decision = self.mode.transform(result.decision, tool, read_only);
        if decision == result.decision {
            return result;
        }
        PermissionResult {
            decision,
            changed_by_mode: Some(self.mode),
            ..result
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuleSource;
    use serde_json::json;

    fn add(c: &mut PermissionChecker, kind: RuleKind, text: &str) {
        c.add_rule(PermissionRule::parse(kind, text, RuleSource::Api).unwrap());
    }

    #[test]
    fn kind_beats_order_first_added_reported() {
        let mut c = PermissionChecker::new();
        add(&mut c, RuleKind::Allow, "*");
        add(&mut c, RuleKind::Ask, "run_*");
        add(&mut c, RuleKind::Deny, "run_bash(rm:*)");
        add(&mut c, RuleKind::Deny, "run_bash");
        let r = c.check("run_bash", Some(&json!({"command": "rm x"})));
        assert_eq!(r.rule.as_ref().unwrap().text(), "run_bash(rm:*)");
        let r = c.check("run_bash", Some(&json!({"command": "ls"})));
        assert_eq!(r.rule.as_ref().unwrap().text(), "run_bash");
        assert_eq!(c.check("run_other", None).decision, Decision::Ask);
        assert_eq!(c.check("read_file", None).rule.unwrap().text(), "*");
    }

    #[test]
    fn default_and_modes() {
        let mut c = PermissionChecker::new();
        add(&mut c, RuleKind::Ask, "file_write");
        c.set_default(Decision::Ask);
        assert_eq!(c.check("x", None).code(), "default-ask");
        c.set_mode(PermissionMode::AcceptEdits);
        let r = c.apply_mode(c.check("file_write", None), "file_write", false);
        assert!(r.is_allowed());
        assert_eq!(r.code(), "mode-acceptedits");
        assert!(!c.is_denied("nothing"));
    }
}
