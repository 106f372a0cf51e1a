//! The compiled rule set.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use crate::rule::{IndexKey, PathForms, normalize_command};
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

/// How many distinct tool names the glob memo remembers; beyond that a check matches the tool
/// globs afresh (correct, just slower), so a stream of unique names cannot grow memory.
const GLOB_MEMO_CAP: usize = 1024;

/// The index built from the rules on first use (and rebuilt after `add_rule`).
#[derive(Debug, Default)]
struct Compiled {
    /// Exact tool name -> the index of its exact-name rules.
    exact: HashMap<String, ToolIndex>,
    /// One glob per tool-glob rule; `glob_rules[i]` is the rule of glob `i`.
    globs: GlobSet,
    glob_rules: Vec<u32>,
    /// Tool name -> the index of the tool-glob rules matching it (empty when none do).
    glob_memo: RwLock<HashMap<String, Arc<ToolIndex>>>,
}

/// The rules of one set (exact-name rules of a tool, or the glob rules matching it), per kind
/// (`[deny, ask, allow]`).
#[derive(Debug, Default)]
struct ToolIndex {
    kinds: [KindIndex; 3],
}

/// The rules of one kind, indexed by what their content specifier can match, so a check looks
/// only at rules that can match its subjects. Every list is in insertion order.
#[derive(Debug, Default)]
struct KindIndex {
    /// The first rule without a specifier: it matches whatever the content.
    plain: Option<u32>,
    /// The first content rule: what unanalysable content matches for Deny/Ask.
    first_content: Option<u32>,
    /// Command specifiers by their first word.
    words: HashMap<String, Vec<u32>>,
    /// Domain specifiers by domain.
    domains: HashMap<String, Vec<u32>>,
    /// Path specifiers matched against the cwd-relative form of a path (`./src/**`).
    relative_paths: PathSet,
    /// Path specifiers matched against the absolute forms (`/etc/**`, `**/.env`).
    absolute_paths: PathSet,
    /// Content rules that could not be indexed: candidates of every subject.
    residual: Vec<u32>,
}

/// Many path rules in one `GlobSet`; `rules[g]` is the rule of glob `g`.
#[derive(Debug, Default)]
struct PathSet {
    set: GlobSet,
    rules: Vec<u32>,
}

#[derive(Default)]
struct PathSetBuilder {
    globs: Vec<Glob>,
    rules: Vec<u32>,
}

impl PathSetBuilder {
    fn add(&mut self, glob: &Glob, rule: u32) {
        self.globs.push(glob.clone());
        self.rules.push(rule);
    }

    fn build(self) -> Option<PathSet> {
        if self.rules.is_empty() {
            return Some(PathSet::default());
        }
        let mut builder = GlobSetBuilder::new();
        for glob in self.globs {
            builder.add(glob);
        }
        Some(PathSet {
            set: builder.build().ok()?,
            rules: self.rules,
        })
    }
}

impl PathSet {
    fn candidates(&self, path: &str, out: &mut Vec<u32>) {
        if self.rules.is_empty() {
            return;
        }
        out.extend(
            self.set
                .matches(path)
                .into_iter()
                .filter_map(|g| self.rules.get(g).copied()),
        );
    }
}

fn slot(kind: RuleKind) -> usize {
    match kind {
        RuleKind::Deny => 0,
        RuleKind::Ask => 1,
        RuleKind::Allow => 2,
    }
}

fn index_of(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl ToolIndex {
    /// Indexes `members` (ascending rule indices into `rules`).
    fn build(rules: &[Arc<PermissionRule>], members: impl IntoIterator<Item = u32>) -> Self {
        let mut index = ToolIndex::default();
        // Per kind: [relative, absolute] path globs.
        let mut paths: [[PathSetBuilder; 2]; 3] = Default::default();
        for i in members {
            let Some(rule) = rules.get(i as usize) else {
                continue;
            };
            let s = slot(rule.kind());
            let (Some(kind), Some(path_builders)) = (index.kinds.get_mut(s), paths.get_mut(s))
            else {
                continue;
            };
            let key = rule.index_key();
            if matches!(key, IndexKey::Any) {
                kind.plain.get_or_insert(i);
                continue;
            }
            kind.first_content.get_or_insert(i);
            match key {
                IndexKey::Any => {}
                IndexKey::Word(word) => kind.words.entry(word.to_owned()).or_default().push(i),
                IndexKey::Domain(domain) => {
                    kind.domains.entry(domain.to_owned()).or_default().push(i);
                }
                IndexKey::Path {
                    globs,
                    cwd_relative,
                } => {
                    let [relative, absolute] = path_builders;
                    let builder = if cwd_relative { relative } else { absolute };
                    for glob in globs {
                        builder.add(glob, i);
                    }
                }
            }
        }
        for (kind, [relative, absolute]) in index.kinds.iter_mut().zip(paths) {
            for (builder, target) in [
                (relative, &mut kind.relative_paths),
                (absolute, &mut kind.absolute_paths),
            ] {
                let members = builder.rules.clone();
                match builder.build() {
                    Some(set) => *target = set,
                    // Never expected (each glob compiled alone at parse time); checking such
                    // rules one by one keeps the answer right.
                    None => kind.residual.extend(members),
                }
            }
            kind.residual.sort_unstable();
            kind.residual.dedup();
        }
        index
    }
}

impl KindIndex {
    /// Whether the answer depends on the content: some content rule comes before the first
    /// plain rule (a plain rule matches anything, so later rules cannot be reported).
    fn needs_content(&self) -> bool {
        match (self.first_content, self.plain) {
            (Some(c), Some(p)) => c < p,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// The rules that can match `subject`: a superset of those whose specifier matches it.
    fn candidates(&self, kind: RuleKind, subject: &str, cwd: Option<&str>, out: &mut Vec<u32>) {
        out.extend_from_slice(&self.residual);
        if !self.words.is_empty() {
            let cmd = normalize_command(subject);
            let first = cmd.split_once(' ').map_or(cmd.as_ref(), |(f, _)| f);
            if let Some(list) = self.words.get(first) {
                out.extend_from_slice(list);
            }
            // `/bin/rm` is `rm` for a Deny/Ask rule (see `spec_matches`).
            if kind != RuleKind::Allow
                && let Some((_, base)) = first.rsplit_once('/')
                && let Some(list) = self.words.get(base)
            {
                out.extend_from_slice(list);
            }
        }
        if !self.domains.is_empty() {
            let host = subject.to_ascii_lowercase();
            let mut rest = host.as_str();
            loop {
                if let Some(list) = self.domains.get(rest) {
                    out.extend_from_slice(list);
                }
                match rest.split_once('.') {
                    Some((_, tail)) => rest = tail,
                    None => break,
                }
            }
        }
        if !self.relative_paths.rules.is_empty() || !self.absolute_paths.rules.is_empty() {
            let forms = PathForms::new(subject, cwd);
            if let Some(relative) = &forms.relative {
                self.relative_paths.candidates(relative, out);
            }
            self.absolute_paths.candidates(&forms.normalized, out);
            if let Some(rooted) = &forms.rooted {
                self.absolute_paths.candidates(rooted, out);
            }
        }
    }

    /// The first-added rule of `kind` here that matches a call whose content is `subjects`.
    fn first_match(
        &self,
        kind: RuleKind,
        rules: &[Arc<PermissionRule>],
        subjects: &Subjects,
        cwd: Option<&str>,
    ) -> Option<u32> {
        let content = match subjects {
            // Unanalysable content matches every Deny/Ask content rule and no Allow one.
            Subjects::Unsplittable if kind == RuleKind::Allow => None,
            Subjects::Unsplittable => self.first_content,
            Subjects::List(list) => {
                let mut candidates = Vec::new();
                if kind == RuleKind::Allow {
                    // An Allow rule must match every subject, so the first one's candidates
                    // hold them all (and an empty list matches no Allow rule).
                    if let Some(first) = list.first() {
                        self.candidates(kind, first, cwd, &mut candidates);
                    }
                } else {
                    for subject in list {
                        self.candidates(kind, subject, cwd, &mut candidates);
                    }
                }
                candidates.sort_unstable();
                candidates.dedup();
                let bound = self.plain.unwrap_or(u32::MAX);
                candidates
                    .into_iter()
                    .take_while(|&i| i < bound)
                    .find(|&i| {
                        rules
                            .get(i as usize)
                            .is_some_and(|r| r.matches_content(subjects, cwd))
                    })
            }
        };
        match (content, self.plain) {
            (Some(c), Some(p)) => Some(c.min(p)),
            (c, p) => c.or(p),
        }
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
            let mut builder = GlobSetBuilder::new();
            let mut glob_rules = Vec::new();
            let mut exact: HashMap<&str, Vec<u32>> = HashMap::new();
            for (i, rule) in self.rules.iter().enumerate() {
                let idx = index_of(i);
                if rule.is_tool_glob() {
                    // The pattern compiled once already in `PermissionRule::parse`.
                    if let Ok(glob) = Glob::new(rule.tool_pattern()) {
                        builder.add(glob);
                        glob_rules.push(idx);
                    }
                } else {
                    exact.entry(rule.tool_pattern()).or_default().push(idx);
                }
            }
            Compiled {
                exact: exact
                    .into_iter()
                    .map(|(tool, members)| {
                        (tool.to_owned(), ToolIndex::build(&self.rules, members))
                    })
                    .collect(),
                globs: builder.build().unwrap_or_else(|_| GlobSet::empty()),
                glob_rules,
                glob_memo: RwLock::new(HashMap::new()),
            }
        })
    }

    /// The index of the tool-glob rules matching `tool`, from the memo when it is there.
    fn glob_index(&self, compiled: &Compiled, tool: &str) -> Option<Arc<ToolIndex>> {
        if compiled.glob_rules.is_empty() {
            return None;
        }
        if let Some(hit) = compiled
            .glob_memo
            .read()
            .ok()
            .and_then(|memo| memo.get(tool).cloned())
        {
            return Some(hit);
        }
        let members = compiled
            .globs
            .matches(tool)
            .into_iter()
            .filter_map(|g| compiled.glob_rules.get(g).copied());
        let mut members: Vec<u32> = members.collect();
        members.sort_unstable();
        let index = Arc::new(ToolIndex::build(&self.rules, members));
        if let Ok(mut memo) = compiled.glob_memo.write()
            && memo.len() < GLOB_MEMO_CAP
        {
            memo.insert(tool.to_owned(), Arc::clone(&index));
        }
        Some(index)
    }

    /// Decides `tool` called with `args` (`None`: the content is unknown).
    pub fn check(&self, tool: &str, args: Option<&Value>) -> PermissionResult {
        let compiled = self.compiled();
        let exact = compiled.exact.get(tool);
        let globbed = self.glob_index(compiled, tool);
        let indexes = [exact, globbed.as_deref()];
        let mut subjects: Option<Subjects> = None;
        for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
            let mut best: Option<u32> = None;
            for index in indexes.iter().flatten() {
                let Some(ki) = index.kinds.get(slot(kind)) else {
                    continue;
                };
                let found = if ki.needs_content() {
                    let subj = subjects.get_or_insert_with(|| match args {
                        Some(args) => self.subjects.subjects(tool, args),
                        None => Subjects::Unsplittable,
                    });
                    ki.first_match(kind, &self.rules, subj, self.cwd.as_deref())
                } else {
                    ki.plain
                };
                best = match (best, found) {
                    (Some(b), Some(f)) => Some(b.min(f)),
                    (b, f) => b.or(f),
                };
            }
            if let Some(rule) = best.and_then(|i| self.rules.get(i as usize)) {
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
