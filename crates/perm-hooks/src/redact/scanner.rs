//! `SecretScanner`: one Aho-Corasick pass over every detector's anchors, then each hit's regex,
//! anchored at the hit, or the `NAME=value` judge.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, LazyLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};
use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde_json::Value;

use super::assign::Assignment;
use super::table::{self, Check, DetectorSpec, Example, Mask, base64url_decode, entropy};
use crate::config::RedactionConfig;
use crate::error::Error;

/// One secret found: which detector, and the byte span that was (or would be) masked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFinding {
    /// The detector's id, e.g. `github-token`, as shown in `[REDACTED:<id>]`.
    pub detector: Arc<str>,
    /// The masked bytes of the scanned text (for [`SecretScanner::redact_json`], of the string
    /// at [`SecretFinding::pointer`]).
    pub span: Range<usize>,
    /// For [`SecretScanner::redact_json`]: the JSON pointer (RFC 6901) of the string; empty for
    /// plain text.
    pub pointer: String,
}

/// The result of [`SecretScanner::redact`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text with each secret replaced by `[REDACTED:<id>]`; borrowed when nothing was found.
    /// Each replacement keeps the newlines of what it replaced, so line numbers still hold.
    pub text: Cow<'a, str>,
    /// What was masked, in text order, spans in the *input*.
    pub findings: Vec<SecretFinding>,
}

/// A detector's regex and the index of its `secret` group, compiled on first use.
#[derive(Debug)]
struct LazyRegex {
    source: String,
    cell: std::sync::OnceLock<Result<CompiledRegex, regex::Error>>,
}

#[derive(Debug)]
struct CompiledRegex {
    re: Regex,
    secret_group: Option<usize>,
}

impl LazyRegex {
    fn new(source: String) -> Self {
        LazyRegex {
            source,
            cell: std::sync::OnceLock::new(),
        }
    }

    fn get(&self) -> Result<&CompiledRegex, &regex::Error> {
        self.cell
            .get_or_init(|| {
                let re = Regex::new(&self.source)?;
                let secret_group = re.capture_names().position(|n| n == Some("secret"));
                Ok(CompiledRegex { re, secret_group })
            })
            .as_ref()
    }
}

#[derive(Debug)]
struct Detector {
    id: Arc<str>,
    /// `\A(?:pattern)`, run on the text from an anchor hit; unanchored for extras without
    /// anchors. Built-in patterns compile the first time their anchor is met (a hook process
    /// scans a few hundred bytes and meets few anchors); a policy's extras compile at once so a
    /// bad one is an error naming it.
    re: LazyRegex,
    entropy: Option<f64>,
    boundary: bool,
    /// Mask a block's body rather than the match or its `secret` group.
    mask: Option<Mask>,
    /// The longest text the pattern may span from its anchor (bounds the work per hit).
    window: usize,
    /// Loses ties to token formats over the same span.
    generic: bool,
    check: Option<Check>,
    /// Only `url-password`: the stand-in lists, to leave `user:password@` and `user:user@` alone.
    stand_ins: Option<Arc<Assignment>>,
    /// Tried over the whole text (extras without anchors).
    unanchored: bool,
}

/// All detectors, compiled once. Build the default set with [`SecretScanner::default_set`] or a
/// policy's with [`SecretScanner::from_config`]; both are cheap to share (`&self` methods).
#[derive(Debug)]
pub struct SecretScanner {
    detectors: Vec<Detector>,
    /// The `NAME=value` judge and its id, unless disabled.
    assignment: Option<(Arc<str>, Arc<Assignment>)>,
    /// The token formats' anchors (case-sensitive, longest first), and per pattern id the
    /// detectors to try there: those of the anchor and of every anchor that is its prefix.
    tokens: Vec<TokenPrefilter>,
    /// The `NAME=value` words in lower, UPPER and Capitalized spelling (explicit variants
    /// rather than ASCII case folding keep the search on the SIMD prefilter).
    words: Option<AhoCorasick>,
    allow_paths: Option<GlobSet>,
}

// The built-in table is constant and compiled by this crate's tests
// (`the_default_set_compiles`), so the `expect` cannot fire in a tested build.
#[allow(clippy::expect_used)]
static DEFAULT: LazyLock<Arc<SecretScanner>> = LazyLock::new(|| {
    Arc::new(
        SecretScanner::from_config(&RedactionConfig::default())
            .expect("the built-in detector table compiles"),
    )
});

/// The automaton behind the anchor searches. Every hook process that records a row builds
/// the scanner, and a DFA's construction was most of that; texts are searched by the packed
/// (Teddy) prefilter first, whichever automaton confirms a candidate.
pub(crate) const SCAN_AUTOMATON: AhoCorasickKind = AhoCorasickKind::ContiguousNFA;

/// How far a pattern may reach from its anchor unless the table says otherwise.
const DEFAULT_WINDOW: usize = 1024;

/// The token anchors' automaton: unique literals, longest first (leftmost-first then prefers
/// the longest anchor at a position), each pattern leading to the detectors of every anchor
/// that is a prefix of it.
/// A token automaton and, per pattern id, the detectors to try at its hits.
type TokenPrefilter = (AhoCorasick, Vec<Vec<usize>>);

/// Most literals one automaton gets: the limit of aho-corasick's SIMD (Teddy) prefilter.
const TEDDY_MAX: usize = 64;

/// The token anchors' automata: unique literals, longest first (leftmost-first then prefers the
/// longest anchor at a position), each pattern leading to the detectors of every anchor that is
/// a prefix of it. More than [`TEDDY_MAX`] literals (a policy's extras) are split over several
/// automata, so each keeps its SIMD prefilter.
fn token_prefilter(anchors: &[(String, usize)]) -> Result<Vec<TokenPrefilter>, Error> {
    let mut literals: Vec<&str> = anchors.iter().map(|(a, _)| a.as_str()).collect();
    literals.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    literals.dedup();
    literals
        .chunks(TEDDY_MAX)
        .map(|chunk| {
            let targets = chunk
                .iter()
                .map(|lit| {
                    let mut t: Vec<usize> = anchors
                        .iter()
                        .filter(|(a, _)| lit.starts_with(a.as_str()))
                        .map(|&(_, d)| d)
                        .collect();
                    t.sort_unstable();
                    t.dedup();
                    t
                })
                .collect();
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .kind(Some(SCAN_AUTOMATON))
                .build(chunk)
                .map_err(|e| config_error("hooks.redaction", e.to_string()))?;
            Ok((ac, targets))
        })
        .collect()
}

/// `word`, `WORD` and `Word` for each word.
fn spelling_variants(words: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len() * 3);
    for w in words {
        let lower = w.to_ascii_lowercase();
        let mut capital = lower.clone();
        if let Some(first) = capital.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        out.push(w.to_ascii_uppercase());
        out.push(capital);
        out.push(lower);
    }
    out
}

fn config_error(key: &str, message: impl Into<String>) -> Error {
    Error::Config {
        key: key.to_owned(),
        message: message.into(),
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl SecretScanner {
    /// The built-in detectors with no policy changes, compiled on first use.
    pub fn default_set() -> &'static SecretScanner {
        &DEFAULT
    }

    /// The built-in set as a shared handle (for [`RedactionHook::new`](crate::RedactionHook::new)).
    pub fn default_set_arc() -> Arc<SecretScanner> {
        Arc::clone(&DEFAULT)
    }

    /// The built-in detectors minus `disable`, plus `extra`, with the policy's allow-lists.
    /// An unknown id in `disable`, a bad `extra` pattern or a bad glob is an error naming it.
    pub fn from_config(config: &RedactionConfig) -> Result<SecretScanner, Error> {
        let table = table::builtin()
            .map_err(|e| config_error("hooks.redaction", format!("built-in table: {e}")))?;
        let known: Vec<String> = table
            .detector
            .iter()
            .map(|d| d.id.clone())
            .chain([table.assignment.id.clone()])
            .collect();
        for id in &config.disable {
            if !known.contains(id) {
                return Err(config_error(
                    "hooks.redaction.disable",
                    format!("unknown detector `{id}`; known: {}", known.join(", ")),
                ));
            }
        }
        let disabled = |id: &str| config.disable.iter().any(|d| d == id);

        let mut specs: Vec<DetectorSpec> = table
            .detector
            .into_iter()
            .filter(|d| !disabled(&d.id))
            .collect();
        for (i, extra) in config.extra.iter().enumerate() {
            let repeated = config.extra.iter().take(i).any(|e| e.id == extra.id);
            if extra.id.is_empty() || known.contains(&extra.id) || repeated {
                return Err(config_error(
                    "hooks.redaction.extra",
                    format!("detector id `{}` is empty or already taken", extra.id),
                ));
            }
            specs.push(DetectorSpec {
                id: extra.id.clone(),
                anchors: extra.anchors.clone(),
                pattern: extra.pattern.clone(),
                entropy: extra.entropy,
                boundary: !extra.anchors.is_empty(),
                generic: false,
                window: None,
                mask: None,
                check: None,
                example: match (&extra.hit, &extra.miss) {
                    (None, None) => None,
                    (hit, miss) => Some(Example {
                        hit: hit.clone().unwrap_or_default(),
                        miss: miss.clone().unwrap_or_default(),
                    }),
                },
            });
        }

        let judge = Arc::new(Assignment::new(&table.assignment, &config.allow_keys));
        let mut detectors = Vec::with_capacity(specs.len());
        let mut anchors: Vec<(String, usize)> = Vec::new();
        for spec in &specs {
            let unanchored = spec.anchors.is_empty();
            let source = if unanchored {
                spec.pattern.clone()
            } else {
                format!(r"\A(?:{})", spec.pattern)
            };
            let re = LazyRegex::new(source);
            let builtin = !config.extra.iter().any(|e| e.id == spec.id);
            if !builtin && let Err(e) = re.get() {
                return Err(config_error(
                    "hooks.redaction.extra",
                    format!("detector `{}`: bad pattern: {e}", spec.id),
                ));
            }
            let index = detectors.len();
            anchors.extend(spec.anchors.iter().map(|a| (a.clone(), index)));
            detectors.push(Detector {
                id: Arc::from(spec.id.as_str()),
                re,
                entropy: spec.entropy,
                boundary: spec.boundary,
                window: spec.window.unwrap_or(DEFAULT_WINDOW),
                mask: spec.mask,
                generic: spec.generic,
                check: spec.check,
                stand_ins: (spec.id == "url-password").then(|| judge.clone()),
                unanchored,
            });
        }
        let tokens = token_prefilter(&anchors)?;

        let assignment = (!disabled(&table.assignment.id))
            .then(|| (Arc::from(table.assignment.id.as_str()), judge.clone()));
        let words = match &assignment {
            Some((_, a)) => Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .kind(Some(SCAN_AUTOMATON))
                    .build(spelling_variants(&a.anchors()))
                    .map_err(|e| config_error("hooks.redaction", e.to_string()))?,
            ),
            None => None,
        };

        let allow_paths = if config.allow_paths.is_empty() {
            None
        } else {
            let mut b = GlobSetBuilder::new();
            for g in &config.allow_paths {
                // A relative glob matches anywhere below: `fixtures/**` == `**/fixtures/**`.
                let full = if g.starts_with('/') || g.starts_with("**") {
                    g.clone()
                } else {
                    format!("**/{}", g.trim_start_matches("./"))
                };
                let glob = Glob::new(&full).map_err(|e| {
                    config_error("hooks.redaction.allow_paths", format!("`{g}`: {e}"))
                })?;
                b.add(glob);
            }
            Some(
                b.build()
                    .map_err(|e| config_error("hooks.redaction.allow_paths", e.to_string()))?,
            )
        };

        let scanner = SecretScanner {
            detectors,
            assignment,
            tokens,
            words,
            allow_paths,
        };
        // Every detector's test pair is checked when it loads, built-in or from the policy: a
        // pattern that misses its own example, or matches its look-alike, is refused. The
        // built-in table alone is constant and checked by `every_detector_masks_its_hit_and_
        // not_its_miss`; re-checking it in every process compiled every detector (most of a
        // hook call's scanner cost), so only a policy that changes the set is checked here.
        if config.disable.is_empty() && config.extra.is_empty() {
            return Ok(scanner);
        }
        let assignment_example = (!disabled(&table.assignment.id))
            .then_some(())
            .and(table.assignment.example.as_ref())
            .map(|e| (table.assignment.id.as_str(), e));
        let examples = specs
            .iter()
            .filter_map(|d| d.example.as_ref().map(|e| (d.id.as_str(), e)))
            .chain(assignment_example);
        for (id, example) in examples {
            let finds = |text: &str| scanner.find(text).iter().any(|f| &*f.detector == id);
            let key = if config.extra.iter().any(|e| e.id == id) {
                "hooks.redaction.extra"
            } else {
                "hooks.redaction"
            };
            if !example.hit.is_empty() && !finds(&example.hit) {
                return Err(config_error(
                    key,
                    format!(
                        "detector `{id}` does not find its example `{}`",
                        example.hit
                    ),
                ));
            }
            if !example.miss.is_empty() && finds(&example.miss) {
                return Err(config_error(
                    key,
                    format!("detector `{id}` matches its look-alike `{}`", example.miss),
                ));
            }
        }
        Ok(scanner)
    }

    /// The ids of the active detectors, in table order (`secret-assignment` last).
    pub fn detector_ids(&self) -> Vec<&str> {
        self.detectors
            .iter()
            .map(|d| &*d.id)
            .chain(self.assignment.as_ref().map(|(id, _)| &**id))
            .collect()
    }

    /// Whether the policy's `allow_paths` exempts output read from `path`.
    pub fn path_allowed(&self, path: &str) -> bool {
        self.allow_paths
            .as_ref()
            .is_some_and(|set| set.is_match(path))
    }

    /// False only when [`find`](Self::find) cannot find anything in `text`: no detector's
    /// anchor occurs in it (every token format is tried only at one of its anchors, and the
    /// `NAME=value` judge only at one of its words), and no detector runs without anchors. A
    /// yes/no over the same automata `find` runs, without its per-call work (spans, the
    /// overlap pass), so a caller with many short texts can skip the scanner for most.
    pub fn may_find(&self, text: &str) -> bool {
        self.detectors.iter().any(|d| d.unanchored)
            || self.tokens.iter().any(|(ac, _)| ac.is_match(text))
            || self.words.as_ref().is_some_and(|ac| ac.is_match(text))
    }

    /// Finds every secret in `text`, non-overlapping, in text order.
    pub fn find(&self, text: &str) -> Vec<SecretFinding> {
        // Specific formats first; `NAME=value` only where no format matched.
        let specific = self.kept(self.specific(text, None));
        let mut generic: Vec<Range<usize>> = Vec::new();
        if let (Some(ac), Some((_, judge))) = (&self.words, &self.assignment) {
            // One judgement per name: the search resumes after the name a word was found in.
            let mut at = 0;
            while let Some(m) = ac.find(Input::new(text).range(at..)) {
                let hit = judge.at(text, m.range());
                at = hit.name_end.max(m.end());
                if let Some(v) = hit.value {
                    at = at.max(v.end);
                    generic.push(v);
                }
                if at >= text.len() {
                    break;
                }
            }
        }
        let id_of = |index: usize| self.detectors.get(index).map(|d| d.id.clone());
        let mut kept: Vec<(Range<usize>, Arc<str>)> = Vec::new();
        match &self.assignment {
            Some((id, _)) if !generic.is_empty() => {
                // Both lists are in text order and disjoint within themselves: merge, dropping
                // a `NAME=value` finding that overlaps a token format's.
                let mut i = 0;
                for r in generic {
                    while let Some((k, index)) = specific.get(i).filter(|(k, _)| k.end <= r.start) {
                        kept.extend(id_of(*index).map(|id| (k.clone(), id)));
                        i += 1;
                    }
                    if specific.get(i).is_none_or(|(k, _)| k.start >= r.end) {
                        kept.push((r, id.clone()));
                    }
                }
                kept.extend(
                    specific
                        .into_iter()
                        .skip(i)
                        .filter_map(|(k, index)| id_of(index).map(|id| (k, id))),
                );
            }
            _ => kept.extend(
                specific
                    .into_iter()
                    .filter_map(|(k, index)| id_of(index).map(|id| (k, id))),
            ),
        }
        kept.into_iter()
            .map(|(span, detector)| SecretFinding {
                detector,
                span,
                pointer: String::new(),
            })
            .collect()
    }

    /// The detector of the first finding of [`find`](Self::find) (in text order) for which
    /// `refuses` holds, without building the findings: for a reader that only asks whether
    /// `text` holds a secret it must refuse. Stops at the first such finding that no later
    /// anchor hit can displace, and runs the `NAME=value` pass only when `refuses` holds for
    /// its id (its findings never displace a token format's, so skipping it changes nothing
    /// else).
    pub fn sniff(&self, text: &str, refuses: impl Fn(&str) -> bool) -> Option<Arc<str>> {
        let refused = |index: usize| self.detectors.get(index).is_some_and(|d| refuses(&d.id));
        let specific = self.kept(self.specific(text, Some(&refused)));
        let first = specific.iter().find(|(_, index)| refused(*index));
        let first_id = first.and_then(|(_, index)| self.detectors.get(*index).map(|d| &d.id));
        let (Some(ac), Some((id, judge))) = (&self.words, &self.assignment) else {
            return first_id.cloned();
        };
        if !refuses(id) {
            return first_id.cloned();
        }
        // A `NAME=value` finding comes out before `first` when it ends before it starts and
        // overlaps no kept format span (every kept span before `first` is final).
        let limit = first.map_or(text.len(), |(r, _)| r.start);
        let mut at = 0;
        while let Some(m) = ac.find(Input::new(text).range(at..)) {
            if m.start() >= limit {
                break;
            }
            let hit = judge.at(text, m.range());
            at = hit.name_end.max(m.end());
            if let Some(v) = hit.value {
                at = at.max(v.end);
                if v.start >= limit {
                    break;
                }
                let overlaps = specific
                    .iter()
                    .any(|(k, _)| k.start < v.end && v.start < k.end);
                if !overlaps {
                    return Some(id.clone());
                }
            }
            if at >= text.len() {
                break;
            }
        }
        first_id.cloned()
    }

    /// The token formats' spans, with their detector's index, in the order [`kept`](Self::kept)
    /// breaks ties by: per automaton in hit order, then the unanchored extras.
    ///
    /// With `refused`, the last automaton stops at a hit past the start of the first kept span
    /// whose detector is refused: every later hit yields a span starting after it, which sorts
    /// after it and so cannot drop it or anything before it from the kept list.
    fn specific(
        &self,
        text: &str,
        refused: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec<(Range<usize>, usize)> {
        let mut loose: Vec<(Range<usize>, usize)> = Vec::new();
        for (index, det) in self.detectors.iter().enumerate() {
            if det.unanchored
                && let Ok(compiled) = det.re.get()
            {
                for caps in compiled.re.captures_iter(text) {
                    if let Some(span) = det.accept(text, &caps, 0, compiled.secret_group) {
                        loose.push((span, index));
                    }
                }
            }
        }
        let first_refused_start = |spans: &[(Range<usize>, usize)]| {
            let refused = refused?;
            let all = spans.iter().chain(&loose).cloned().collect();
            self.kept(all)
                .into_iter()
                .find(|(_, index)| refused(*index))
                .map(|(r, _)| r.start)
        };

        let mut specific: Vec<(Range<usize>, usize)> = Vec::new();
        let mut next_try = vec![0usize; self.detectors.len()];
        let last = self.tokens.len().saturating_sub(1);
        for (k, (ac, targets)) in self.tokens.iter().enumerate() {
            // Per automaton: a detector whose anchors landed in two automata sees each one's
            // hits in text order; a span found twice is dropped by the overlap pass.
            next_try.fill(0);
            // Stopping early is sound only once every other source of spans is in.
            let mut stop_after = if k == last {
                first_refused_start(&specific)
            } else {
                None
            };
            // Restart one byte after each hit's start, so an anchor starting inside another
            // one's text is still seen (`disk-----BEGIN`): token anchors are rare, so this is
            // cheap.
            let mut at = 0;
            while let Some(m) = ac.find(Input::new(text).range(at..)) {
                if stop_after.is_some_and(|start| m.start() > start) {
                    break;
                }
                at = m.start() + 1;
                let mut found = false;
                for &index in targets.get(m.pattern().as_usize()).into_iter().flatten() {
                    let (Some(slot), Some(det)) =
                        (next_try.get_mut(index), self.detectors.get(index))
                    else {
                        continue;
                    };
                    if m.start() < *slot {
                        continue;
                    }
                    if let Some(span) = det.try_at(text, m.start()) {
                        *slot = span.end.max(m.end());
                        specific.push((span, index));
                        found = true;
                    }
                }
                if found && k == last {
                    stop_after = first_refused_start(&specific);
                }
            }
        }
        specific.extend(loose);
        specific
    }

    /// The non-overlapping spans `find` reports, in text order: at each start the longest,
    /// a token format before a generic shape over the same span.
    fn kept(&self, mut specific: Vec<(Range<usize>, usize)>) -> Vec<(Range<usize>, usize)> {
        specific.sort_by_key(|(r, index)| {
            let generic = self.detectors.get(*index).is_some_and(|d| d.generic);
            (r.start, std::cmp::Reverse(r.end), generic)
        });
        let mut kept = Vec::new();
        let mut end = 0;
        for (r, index) in specific {
            if r.start >= end && self.detectors.get(index).is_some() {
                end = r.end;
                kept.push((r, index));
            }
        }
        kept
    }

    /// Masks every secret in `text` as `[REDACTED:<id>]`, keeping the newlines it covered.
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        let findings = self.find(text);
        if findings.is_empty() {
            return Redacted {
                text: Cow::Borrowed(text),
                findings,
            };
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for f in &findings {
            let (Some(before), Some(secret)) =
                (text.get(last..f.span.start), text.get(f.span.clone()))
            else {
                continue;
            };
            out.push_str(before);
            out.push_str("[REDACTED:");
            out.push_str(&f.detector);
            out.push(']');
            for _ in secret.matches('\n') {
                out.push('\n');
            }
            last = f.span.end;
        }
        out.push_str(text.get(last..).unwrap_or_default());
        Redacted {
            text: Cow::Owned(out),
            findings,
        }
    }

    /// Masks secrets in every string of a JSON value (a tool response). A string under a
    /// secret-like key (`{"password": "..."}`) is judged as that key's value.
    pub fn redact_json(&self, value: &Value) -> (Value, Vec<SecretFinding>) {
        let mut out = value.clone();
        let mut findings = Vec::new();
        let mut pointer = String::new();
        self.redact_value(&mut out, None, &mut pointer, &mut findings);
        (out, findings)
    }

    fn redact_value(
        &self,
        value: &mut Value,
        key: Option<&str>,
        pointer: &mut String,
        findings: &mut Vec<SecretFinding>,
    ) {
        match value {
            Value::String(s) => {
                if let (Some(key), Some((id, a))) = (key, &self.assignment)
                    && a.name_is_secret(key)
                    && a.value_is_secret(s, true)
                    && self.find(s).is_empty()
                {
                    findings.push(SecretFinding {
                        detector: id.clone(),
                        span: 0..s.len(),
                        pointer: pointer.clone(),
                    });
                    *s = format!("[REDACTED:{id}]");
                    return;
                }
                let r = self.redact(s);
                if let Cow::Owned(text) = r.text {
                    findings.extend(r.findings.into_iter().map(|mut f| {
                        f.pointer.clone_from(pointer);
                        f
                    }));
                    *s = text;
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    self.redact_value(item, None, pointer, findings);
                    pointer.truncate(len);
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    self.redact_value(item, Some(k), pointer, findings);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }
}

impl Detector {
    /// Tries the detector at an anchor hit at `pos`; the masked span if it is a secret.
    fn try_at(&self, text: &str, pos: usize) -> Option<Range<usize>> {
        if self.boundary
            && pos
                .checked_sub(1)
                .and_then(|p| text.as_bytes().get(p))
                .is_some_and(|&b| is_word_byte(b))
        {
            return None;
        }
        let end = text.floor_char_boundary(pos.saturating_add(self.window));
        let rest = text.get(pos..end)?;
        // The DFA finds the match; the capture engine then runs on the match alone, and only
        // when there is a group to read.
        // A built-in pattern that does not compile is impossible in a tested build
        // (`every_builtin_pattern_compiles`).
        let compiled = self.re.get().ok()?;
        let m = compiled.re.find(rest)?;
        if self.mask == Some(Mask::Body) {
            let span = body_of(text, pos, pos + m.end())?;
            return self
                .judge(text, span.end, text.get(span.clone())?, m.as_str(), "")
                .then_some(span);
        }
        if compiled.secret_group.is_none() && self.stand_ins.is_none() {
            let span = pos + m.start()..pos + m.end();
            return self
                .judge(text, span.end, m.as_str(), m.as_str(), "")
                .then_some(span);
        }
        let caps = compiled.re.captures(rest.get(..m.end())?)?;
        self.accept(text, &caps, pos, compiled.secret_group)
    }

    fn accept(
        &self,
        text: &str,
        caps: &regex::Captures<'_>,
        offset: usize,
        secret_group: Option<usize>,
    ) -> Option<Range<usize>> {
        let whole = caps.get(0)?;
        let secret = match secret_group {
            Some(g) => caps.get(g)?,
            None => whole,
        };
        let user = caps.name("user").map_or("", |m| m.as_str());
        self.judge(
            text,
            offset + whole.end(),
            secret.as_str(),
            whole.as_str(),
            user,
        )
        .then_some(offset + secret.start()..offset + secret.end())
    }

    /// The checks after the shape: the boundary after the match (ending at `end` in `text`),
    /// the entropy floor, the named check, and for URL passwords the stand-ins.
    fn judge(&self, text: &str, end: usize, secret: &str, whole: &str, user: &str) -> bool {
        if self.boundary && text.as_bytes().get(end).is_some_and(|&b| is_word_byte(b)) {
            return false;
        }
        if let Some(floor) = self.entropy
            && entropy(secret) < floor
        {
            return false;
        }
        match self.check {
            Some(Check::JwtHeader) if !jwt_header_ok(whole) => return false,
            Some(Check::HasDigit)
                if !(secret.bytes().any(|b| b.is_ascii_digit())
                    && secret.bytes().any(|b| b.is_ascii_alphabetic())) =>
            {
                return false;
            }
            Some(Check::BasicCredentials) if !basic_credentials(secret) => return false,
            Some(Check::Base64PrivateKey) if !base64_private_key(secret) => return false,
            _ => {}
        }
        if let Some(judge) = &self.stand_ins
            && url_stand_in(judge, user, secret)
        {
            return false;
        }
        true
    }
}

/// The body of a block whose head (`-----BEGIN ...` and the first base64 characters) is
/// `text[start..head_end]`: from after the head's first line break (raw, or `\n` escaped in a
/// JSON string) over every base64/line-break byte that follows, i.e. up to the `-----END` line
/// or wherever the (possibly truncated) body stops.
fn body_of(text: &str, start: usize, head_end: usize) -> Option<Range<usize>> {
    let head = text.get(start..head_end)?;
    let raw = head.find('\n').map(|i| i + 1);
    let escaped = head.find("\\n").map(|i| i + 2);
    let body_start = start
        + match (raw, escaped) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
    let bytes = text.as_bytes();
    let mut end = head_end;
    while bytes.get(end).is_some_and(|&b| {
        b.is_ascii_alphanumeric()
            || matches!(b, b'+' | b'/' | b'=' | b'\\' | b'\r' | b'\n' | b'\t' | b' ')
    }) {
        end += 1;
    }
    (body_start < end).then_some(body_start..end)
}

/// Whether `b64` decodes to printable ASCII `user:password` with a non-empty password.
fn basic_credentials(b64: &str) -> bool {
    base64url_decode(b64).is_some_and(|bytes| {
        bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ')
            && bytes
                .iter()
                .position(|&b| b == b':')
                .is_some_and(|colon| colon + 1 < bytes.len())
    })
}

/// Whether base64 `text` starts with an encoded `-----BEGIN ... PRIVATE KEY` line (the first 64
/// characters decode to 48 bytes, room for the longest header).
fn base64_private_key(text: &str) -> bool {
    let head = text.get(..64).unwrap_or(text);
    base64url_decode(head).is_some_and(|bytes| {
        let line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
        line.starts_with(b"-----BEGIN ") && line.windows(11).any(|w| w == b"PRIVATE KEY")
    })
}

fn jwt_header_ok(token: &str) -> bool {
    let Some(header) = token.split('.').next() else {
        return false;
    };
    base64url_decode(header)
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .is_some_and(|v| v.get("alg").is_some_and(Value::is_string))
}

/// A stand-in password in a URL: a reference (`${PASS}`, `%s`, `<pass>`), a mask, a
/// documentation placeholder (`user:password@`), or the user name again (`postgres:postgres@`,
/// a public default).
fn url_stand_in(judge: &Assignment, user: &str, secret: &str) -> bool {
    secret == user
        || super::assign::is_reference(secret)
        || secret.starts_with(['<', '{'])
        || judge.is_stand_in(secret)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExtraDetector;

    fn ids(findings: &[SecretFinding]) -> Vec<&str> {
        findings.iter().map(|f| &*f.detector).collect()
    }

    #[test]
    fn the_default_set_compiles() {
        let s = SecretScanner::default_set();
        assert!(s.detector_ids().contains(&"github-token"));
        assert!(s.detector_ids().contains(&"secret-assignment"));
    }

    #[test]
    fn every_builtin_pattern_compiles() {
        // Built-ins compile on first use; this is what makes a failure there impossible.
        let s = SecretScanner::from_config(&RedactionConfig::default()).unwrap();
        for det in &s.detectors {
            assert!(det.re.get().is_ok(), "{}", det.id);
        }
    }

    #[test]
    fn a_bad_extra_pattern_is_refused_at_once() {
        let config: RedactionConfig =
            toml::from_str("[[extra]]\nid = \"mine\"\nanchors = [\"tok_\"]\npattern = \"tok_(\"\n")
                .unwrap();
        let err = SecretScanner::from_config(&config).unwrap_err();
        assert!(err.to_string().contains("mine"), "{err}");
    }

    /// Every table entry's test pair: the hit is masked by that detector, the miss by none
    /// (the AWS secret's look-alike holds a real-shaped key id, masked by its own detector).
    #[test]
    fn every_detector_masks_its_hit_and_not_its_miss() {
        let table = table::builtin().unwrap();
        let scanner = SecretScanner::default_set();
        let mut pairs: Vec<(String, _)> = table
            .detector
            .iter()
            .map(|d| (d.id.clone(), d.example.clone().unwrap()))
            .collect();
        pairs.push((
            table.assignment.id.clone(),
            table.assignment.example.clone().unwrap(),
        ));
        for (id, ex) in pairs {
            let hit = scanner.redact(&ex.hit);
            assert!(
                ids(&hit.findings).contains(&id.as_str()),
                "{id}: hit not found by {id}: {:?} -> {}",
                hit.findings,
                hit.text
            );
            assert!(
                hit.text.contains(&format!("[REDACTED:{id}]")),
                "{id}: {}",
                hit.text
            );
            assert_eq!(
                hit.text.lines().count(),
                ex.hit.lines().count(),
                "{id}: lines"
            );
            // The look-alike is not this detector's; it passes untouched unless it holds
            // another detector's secret on purpose (a key id next to a non-secret).
            let miss = scanner.redact(&ex.miss);
            assert!(
                !ids(&miss.findings).contains(&id.as_str()),
                "{id}: look-alike matched: {:?} in {}",
                miss.findings,
                ex.miss
            );
            if id != "aws-secret-access-key" {
                assert!(miss.findings.is_empty(), "{id}: {:?}", miss.findings);
                assert!(matches!(miss.text, Cow::Borrowed(_)));
            }
        }
    }

    #[test]
    fn disabling_turns_a_detector_off_and_unknown_ids_are_named() {
        let jwt =
            "t=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MjQyIn0.Qm3Tz8LkW2xRb7NvYc4Hd9Pf";
        assert_eq!(ids(&SecretScanner::default_set().find(jwt)), ["jwt"]);
        let off = SecretScanner::from_config(&RedactionConfig {
            disable: vec!["jwt".into()],
            ..RedactionConfig::default()
        })
        .unwrap();
        assert!(off.find(jwt).is_empty());
        let err = SecretScanner::from_config(&RedactionConfig {
            disable: vec!["jwtt".into()],
            ..RedactionConfig::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`jwtt`") && err.contains("hooks.redaction.disable"),
            "{err}"
        );
    }

    #[test]
    fn extra_detectors_with_and_without_anchors() {
        let s = SecretScanner::from_config(&RedactionConfig {
            extra: vec![
                ExtraDetector {
                    id: "acme-key".into(),
                    pattern: "acme_[a-z0-9]{12}".into(),
                    entropy: Some(2.5),
                    anchors: vec!["acme_".into()],
                    hit: None,
                    miss: None,
                },
                ExtraDetector {
                    id: "internal-pin".into(),
                    pattern: r"PIN (?P<secret>\d{6})\b".into(),
                    entropy: None,
                    anchors: vec![],
                    hit: None,
                    miss: None,
                },
            ],
            ..RedactionConfig::default()
        })
        .unwrap();
        let r = s.redact("k=acme_q8w3l2m9t7k1 and PIN 493027.");
        assert_eq!(
            r.text,
            "k=[REDACTED:acme-key] and PIN [REDACTED:internal-pin]."
        );
        assert!(s.find("k=acme_aaaaaaaaaaaa").is_empty(), "entropy floor");
        for bad in [("github-token", "x"), ("x", "(")] {
            let err = SecretScanner::from_config(&RedactionConfig {
                extra: vec![ExtraDetector {
                    id: bad.0.into(),
                    pattern: bad.1.into(),
                    entropy: None,
                    anchors: vec![],
                    hit: None,
                    miss: None,
                }],
                ..RedactionConfig::default()
            })
            .unwrap_err();
            assert!(err.to_string().contains("hooks.redaction.extra"), "{err}");
        }
    }

    #[test]
    fn more_anchors_than_one_simd_automaton_takes_still_find_everything() {
        let extra = (0..80)
            .map(|i| ExtraDetector {
                id: format!("corp-{i}"),
                pattern: format!("corp{i}x_[a-z0-9]{{12}}"),
                entropy: None,
                anchors: vec![format!("corp{i}x_")],
                hit: None,
                miss: None,
            })
            .collect();
        let s = SecretScanner::from_config(&RedactionConfig {
            extra,
            ..RedactionConfig::default()
        })
        .unwrap();
        assert!(s.tokens.len() > 1, "split over several automata");
        let text = "a corp3x_q8w3l2m9t7k1 b corp79x_q8w3l2m9t7k1 c ghp_R8kT2mWq9ZxLb4NcV7yHd3PfJs6GtE1aUo5i";
        assert_eq!(ids(&s.find(text)), ["corp-3", "corp-79", "github-token"]);
    }

    #[test]
    fn an_extra_detector_is_checked_against_its_examples() {
        let extra = |hit: &str, miss: &str| RedactionConfig {
            extra: vec![ExtraDetector {
                id: "acme-key".into(),
                pattern: "acme_[a-z0-9]{12}".into(),
                entropy: None,
                anchors: vec!["acme_".into()],
                hit: Some(hit.into()),
                miss: Some(miss.into()),
            }],
            ..RedactionConfig::default()
        };
        assert!(SecretScanner::from_config(&extra("k=acme_q8w3l2m9t7k1", "acme_short")).is_ok());
        let err = SecretScanner::from_config(&extra("k=acme_short", "x")).unwrap_err();
        assert!(
            err.to_string().contains("does not find its example"),
            "{err}"
        );
        let err = SecretScanner::from_config(&extra("acme_q8w3l2m9t7k1", "acme_q8w3l2m9t7k2"))
            .unwrap_err();
        assert!(err.to_string().contains("matches its look-alike"), "{err}");
    }

    #[test]
    fn allow_keys_and_paths() {
        let s = SecretScanner::from_config(&RedactionConfig {
            allow_keys: vec!["FIXTURE_PASSWORD".into()],
            allow_paths: vec!["tests/fixtures/**".into()],
            ..RedactionConfig::default()
        })
        .unwrap();
        assert!(s.find("FIXTURE_PASSWORD=hunter2x").is_empty());
        assert_eq!(ids(&s.find("DB_PASSWORD=hunter2x")), ["secret-assignment"]);
        assert!(s.path_allowed("/home/u/proj/tests/fixtures/keys.pem"));
        assert!(s.path_allowed("tests/fixtures/a/b.env"));
        assert!(!s.path_allowed("src/tests/fixture.rs"));
        assert!(!SecretScanner::default_set().path_allowed("tests/fixtures/x"));
    }

    #[test]
    fn structure_and_line_count_are_kept() {
        let text = "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gt\nZWQyNTUxOQAAACD1cJmQ3k7Lw9sFhQ2eXbVcU6aGiO5rHt1PlMzK3nW8yB\n-----END OPENSSH PRIVATE KEY-----\nz";
        let r = SecretScanner::default_set().redact(text);
        assert_eq!(
            r.text,
            "a\n-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED:private-key]\n\n-----END OPENSSH PRIVATE KEY-----\nz"
        );
        assert_eq!(r.text.lines().count(), text.lines().count());
    }

    #[test]
    fn a_truncated_key_is_masked_to_the_end() {
        let text =
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";
        let r = SecretScanner::default_set().redact(text);
        assert_eq!(
            r.text,
            "-----BEGIN PRIVATE KEY-----\n[REDACTED:private-key]"
        );
    }

    #[test]
    fn url_passwords_keep_user_and_host() {
        let s = SecretScanner::default_set();
        assert_eq!(
            s.redact("postgres://app:Zq8Lm3Tx7Wb2@db:5432/x").text,
            "postgres://app:[REDACTED:url-password]@db:5432/x"
        );
        for text in [
            "postgres://user:password@localhost/db",
            "redis://:${REDIS_PASSWORD}@cache:6379",
            "ssh://git@github.com/o/r.git",
            "http://localhost:8080/path",
            "mysql://root:root@127.0.0.1/db",
            "amqp://guest:<password>@mq",
            "postgres://u:%(password)s@h/db",
        ] {
            assert!(s.find(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn url_passwords_may_hold_at_signs_and_percent_escapes() {
        let s = SecretScanner::default_set();
        assert_eq!(
            s.redact("mysql://app:Zq8@Lm3Tx7@db.internal/x").text,
            "mysql://app:[REDACTED:url-password]@db.internal/x"
        );
        assert_eq!(
            s.redact("amqp://app:%40Zq8Lm3Tx7@mq").text,
            "amqp://app:[REDACTED:url-password]@mq"
        );
    }

    #[test]
    fn pgp_and_encrypted_key_blocks() {
        let s = SecretScanner::default_set();
        let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBGV1c2UBCADm3Tz8LkW2xRb7NvYc4Hd9PfJs6GtE1aUo5iKq3Wx7Yz0LmN4pR8\n=Xq9a\n-----END PGP PRIVATE KEY BLOCK-----\n";
        assert_eq!(
            s.redact(pgp).text,
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n[REDACTED:private-key]\n\n\n\n-----END PGP PRIVATE KEY BLOCK-----\n"
        );
        let enc = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQIq8v3Jm1ZxYpR0T7dN4kL\n-----END ENCRYPTED PRIVATE KEY-----";
        assert_eq!(ids(&s.find(enc)), ["private-key"]);
    }

    #[test]
    fn overlapping_detectors_report_the_specific_one() {
        let r = SecretScanner::default_set()
            .redact("GITHUB_TOKEN=ghp_R8kT2mWq9ZxLb4NcV7yHd3PfJs6GtE1aUo5i\n");
        assert_eq!(r.text, "GITHUB_TOKEN=[REDACTED:github-token]\n");
        assert_eq!(ids(&r.findings), ["github-token"]);
    }

    #[test]
    fn json_values_under_secret_keys_are_masked() {
        let v = serde_json::json!({
            "stdout": "token ghp_R8kT2mWq9ZxLb4NcV7yHd3PfJs6GtE1aUo5i",
            "config": { "password": "hunter2x", "authors": ["Ada"] },
            "n": 3
        });
        let (out, findings) = SecretScanner::default_set().redact_json(&v);
        assert_eq!(out["stdout"], "token [REDACTED:github-token]");
        assert_eq!(out["config"]["password"], "[REDACTED:secret-assignment]");
        assert_eq!(out["config"]["authors"][0], "Ada");
        let mut pointers: Vec<&str> = findings.iter().map(|f| f.pointer.as_str()).collect();
        pointers.sort_unstable();
        assert_eq!(pointers, ["/config/password", "/stdout"]);
    }
}
