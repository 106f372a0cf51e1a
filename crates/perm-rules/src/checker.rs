//! The compiled rule set.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
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
    exact: TextMap<ToolIndex>,
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
    /// Command specifiers by their first word, per kind: one lookup serves all three kinds.
    words: TextMap<[Vec<u32>; 3]>,
}

/// What the word index holds for one subject: the rules under its first word and, for a
/// path-qualified program (`/bin/rm`), under the base name (Deny/Ask only).
#[derive(Clone, Copy, Default)]
struct WordProbe<'a> {
    first: Option<&'a [Vec<u32>; 3]>,
    base: Option<&'a [Vec<u32>; 3]>,
}

/// The rules of one kind, indexed by what their content specifier can match, so a check looks
/// only at rules that can match its subjects. Every list is in insertion order.
#[derive(Debug, Default)]
struct KindIndex {
    /// The first rule without a specifier: it matches whatever the content.
    plain: Option<u32>,
    /// The first content rule: what unanalysable content matches for Deny/Ask.
    first_content: Option<u32>,
    /// Whether any command specifier of this kind is in the tool's word index.
    has_words: bool,
    /// Domain specifiers by domain.
    domains: TextMap<Vec<u32>>,
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

/// The hasher of the maps keyed by rule text (tool names, command words, domains).
///
/// A multiply-rotate hash (FxHash's) is several times cheaper than SipHash on short keys and
/// this runs up to a few times per check. Flooding is not a concern: only policy rules are
/// inserted into these maps; call content only probes them. The glob memo, which inserts tool
/// names chosen by the caller, keeps the default hasher.
#[derive(Debug, Default, Clone, Copy)]
struct FxBuild;

struct FxHasher(u64);

impl BuildHasher for FxBuild {
    type Hasher = FxHasher;

    fn build_hasher(&self) -> FxHasher {
        FxHasher(0)
    }
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            for (to, from) in word.iter_mut().zip(chunk) {
                *to = *from;
            }
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn finish(&self) -> u64 {
        // The table takes its bucket from the low bits, which the multiply leaves depending on
        // the low input bits only (`cmd1`, `cmd2`, ... would share a bucket): mix the high
        // bits down (splitmix64's finaliser).
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

type TextMap<V> = HashMap<String, V, FxBuild>;

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
                IndexKey::Word(word) => {
                    kind.has_words = true;
                    if let Some(list) = index.words.entry(word.to_owned()).or_default().get_mut(s) {
                        list.push(i);
                    }
                }
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

impl ToolIndex {
    /// Looks every subject up in the word index (once per check, for all kinds).
    fn probe(&self, subjects: &Subjects) -> Probes<'_> {
        let Subjects::List(list) = subjects else {
            return Probes::One([WordProbe::default()]);
        };
        if self.words.is_empty() {
            return Probes::One([WordProbe::default()]);
        }
        let one = |subject: &String| {
            let cmd = normalize_command(subject);
            let first = cmd.split_once(' ').map_or(cmd.as_ref(), |(f, _)| f);
            WordProbe {
                first: self.words.get(first),
                base: first
                    .rsplit_once('/')
                    .and_then(|(_, base)| self.words.get(base)),
            }
        };
        match list.as_slice() {
            // The common case; saves an allocation on the hot path.
            [only] => Probes::One([one(only)]),
            many => Probes::Many(many.iter().map(one).collect()),
        }
    }
}

/// The word probes of a check's subjects, inline for a single subject.
enum Probes<'a> {
    One([WordProbe<'a>; 1]),
    Many(Vec<WordProbe<'a>>),
}

impl<'a> Probes<'a> {
    fn as_slice(&self) -> &[WordProbe<'a>] {
        match self {
            Probes::One(one) => one,
            Probes::Many(many) => many,
        }
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

    /// Hands `visit` the rules that can match `subject`, as ascending lists whose union is a
    /// superset of the rules whose specifier matches it.
    fn candidates(
        &self,
        kind: RuleKind,
        subject: &str,
        probe: WordProbe<'_>,
        cwd: Option<&str>,
        visit: &mut dyn FnMut(&[u32]),
    ) {
        if !self.residual.is_empty() {
            visit(&self.residual);
        }
        if self.has_words {
            let s = slot(kind);
            if let Some(list) = probe.first.and_then(|l| l.get(s)) {
                visit(list);
            }
            // `/bin/rm` is `rm` for a Deny/Ask rule (see `spec_matches`).
            if kind != RuleKind::Allow
                && let Some(list) = probe.base.and_then(|l| l.get(s))
            {
                visit(list);
            }
        }
        if !self.domains.is_empty() {
            let host = subject.to_ascii_lowercase();
            let mut rest = host.as_str();
            loop {
                if let Some(list) = self.domains.get(rest) {
                    visit(list);
                }
                match rest.split_once('.') {
                    Some((_, tail)) => rest = tail,
                    None => break,
                }
            }
        }
        if !self.relative_paths.rules.is_empty() || !self.absolute_paths.rules.is_empty() {
            let forms = PathForms::new(subject, cwd);
            let mut hits = Vec::new();
            if let Some(relative) = &forms.relative {
                self.relative_paths.candidates(relative, &mut hits);
            }
            self.absolute_paths.candidates(&forms.normalized, &mut hits);
            if let Some(rooted) = &forms.rooted {
                self.absolute_paths.candidates(rooted, &mut hits);
            }
            hits.sort_unstable();
            visit(&hits);
        }
    }

    /// The first-added rule of `kind` here that matches a call whose content is `subjects`.
    /// `probes` are the tool's word-index entries of each subject, in order.
    fn first_match(
        &self,
        kind: RuleKind,
        rules: &[Arc<PermissionRule>],
        subjects: &Subjects,
        probes: &[WordProbe<'_>],
        cwd: Option<&str>,
    ) -> Option<u32> {
        let list = match subjects {
            // Unanalysable content matches every Deny/Ask content rule and no Allow one.
            Subjects::Unsplittable if kind == RuleKind::Allow => return self.plain,
            Subjects::Unsplittable => return min_of(self.first_content, self.plain),
            Subjects::List(list) => list,
        };
        // A plain rule matches anything: only earlier content rules can be reported.
        let mut best = self.plain;
        let mut visit = |candidates: &[u32]| {
            for &i in candidates {
                if best.is_some_and(|b| i >= b) {
                    break;
                }
                if rules
                    .get(i as usize)
                    .is_some_and(|r| r.matches_content(subjects, cwd))
                {
                    best = Some(i);
                    break;
                }
            }
        };
        if kind == RuleKind::Allow {
            // An Allow rule must match every subject, so the first one's candidates hold
            // them all (and an empty list matches no Allow rule).
            if let Some(first) = list.first() {
                let probe = probes.first().copied().unwrap_or_default();
                self.candidates(kind, first, probe, cwd, &mut visit);
            }
        } else {
            for (n, subject) in list.iter().enumerate() {
                let probe = probes.get(n).copied().unwrap_or_default();
                self.candidates(kind, subject, probe, cwd, &mut visit);
            }
        }
        best
    }
}

fn min_of(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
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
        let mut probes: [Option<Probes<'_>>; 2] = [None, None];
        for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
            if kind == RuleKind::Allow {
                let needs_content = indexes.iter().flatten().any(|ix| {
                    ix.kinds
                        .get(slot(kind))
                        .is_some_and(KindIndex::needs_content)
                });
                if needs_content {
                    let subj: &Subjects = subjects.get_or_insert_with(|| match args {
                        Some(args) => self.subjects.subjects(tool, args),
                        None => Subjects::Unsplittable,
                    });
                    if let Subjects::List(list) = subj
                        && list.len() > 1
                    {
                        return self.allow_each(&indexes, &mut probes, subj, list);
                    }
                }
            }
            let mut best: Option<u32> = None;
            for (index, probe) in indexes.iter().zip(probes.iter_mut()) {
                let Some(index) = index else {
                    continue;
                };
                let Some(ki) = index.kinds.get(slot(kind)) else {
                    continue;
                };
                let found = if ki.needs_content() {
                    let subj = subjects.get_or_insert_with(|| match args {
                        Some(args) => self.subjects.subjects(tool, args),
                        None => Subjects::Unsplittable,
                    });
                    let probe = probe.get_or_insert_with(|| index.probe(subj));
                    let probes = probe.as_slice();
                    ki.first_match(kind, &self.rules, subj, probes, self.cwd.as_deref())
                } else {
                    ki.plain
                };
                best = min_of(best, found);
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

    /// The Allow pass for a call of several simple commands, once no Deny or Ask rule matched:
    /// each subject is judged alone, so the call is allowed only when every subject is allowed
    /// by some Allow rule (design.md L2: "allow only if every subcommand is allowed"); a
    /// subject no rule allows leaves the call to the default. The reported rule is the one
    /// that allowed the first subject.
    fn allow_each<'a>(
        &self,
        indexes: &[Option<&'a ToolIndex>; 2],
        probes: &mut [Option<Probes<'a>>; 2],
        subjects: &Subjects,
        list: &[String],
    ) -> PermissionResult {
        let kind = RuleKind::Allow;
        let mut first_rule: Option<u32> = None;
        for (n, subject) in list.iter().enumerate() {
            let single = Subjects::List(vec![subject.clone()]);
            let mut best: Option<u32> = None;
            for (index, probe) in indexes.iter().zip(probes.iter_mut()) {
                let Some(index) = index else {
                    continue;
                };
                let Some(ki) = index.kinds.get(slot(kind)) else {
                    continue;
                };
                let found = if ki.needs_content() {
                    let probe = probe.get_or_insert_with(|| index.probe(subjects));
                    let one = probe.as_slice().get(n..=n).unwrap_or(&[]);
                    ki.first_match(kind, &self.rules, &single, one, self.cwd.as_deref())
                } else {
                    ki.plain
                };
                best = min_of(best, found);
            }
            match best {
                None => return PermissionResult::default_decision(self.default),
                Some(i) if n == 0 => first_rule = Some(i),
                Some(_) => {}
            }
        }
        match first_rule.and_then(|i| self.rules.get(i as usize)) {
            Some(rule) => PermissionResult {
                decision: kind.decision(),
                rule: Some(Arc::clone(rule)),
                changed_by_mode: None,
            },
            None => PermissionResult::default_decision(self.default),
        }
    }

    /// The first-added Allow rule of `tool` that matches the one content `subject` (a simple
    /// command of a bash call, as the call's subjects list it), judged alone: no splitting,
    /// no Deny or Ask rule, no default. `Guard::evaluate` asks it per simple command to lift
    /// an ask the rule's author could foresee (design.md section 7, "two kinds of ask").
    pub fn allow_rule_for(&self, tool: &str, subject: &str) -> Option<Arc<PermissionRule>> {
        let compiled = self.compiled();
        let exact = compiled.exact.get(tool);
        let globbed = self.glob_index(compiled, tool);
        let single = Subjects::List(vec![subject.to_owned()]);
        let kind = RuleKind::Allow;
        let mut best: Option<u32> = None;
        for index in [exact, globbed.as_deref()].into_iter().flatten() {
            let Some(ki) = index.kinds.get(slot(kind)) else {
                continue;
            };
            let found = if ki.needs_content() {
                let probe = index.probe(&single);
                ki.first_match(
                    kind,
                    &self.rules,
                    &single,
                    probe.as_slice(),
                    self.cwd.as_deref(),
                )
            } else {
                ki.plain
            };
            best = min_of(best, found);
        }
        best.and_then(|i| self.rules.get(i as usize))
            .map(Arc::clone)
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

    fn bash(c: &PermissionChecker, command: &str) -> PermissionResult {
        c.check("run_bash", Some(&serde_json::json!({ "command": command })))
    }

    #[test]
    fn each_subcommand_may_be_allowed_by_its_own_rule() {
        let mut c = PermissionChecker::new();
        c.set_default(Decision::Ask);
        add(&mut c, RuleKind::Allow, "run_bash(ls:*)");
        add(&mut c, RuleKind::Allow, "run_bash(wc:*)");
        add(&mut c, RuleKind::Deny, "run_bash(rm:*)");
        let r = bash(&c, "ls papers | wc -l");
        assert_eq!(r.decision, Decision::Allow);
        assert_eq!(r.rule.as_ref().map(|r| r.text()), Some("run_bash(ls:*)"));
        assert_eq!(bash(&c, "ls && rm -rf x").decision, Decision::Deny);
        // `foo` is allowed by no rule: the default decides the call.
        let r = bash(&c, "ls | foo");
        assert_eq!(r.decision, Decision::Ask);
        assert!(r.rule.is_none());
        c.set_default(Decision::Allow);
        assert_eq!(bash(&c, "ls | foo").decision, Decision::Allow);
    }

    #[test]
    fn allow_rule_for_judges_one_subject_alone() {
        let mut c = PermissionChecker::new();
        c.set_default(Decision::Allow);
        add(&mut c, RuleKind::Allow, "run_bash(cargo test:*)");
        add(&mut c, RuleKind::Allow, "run_bash(git add:*)");
        add(&mut c, RuleKind::Deny, "run_bash(cargo test --nope:*)");
        let rule = |s: &str| c.allow_rule_for("run_bash", s).map(|r| r.text().to_owned());
        assert_eq!(
            rule("cargo test -p x").as_deref(),
            Some("run_bash(cargo test:*)")
        );
        assert_eq!(rule("git add .").as_deref(), Some("run_bash(git add:*)"));
        assert_eq!(rule("cargo build"), None);
        // The subject is one simple command: it is never split again.
        assert_eq!(rule("cargo build && cargo test"), None);
        // Only Allow rules answer; the default is no rule.
        assert_eq!(rule("ls"), None);
        assert_eq!(c.allow_rule_for("read_file", "cargo test"), None);
        add(&mut c, RuleKind::Allow, "read_file");
        assert_eq!(
            c.allow_rule_for("read_file", "x")
                .map(|r| r.text().to_owned())
                .as_deref(),
            Some("read_file")
        );
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
    fn glob_memo_is_bounded_and_answers_past_its_cap() {
        let mut c = PermissionChecker::new();
        add(&mut c, RuleKind::Ask, "mcp__*");
        add(&mut c, RuleKind::Deny, "mcp__*(domain:evil.org)");
        for i in 0..GLOB_MEMO_CAP + 50 {
            let tool = format!("mcp__t{i}");
            assert!(c.check(&tool, Some(&json!({}))).is_denied(), "{tool}");
            assert!(c.check(&tool, Some(&json!({}))).is_denied(), "{tool} again");
        }
        assert_eq!(c.check("read_file", None).decision, Decision::Allow);
        assert_eq!(c.compiled().glob_memo.read().unwrap().len(), GLOB_MEMO_CAP);
        add(&mut c, RuleKind::Deny, "read_*");
        assert!(c.is_denied("read_file"), "add_rule drops the memo");
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
