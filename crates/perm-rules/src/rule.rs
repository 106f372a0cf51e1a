//! One rule: its text, how it was parsed and how it matches a call.

use std::fmt;

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::{Decision, Error, Subjects};

/// What a rule does when it matches. Ordered by strictness like [`Decision`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    /// The call may run.
    Allow,
    /// A person must approve the call.
    Ask,
    /// The call must not run.
    Deny,
}

impl RuleKind {
    /// The decision a matching rule of this kind produces.
    pub fn decision(self) -> Decision {
        match self {
            RuleKind::Allow => Decision::Allow,
            RuleKind::Ask => Decision::Ask,
            RuleKind::Deny => Decision::Deny,
        }
    }

    /// The lowercase name used in policy files.
    pub fn as_str(self) -> &'static str {
        self.decision().as_str()
    }
}

/// Who added a rule. Reported with every decision so a person can find and change it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RuleSource {
    /// A policy file, with the 1-based line of the rule.
    File {
        /// The file.
        path: String,
        /// 1-based line of the rule text.
        line: usize,
    },
    /// An environment variable such as `AGENT_PERMISSIONS_DENY`.
    Env {
        /// The variable.
        var: String,
    },
    /// Added at run time for one session (through an API).
    Session,
    /// Returned by a tool's own `check_permissions(args)`.
    Tool {
        /// The tool.
        name: String,
    },
    /// Added by code (`PermissionChecker::add_rule` without a better source).
    Api,
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleSource::File { path, line } => write!(f, "{path}:{line}"),
            RuleSource::Env { var } => write!(f, "environment variable `{var}`"),
            RuleSource::Session => f.write_str("session rule"),
            RuleSource::Tool { name } => write!(f, "tool `{name}`"),
            RuleSource::Api => f.write_str("rule added by code"),
        }
    }
}

/// The tools whose specifier is a bash command prefix.
pub(crate) const BASH_TOOLS: &[&str] = &["run_bash"];
/// The tools whose specifier is a gitignore-style path glob.
pub(crate) const PATH_TOOLS: &[&str] = &[
    "read_file",
    "file_write",
    "file_edit",
    "glob_files",
    "grep_files",
];

/// How the content specifier matches one subject.
#[derive(Debug, Clone)]
enum Specifier {
    /// `git status`: the simple command equals the text (whitespace-normalised).
    Exact(String),
    /// `git diff:*` or `npm run test *`: the command is the prefix, or the prefix and more words.
    Prefix(String),
    /// A gitignore-style glob over a path; `cwd_relative` for `./x` and `dir/x`.
    /// `globs` are the members of `set`, kept so the checker can merge many path rules into one
    /// set per tool.
    Path {
        set: GlobSet,
        globs: Vec<Glob>,
        cwd_relative: bool,
    },
    /// `domain:example.com`: the host or any subdomain of it.
    Domain(String),
}

/// A Deny, Ask or Allow rule: a tool pattern, an optional content specifier, a message and the
/// place it came from.
///
/// ```
/// use perm_rules::{PermissionRule, RuleKind, RuleSource};
/// let rule = PermissionRule::parse(RuleKind::Deny, "run_bash(rm:*)", RuleSource::Api).unwrap();
/// assert_eq!(rule.tool_pattern(), "run_bash");
/// assert_eq!(rule.specifier(), Some("rm:*"));
/// assert!(PermissionRule::parse(RuleKind::Deny, "run_bash(rm:*", RuleSource::Api).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct PermissionRule {
    kind: RuleKind,
    text: String,
    tool: String,
    tool_glob: Option<GlobMatcher>,
    specifier_text: Option<String>,
    specifier: Option<Specifier>,
    message: Option<String>,
    source: RuleSource,
}

impl PartialEq for PermissionRule {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.text == other.text
            && self.message == other.message
            && self.source == other.source
    }
}

impl Eq for PermissionRule {}

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl PermissionRule {
    /// Parses rule text (`Tool`, `Tool(specifier)`, `mcp__*`, `run_bash(git diff:*)`, ...).
    ///
    /// Errors name the rule and the source; they never panic on any input.
    pub fn parse(kind: RuleKind, text: &str, source: RuleSource) -> Result<PermissionRule, Error> {
        let err = |reason: &str| Error::Rule {
            rule: text.to_owned(),
            location: source.to_string(),
            reason: reason.to_owned(),
        };
        let trimmed = text.trim();
        let (tool, spec) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let inner = trimmed
                    .get(open + 1..)
                    .and_then(|rest| rest.strip_suffix(')'))
                    .ok_or_else(|| err("a specifier must end with `)`"))?;
                (
                    trimmed.get(..open).unwrap_or_default().trim(),
                    Some(inner.trim()),
                )
            }
        };
        if tool.is_empty() {
            return Err(err("the tool name is empty"));
        }
        if !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.:*?[]{},".contains(c))
        {
            return Err(err(
                "a tool name may hold only letters, digits, `_-.:` and glob characters",
            ));
        }
        let tool_glob = if is_glob(tool) {
            let glob = Glob::new(tool).map_err(|e| err(&format!("bad tool glob: {e}")))?;
            Some(glob.compile_matcher())
        } else {
            None
        };
        // `Tool(*)` and `Tool()` are spelled-out forms of `Tool`.
        let spec = spec.filter(|s| !s.is_empty() && *s != "*");
        let specifier = match spec {
            None => None,
            Some(s) => Some(parse_specifier(tool, s).map_err(|reason| err(&reason))?),
        };
        Ok(PermissionRule {
            kind,
            text: trimmed.to_owned(),
            tool: tool.to_owned(),
            tool_glob,
            specifier_text: spec.map(str::to_owned),
            specifier,
            message: None,
            source,
        })
    }

    /// Sets the reason (Deny) or question (Ask) shown to a person.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Deny/Ask/Allow.
    pub fn kind(&self) -> RuleKind {
        self.kind
    }

    /// The rule text as written (trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tool name or tool glob.
    pub fn tool_pattern(&self) -> &str {
        &self.tool
    }

    /// Whether the tool part is a glob (`*`, `mcp__*`) rather than an exact name.
    pub fn is_tool_glob(&self) -> bool {
        self.tool_glob.is_some()
    }

    /// The content specifier, if any.
    pub fn specifier(&self) -> Option<&str> {
        self.specifier_text.as_deref()
    }

    /// The configured reason or question.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// Who added the rule.
    pub fn source(&self) -> &RuleSource {
        &self.source
    }

    /// Whether the tool part matches `tool`.
    pub fn matches_tool(&self, tool: &str) -> bool {
        match &self.tool_glob {
            Some(glob) => glob.is_match(tool),
            None => self.tool == tool,
        }
    }

    /// Whether the rule matches a call whose content is `subjects` (tool already matched).
    ///
    /// Allow rules match only when every subject matches (the checker judges the subjects of
    /// a multi-command call one at a time, so each may be allowed by its own rule); Deny/Ask
    /// rules when any does. When
    /// the content is unknown ([`Subjects::Unsplittable`]) an Allow content rule never
    /// matches and a Deny/Ask content rule always does: what cannot be analysed fails closed.
    pub fn matches_content(&self, subjects: &Subjects, cwd: Option<&str>) -> bool {
        let Some(spec) = &self.specifier else {
            return true;
        };
        match subjects {
            Subjects::Unsplittable => self.kind != RuleKind::Allow,
            Subjects::List(list) => {
                let one = |s: &String| spec_matches(spec, s, self.kind, cwd);
                if self.kind == RuleKind::Allow {
                    !list.is_empty() && list.iter().all(one)
                } else {
                    list.iter().any(one)
                }
            }
        }
    }

    /// How the checker's content index files this rule.
    pub(crate) fn index_key(&self) -> IndexKey<'_> {
        match &self.specifier {
            None => IndexKey::Any,
            Some(Specifier::Exact(text) | Specifier::Prefix(text)) => {
                IndexKey::Word(text.split(' ').next().unwrap_or_default())
            }
            Some(Specifier::Path {
                globs,
                cwd_relative,
                ..
            }) => IndexKey::Path {
                globs,
                cwd_relative: *cwd_relative,
            },
            Some(Specifier::Domain(domain)) => IndexKey::Domain(domain),
        }
    }

    /// Whether the rule has a content specifier.
    pub fn has_content(&self) -> bool {
        self.specifier.is_some()
    }

    /// A human description of the rule and where it came from.
    pub fn describe(&self) -> String {
        format!(
            "{} rule `{}` from {}",
            self.kind.as_str(),
            self.text,
            self.source
        )
    }
}

fn parse_specifier(tool: &str, spec: &str) -> Result<Specifier, String> {
    if let Some(domain) = spec.strip_prefix("domain:") {
        let domain = domain.trim().trim_start_matches("*.").to_ascii_lowercase();
        if domain.is_empty() || domain.contains(['/', ' ', '*']) {
            return Err("a `domain:` specifier needs a host name such as `example.com`".into());
        }
        return Ok(Specifier::Domain(domain));
    }
    if tool == "web_fetch" {
        return Err("`web_fetch` specifiers are `domain:<host>`".into());
    }
    let bash = BASH_TOOLS.contains(&tool);
    if bash || (!PATH_TOOLS.contains(&tool) && spec.ends_with(":*")) {
        let (prefix, is_prefix) = if let Some(p) = spec.strip_suffix(":*") {
            (p, true)
        } else if let Some(p) = spec.strip_suffix(" *") {
            (p, true)
        } else {
            (spec, false)
        };
        let prefix = collapse_ws(prefix);
        if prefix.is_empty() {
            return Err("a command prefix is empty".into());
        }
        return Ok(if is_prefix {
            Specifier::Prefix(prefix)
        } else {
            Specifier::Exact(prefix)
        });
    }
    parse_path_spec(spec)
}

fn parse_path_spec(spec: &str) -> Result<Specifier, String> {
    let (pattern, cwd_relative) = if let Some(rest) = spec.strip_prefix("./") {
        (rest.to_owned(), true)
    } else if spec.starts_with('/') || spec.starts_with("**") {
        (spec.to_owned(), false)
    } else if !spec.trim_end_matches('/').contains('/') {
        // gitignore: a pattern without a slash matches at any depth.
        (format!("**/{spec}"), false)
    } else {
        (spec.to_owned(), true)
    };
    let pattern = pattern.trim_end_matches('/');
    if pattern.is_empty() {
        return Err("a path specifier is empty".into());
    }
    let mut builder = GlobSetBuilder::new();
    let mut globs = Vec::with_capacity(2);
    // gitignore: a pattern that names a directory covers everything under it.
    for p in [pattern.to_owned(), format!("{pattern}/**")] {
        let glob = GlobBuilder::new(&p)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("bad path glob: {e}"))?;
        builder.add(glob.clone());
        globs.push(glob);
    }
    let set = builder.build().map_err(|e| format!("bad path glob: {e}"))?;
    Ok(Specifier::Path {
        set,
        globs,
        cwd_relative,
    })
}

/// Lexically normalises a path: drops `.`, resolves `..`, collapses `//`; joins `cwd` first
/// when the path is relative and the cwd is known.
pub(crate) fn normalize_path(path: &str, cwd: Option<&str>) -> String {
    let joined;
    let path = match cwd {
        Some(cwd) if !path.starts_with('/') => {
            joined = format!("{cwd}/{path}");
            joined.as_str()
        }
        _ => path,
    };
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let body = parts.join("/");
    if absolute { format!("/{body}") } else { body }
}

/// A simple command as command specifiers see it: whitespace collapsed to single spaces.
/// Words are what lies between those spaces.
pub(crate) fn normalize_command(subject: &str) -> std::borrow::Cow<'_, str> {
    // Providers usually hand over normalised commands; avoid allocating then.
    // One pass instead of four `contains` scans: this runs several times per check.
    let bytes = subject.as_bytes();
    let needs_collapse = bytes.first() == Some(&b' ')
        || bytes.last() == Some(&b' ')
        || bytes.windows(2).any(|w| w == b"  ")
        || bytes.iter().any(|b| matches!(b, b'\t' | b'\n' | b'\r'));
    if needs_collapse {
        collapse_ws(subject).into()
    } else {
        subject.into()
    }
}

/// The strings a path subject is matched as: one definition shared by [`spec_matches`] and the
/// checker's per-tool path index, so the two cannot drift apart.
pub(crate) struct PathForms {
    /// Lexically normalised, joined to the cwd when relative and the cwd is known.
    pub(crate) normalized: String,
    /// `/` + `normalized` when it is relative (an absolute rule also sees it rooted).
    pub(crate) rooted: Option<String>,
    /// Relative to the cwd, for `./x` rules; `None` when the path is outside the cwd.
    pub(crate) relative: Option<String>,
}

impl PathForms {
    pub(crate) fn new(subject: &str, cwd: Option<&str>) -> Self {
        let normalized = normalize_path(subject, cwd);
        let relative = match cwd {
            Some(cwd) => {
                let cwd = normalize_path(cwd, None);
                // `/` is the one normalised cwd that ends in a separator; without the trim,
                // `/src/a.rs` would count as outside a cwd of `/` and a `./src/**` Deny would
                // not match.
                match normalized.strip_prefix(cwd.trim_end_matches('/')) {
                    Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                        Some(rest.trim_start_matches('/').to_owned())
                    }
                    _ => None,
                }
            }
            None if normalized.starts_with('/') || normalized.starts_with("..") => None,
            None => Some(normalized.clone()),
        };
        let rooted = (!normalized.starts_with('/')).then(|| format!("/{normalized}"));
        PathForms {
            normalized,
            rooted,
            relative,
        }
    }
}

/// How the checker indexes a rule's content specifier.
pub(crate) enum IndexKey<'a> {
    /// No specifier: the rule matches any content.
    Any,
    /// A command specifier: only a simple command whose first word (or, for Deny/Ask, the base
    /// name of a path-qualified first word) is this can match.
    Word(&'a str),
    /// A path specifier and its member globs.
    Path {
        globs: &'a [Glob],
        cwd_relative: bool,
    },
    /// A domain specifier: only this host or a subdomain can match.
    Domain(&'a str),
}

fn spec_matches(spec: &Specifier, subject: &str, kind: RuleKind, cwd: Option<&str>) -> bool {
    match spec {
        Specifier::Exact(text) | Specifier::Prefix(text) => {
            let prefix = matches!(spec, Specifier::Prefix(_));
            let cmd = normalize_command(subject);
            let hit = |c: &str| {
                c == text
                    || (prefix
                        && c.strip_prefix(text.as_str())
                            .is_some_and(|r| r.starts_with(' ')))
            };
            if hit(cmd.as_ref()) {
                return true;
            }
            // `/bin/rm -rf x` is `rm` for a deny rule; an allow rule must name the exact program.
            if kind != RuleKind::Allow {
                let (first, rest) = cmd.split_once(' ').unwrap_or((cmd.as_ref(), ""));
                if let Some((_, base)) = first.rsplit_once('/') {
                    let short = if rest.is_empty() {
                        base.to_owned()
                    } else {
                        format!("{base} {rest}")
                    };
                    return hit(&short);
                }
            }
            false
        }
        Specifier::Path {
            set, cwd_relative, ..
        } => {
            let forms = PathForms::new(subject, cwd);
            if *cwd_relative {
                forms.relative.is_some_and(|r| set.is_match(r.as_str()))
            } else {
                set.is_match(forms.normalized.as_str())
                    || forms.rooted.is_some_and(|r| set.is_match(r.as_str()))
            }
        }
        Specifier::Domain(domain) => {
            let host = subject.to_ascii_lowercase();
            host == *domain
                || host
                    .strip_suffix(domain.as_str())
                    .is_some_and(|rest| rest.ends_with('.'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: RuleKind, text: &str) -> PermissionRule {
        PermissionRule::parse(kind, text, RuleSource::Api).unwrap()
    }

    fn list(items: &[&str]) -> Subjects {
        Subjects::List(items.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn parses_forms() {
        let r = rule(RuleKind::Allow, "read_file");
        assert!(!r.has_content() && !r.is_tool_glob());
        assert!(rule(RuleKind::Deny, "mcp__*").matches_tool("mcp__github__push"));
        assert!(!rule(RuleKind::Deny, "mcp__*").matches_tool("read_file"));
        assert!(!rule(RuleKind::Deny, "run_bash(*)").has_content());
        for bad in [
            "",
            "()",
            "run_bash(",
            "run_bash(git",
            "a b",
            "run_bash( :*)",
            "web_fetch(x.com)",
            "x(domain:)",
            "[(x)",
        ] {
            assert!(
                PermissionRule::parse(RuleKind::Deny, bad, RuleSource::Api).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn bash_prefixes() {
        let diff = rule(RuleKind::Allow, "run_bash(git diff:*)");
        assert!(diff.matches_content(&list(&["git diff"]), None));
        assert!(diff.matches_content(&list(&["git  diff --stat"]), None));
        assert!(!diff.matches_content(&list(&["git diffx"]), None));
        assert!(!diff.matches_content(&list(&["git diff", "rm -rf /"]), None));
        assert!(!diff.matches_content(&Subjects::Unsplittable, None));
        let npm = rule(RuleKind::Allow, "run_bash(npm run test *)");
        assert!(npm.matches_content(&list(&["npm run test --watch"]), None));
        let exact = rule(RuleKind::Allow, "run_bash(git status)");
        assert!(exact.matches_content(&list(&["git status"]), None));
        assert!(!exact.matches_content(&list(&["git status --porcelain"]), None));
        let rm = rule(RuleKind::Deny, "run_bash(rm:*)");
        assert!(rm.matches_content(&list(&["ls", "rm -rf x"]), None));
        assert!(rm.matches_content(&list(&["/bin/rm -rf x"]), None));
        assert!(rm.matches_content(&Subjects::Unsplittable, None));
        assert!(!rm.matches_content(&list(&["ls"]), None));
    }

    #[test]
    fn gitignore_paths() {
        let env = rule(RuleKind::Deny, "read_file(**/.env)");
        assert!(env.matches_content(&list(&["/home/u/p/.env"]), None));
        assert!(env.matches_content(&list(&[".env"]), None));
        let etc = rule(RuleKind::Deny, "file_write(/etc/**)");
        assert!(etc.matches_content(&list(&["/etc/passwd"]), None));
        assert!(etc.matches_content(&list(&["/tmp/../etc/passwd"]), None));
        assert!(!etc.matches_content(&list(&["/tmp/etc/passwd"]), None));
        let key = rule(RuleKind::Deny, "read_file(*.pem)");
        assert!(key.matches_content(&list(&["/a/b/c.pem"]), None));
        let src = rule(RuleKind::Allow, "file_edit(./src/**)");
        assert!(src.matches_content(&list(&["/repo/src/lib.rs"]), Some("/repo")));
        assert!(src.matches_content(&list(&["/src/lib.rs"]), Some("/")));
        assert!(src.matches_content(&list(&["src/lib.rs"]), Some("/")));
        assert!(src.matches_content(&list(&["src/lib.rs"]), Some("/repo")));
        assert!(!src.matches_content(&list(&["/other/src/lib.rs"]), Some("/repo")));
        assert!(!src.matches_content(&list(&["src/../../etc/passwd"]), Some("/repo")));
    }

    #[test]
    fn domains() {
        let d = rule(RuleKind::Allow, "web_fetch(domain:example.com)");
        assert!(d.matches_content(&list(&["example.com"]), None));
        assert!(d.matches_content(&list(&["docs.example.com"]), None));
        assert!(!d.matches_content(&list(&["badexample.com"]), None));
    }

    #[test]
    fn normalizes() {
        assert_eq!(normalize_path("/a/./b/../c//d", None), "/a/c/d");
        assert_eq!(normalize_path("/../x", None), "/x");
        assert_eq!(normalize_path("x/../../y", None), "../y");
        assert_eq!(normalize_path("y", Some("/r")), "/r/y");
    }
}
