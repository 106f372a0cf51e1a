#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Behaviour and property tests of perm-rules.

use std::collections::HashMap;
use std::sync::Arc;

use perm_rules::{
    ConfigLayer, ContentSubjects, Decision, DefaultSubjects, HookBlock, HookPermissionRequest,
    Origin, PermissionChecker, PermissionMode, PermissionResult, PermissionRule, PermissionsConfig,
    PrecedenceInputs, RuleKind, RuleSource, Subjects, resolve_permission_precedence,
};
use proptest::prelude::*;
use regex::Regex;
use serde_json::{Value, json};

const TOOLS: &[&str] = &[
    "run_bash",
    "read_file",
    "file_write",
    "mcp__gh__push",
    "web_fetch",
];
const RULES: &[&str] = &[
    "*",
    "run_bash",
    "run_*",
    "mcp__*",
    "read_file",
    "file_write",
    "web_fetch",
    "run_bash(rm:*)",
    "run_bash(ls:*)",
    "run_bash(git status)",
    "run_bash(git diff:*)",
    "read_file(**/.env)",
    "read_file(/etc/**)",
    "file_write(/etc/**)",
    "web_fetch(domain:example.com)",
];
const COMMANDS: &[&str] = &[
    "ls",
    "rm -rf x",
    "git status",
    "git diff --stat",
    "ls && rm x",
    "echo $(id)",
    "ls | git status",
];
const PATHS: &[&str] = &["/etc/passwd", "/repo/.env", "/repo/src/a.rs"];

fn kind() -> impl Strategy<Value = RuleKind> {
    prop_oneof![
        Just(RuleKind::Deny),
        Just(RuleKind::Ask),
        Just(RuleKind::Allow)
    ]
}

fn rules() -> impl Strategy<Value = Vec<(RuleKind, &'static str)>> {
    prop::collection::vec((kind(), prop::sample::select(RULES)), 0..12)
}

fn call() -> impl Strategy<Value = (&'static str, Option<Value>)> {
    (
        prop::sample::select(TOOLS),
        prop::sample::select(COMMANDS),
        prop::sample::select(PATHS),
        any::<bool>(),
    )
        .prop_map(|(tool, cmd, path, some)| {
            let args = json!({"command": cmd, "file_path": path, "url": format!("https://{}/x", if cmd.len() % 2 == 0 { "example.com" } else { "evil.org" })});
            (tool, some.then_some(args))
        })
}

fn checker(rules: &[(RuleKind, &str)]) -> PermissionChecker {
    let mut c = PermissionChecker::new();
    for (k, t) in rules {
        c.add_rule(PermissionRule::parse(*k, t, RuleSource::Api).unwrap());
    }
    c
}

/// The reference model: scan every rule in order, strictest kind first.
fn naive(rules: &[PermissionRule], tool: &str, args: Option<&Value>) -> (Decision, Option<String>) {
    naive_in(rules, tool, args, None)
}

fn naive_in(
    rules: &[PermissionRule],
    tool: &str,
    args: Option<&Value>,
    cwd: Option<&str>,
) -> (Decision, Option<String>) {
    let subjects = match args {
        Some(a) => DefaultSubjects.subjects(tool, a),
        None => Subjects::Unsplittable,
    };
    for kind in [RuleKind::Deny, RuleKind::Ask] {
        for r in rules.iter().filter(|r| r.kind() == kind) {
            if naive_matches(r, tool, &subjects, cwd) {
                return (kind.decision(), Some(r.text().to_owned()));
            }
        }
    }
    let first_allow = |subjects: &Subjects| {
        rules
            .iter()
            .filter(|r| r.kind() == RuleKind::Allow)
            .find(|r| naive_matches(r, tool, subjects, cwd))
    };
    // Several simple commands: each must be allowed by some Allow rule, judged alone; the rule
    // of the first one is reported. Any subject no rule allows leaves the call to the default.
    if let Subjects::List(list) = &subjects
        && list.len() > 1
    {
        let mut reported = None;
        for (n, s) in list.iter().enumerate() {
            match first_allow(&Subjects::List(vec![s.clone()])) {
                None => return (Decision::Allow, None),
                Some(r) if n == 0 => reported = Some(r.text().to_owned()),
                Some(_) => {}
            }
        }
        return (Decision::Allow, reported);
    }
    match first_allow(&subjects) {
        Some(r) => (Decision::Allow, Some(r.text().to_owned())),
        None => (Decision::Allow, None),
    }
}

/// The reference's own matcher. It reads only the rule's text and kind and shares no code with
/// the engine (no `matches_tool`, no `matches_content`, no globset): globs become regexes by a
/// few lines below, command specifiers compare words, paths are normalised here. So a bug in
/// the engine's matcher makes the two sides disagree instead of hiding in both.
fn naive_matches(
    rule: &PermissionRule,
    tool: &str,
    subjects: &Subjects,
    cwd: Option<&str>,
) -> bool {
    let text = rule.text();
    let (tool_pattern, spec) = match text.split_once('(') {
        None => (text, None),
        Some((t, rest)) => (t.trim(), rest.strip_suffix(')').map(str::trim)),
    };
    let tool_hit = if tool_pattern.contains(['*', '?', '[', '{']) {
        Regex::new(&format!("^{}$", glob_regex(tool_pattern, false)))
            .unwrap()
            .is_match(tool)
    } else {
        tool_pattern == tool
    };
    if !tool_hit {
        return false;
    }
    let Some(spec) = spec.filter(|s| !s.is_empty() && *s != "*") else {
        return true;
    };
    let allow = rule.kind() == RuleKind::Allow;
    let list = match subjects {
        // Unknown content: a Deny/Ask content rule matches, an Allow content rule never does.
        Subjects::Unsplittable => return !allow,
        Subjects::List(list) => list,
    };
    let one = |subject: &String| naive_spec_matches(tool_pattern, spec, allow, subject, cwd);
    if allow {
        !list.is_empty() && list.iter().all(one)
    } else {
        list.iter().any(one)
    }
}

fn naive_spec_matches(
    tool: &str,
    spec: &str,
    allow: bool,
    subject: &str,
    cwd: Option<&str>,
) -> bool {
    const PATH_TOOLS: &[&str] = &[
        "read_file",
        "file_write",
        "file_edit",
        "glob_files",
        "grep_files",
    ];
    if let Some(domain) = spec.strip_prefix("domain:") {
        let domain = domain.trim().trim_start_matches("*.").to_ascii_lowercase();
        let host = subject.to_ascii_lowercase();
        return host == domain || host.ends_with(&format!(".{domain}"));
    }
    if tool == "run_bash" || (!PATH_TOOLS.contains(&tool) && spec.ends_with(":*")) {
        let (prefix, is_prefix) = match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *"))
        {
            Some(p) => (p, true),
            None => (spec, false),
        };
        let want: Vec<&str> = prefix.split_whitespace().collect();
        // Words as the shell splits them: on blanks and newlines only.
        let words: Vec<&str> = subject
            .split([' ', '\t', '\n', '\r'])
            .filter(|w| !w.is_empty())
            .collect();
        let hit = |words: &[&str]| {
            if is_prefix {
                words.len() >= want.len() && words[..want.len()] == want[..]
            } else {
                words == want.as_slice()
            }
        };
        if hit(&words) {
            return true;
        }
        // Deny/Ask also see `/bin/rm` as `rm`.
        if !allow
            && let Some((first, rest)) = words.split_first()
            && first.contains('/')
        {
            let base = first.rsplit('/').next().unwrap();
            let mut short = vec![base];
            short.extend_from_slice(rest);
            return hit(&short);
        }
        return false;
    }
    let (pattern, relative) = if let Some(rest) = spec.strip_prefix("./") {
        (rest.to_owned(), true)
    } else if spec.starts_with('/') || spec.starts_with("**") {
        (spec.to_owned(), false)
    } else if !spec.trim_end_matches('/').contains('/') {
        (format!("**/{spec}"), false)
    } else {
        (spec.to_owned(), true)
    };
    let pattern = pattern.trim_end_matches('/');
    let re = Regex::new(&format!(
        "^(?:{}|{})$",
        glob_regex(pattern, true),
        glob_regex(&format!("{pattern}/**"), true)
    ))
    .unwrap();
    let joined = match cwd {
        Some(cwd) if !subject.starts_with('/') => format!("{cwd}/{subject}"),
        _ => subject.to_owned(),
    };
    let normalized = naive_normalize(&joined);
    if relative {
        let inside = match cwd {
            Some(cwd) => {
                let cwd = naive_normalize(cwd);
                if normalized == cwd {
                    Some(String::new())
                } else if cwd == "/" {
                    normalized.strip_prefix('/').map(str::to_owned)
                } else {
                    normalized
                        .strip_prefix(&format!("{cwd}/"))
                        .map(str::to_owned)
                }
            }
            None if normalized.starts_with('/') || normalized.starts_with("..") => None,
            None => Some(normalized.clone()),
        };
        inside.is_some_and(|r| re.is_match(&r))
    } else {
        re.is_match(&normalized)
            || (!normalized.starts_with('/') && re.is_match(&format!("/{normalized}")))
    }
}

/// `a/./b//../c` -> `a/c`; `..` above `/` stays at `/`, above a relative start is kept.
fn naive_normalize(path: &str) -> String {
    let mut stack: Vec<&str> = Vec::new();
    for part in path.split('/') {
        if part.is_empty() || part == "." {
            continue;
        }
        if part == ".." {
            match stack.last() {
                Some(&"..") | None => {
                    if !path.starts_with('/') {
                        stack.push("..");
                    }
                }
                Some(_) => {
                    stack.pop();
                }
            }
        } else {
            stack.push(part);
        }
    }
    let body = stack.join("/");
    if path.starts_with('/') {
        format!("/{body}")
    } else {
        body
    }
}

/// A glob as a regex body. With `paths`, `*`/`?` stay inside one component and `**` spans
/// components (gitignore style); without, `*` matches anything (tool names).
fn glob_regex(glob: &str, paths: bool) -> String {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut in_braces = false;
    while i < chars.len() {
        let at_component_start = i == 0 || chars[i - 1] == '/';
        let c = chars[i];
        if paths && c == '*' && chars.get(i + 1) == Some(&'*') && at_component_start {
            if chars.get(i + 2) == Some(&'/') {
                out.push_str("(?:.*/)?");
                i += 3;
                continue;
            }
            if i + 2 == chars.len() {
                out.push_str(".*");
                i += 2;
                continue;
            }
        }
        match c {
            '*' => out.push_str(if paths { "[^/]*" } else { ".*" }),
            '?' => out.push_str(if paths { "[^/]" } else { "." }),
            '[' => {
                let end = chars[i..].iter().position(|&c| c == ']').unwrap() + i;
                out.push('[');
                for (n, &c) in chars[i + 1..end].iter().enumerate() {
                    if n == 0 && c == '!' {
                        out.push('^');
                    } else {
                        out.push_str(&regex::escape(&c.to_string()));
                    }
                }
                out.push(']');
                i = end;
            }
            '{' => {
                in_braces = true;
                out.push_str("(?:");
            }
            '}' if in_braces => {
                in_braces = false;
                out.push(')');
            }
            ',' if in_braces => out.push('|'),
            c => out.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    out
}

#[test]
fn naive_matcher_reads_rules_its_own_way() {
    let rule = |k, t| PermissionRule::parse(k, t, RuleSource::Api).unwrap();
    let list = |items: &[&str]| Subjects::List(items.iter().map(|s| (*s).to_owned()).collect());
    let diff = rule(RuleKind::Allow, "run_bash(git diff:*)");
    assert!(naive_matches(
        &diff,
        "run_bash",
        &list(&["git  diff --stat"]),
        None
    ));
    assert!(!naive_matches(
        &diff,
        "run_bash",
        &list(&["git diffx"]),
        None
    ));
    let rm = rule(RuleKind::Deny, "run_bash(rm:*)");
    assert!(naive_matches(
        &rm,
        "run_bash",
        &list(&["ls", "/bin/rm -r x"]),
        None
    ));
    let env = rule(RuleKind::Deny, "read_file(**/.env)");
    assert!(naive_matches(
        &env,
        "read_file",
        &list(&["/repo/.env"]),
        None
    ));
    assert!(naive_matches(&env, "read_file", &list(&[".env"]), None));
    let etc = rule(RuleKind::Deny, "file_*(/etc/**)");
    assert!(naive_matches(
        &etc,
        "file_write",
        &list(&["/tmp/../etc/passwd"]),
        None
    ));
    assert!(!naive_matches(
        &etc,
        "file_write",
        &list(&["/tmp/etc/passwd"]),
        None
    ));
    let src = rule(RuleKind::Allow, "read_file(./src/**)");
    assert!(naive_matches(
        &src,
        "read_file",
        &list(&["src/a.rs"]),
        Some("/repo")
    ));
    assert!(!naive_matches(
        &src,
        "read_file",
        &list(&["/etc/src/a.rs"]),
        Some("/repo")
    ));
    let dom = rule(RuleKind::Allow, "web_fetch(domain:example.com)");
    assert!(naive_matches(
        &dom,
        "web_fetch",
        &list(&["a.EXAMPLE.com"]),
        None
    ));
    assert!(!naive_matches(
        &dom,
        "web_fetch",
        &list(&["badexample.com"]),
        None
    ));
    let class = rule(RuleKind::Deny, "*([gr]m status)");
    assert!(naive_matches(
        &class,
        "read_file",
        &list(&["/x/rm status"]),
        None
    ));
    assert!(!naive_matches(
        &class,
        "read_file",
        &list(&["/x/[gr]m status"]),
        None
    ));
}

// Vocabulary for the index property: command rules sharing and not sharing first words
// (including words that look like globs, which command specifiers match literally), path rules
// of both anchorings on several tools, domain rules, under exact names and tool globs.
const WORDS: &[&str] = &["git", "rm", "ls", "git*", "g?t", "[gr]m", "cmd1", "cmd10"];
const WORD_FORMS: &[&str] = &["{}:*", "{} diff:*", "{} status", "{}", "{} status *"];
const CMD_TOOLS: &[&str] = &["run_bash", "run_*", "*", "mcp__x"];
const OTHER_RULES: &[&str] = &[
    "read_file",
    "run_bash",
    "r*",
    "read_file(**/.env)",
    "read_file(/etc/**)",
    "read_file(./src/**)",
    "read_file(src/**)",
    "read_file(*.pem)",
    "file_write(/etc/**)",
    "file_*(/etc/**)",
    "*(**/.env)",
    "web_fetch(domain:example.com)",
    "web_fetch(domain:a.example.com)",
    "web_*(domain:org)",
    "*(domain:evil.org)",
];
const INDEX_TOOLS: &[&str] = &[
    "run_bash",
    "run_other",
    "read_file",
    "file_write",
    "mcp__x",
    "web_fetch",
];
const INDEX_COMMANDS: &[&str] = &[
    "git status",
    "git diff --stat",
    "/usr/bin/git status",
    "rm -rf x",
    "/bin/rm x",
    "git* status",
    "g?t diff x",
    "[gr]m",
    "ls && git status",
    "ls; /bin/rm -r y",
    "git status | git diff",
    "cmd1 a",
    "cmd10",
    "cmd1",
    "  git   diff  ",
    "git\u{a0}status",
    "/x\u{a0}/bin/rm y",
    "x/ y",
    "",
    "echo $(x)",
];
const INDEX_PATHS: &[&str] = &[
    "/etc/passwd",
    "/repo/.env",
    "src/a.rs",
    "/repo/src/a.rs",
    "../etc/x",
    "k.pem",
    "/repo/../etc/shadow",
    "/repo/src",
];
const INDEX_HOSTS: &[&str] = &[
    "example.com",
    "a.example.com",
    "b.a.example.com",
    "EXAMPLE.com",
    "evil.org",
    "x.org",
    "badexample.com",
];

fn index_rule() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (
            prop::sample::select(CMD_TOOLS),
            prop::sample::select(WORD_FORMS),
            prop::sample::select(WORDS),
        )
            .prop_map(|(t, f, w)| format!("{t}({})", f.replace("{}", w))),
        2 => prop::sample::select(OTHER_RULES).prop_map(str::to_owned),
    ]
}

fn index_call() -> impl Strategy<Value = (&'static str, Option<Value>)> {
    (
        prop::sample::select(INDEX_TOOLS),
        prop::sample::select(INDEX_COMMANDS),
        prop::sample::select(INDEX_PATHS),
        prop::sample::select(INDEX_HOSTS),
        any::<bool>(),
    )
        .prop_map(|(tool, cmd, path, host, some)| {
            let args =
                json!({"command": cmd, "file_path": path, "url": format!("https://{host}/x")});
            (tool, some.then_some(args))
        })
}

fn result_of(kind: RuleKind) -> PermissionResult {
    let rule = PermissionRule::parse(kind, "run_bash", RuleSource::Session).unwrap();
    PermissionResult {
        decision: kind.decision(),
        rule: Some(Arc::new(rule)),
        changed_by_mode: None,
    }
}

fn opt_result() -> impl Strategy<Value = Option<PermissionResult>> {
    prop_oneof![Just(None), kind().prop_map(|k| Some(result_of(k)))]
}

fn mode() -> impl Strategy<Value = PermissionMode> {
    prop::sample::select(PermissionMode::ALL.to_vec())
}

proptest! {
    #[test]
    fn compiled_agrees_with_naive(rules in rules(), (tool, args) in call()) {
        let c = checker(&rules);
        let all: Vec<PermissionRule> = c.rules().cloned().collect();
        let got = c.check(tool, args.as_ref());
        let want = naive(&all, tool, args.as_ref());
        prop_assert_eq!((got.decision, got.rule.map(|r| r.text().to_owned())), want);
    }

    #[test]
    fn compiled_indexes_agree_with_naive(
        rules in prop::collection::vec((kind(), index_rule()), 0..40),
        calls in prop::collection::vec(index_call(), 1..6),
        cwd in prop::option::of(prop::sample::select(vec!["/repo", "/", "/repo/"])),
    ) {
        let mut c = PermissionChecker::new();
        for (k, t) in &rules {
            if let Ok(rule) = PermissionRule::parse(*k, t, RuleSource::Api) {
                c.add_rule(rule);
            }
        }
        if let Some(cwd) = cwd {
            c.set_cwd(cwd);
        }
        let all: Vec<PermissionRule> = c.rules().cloned().collect();
        // Several calls per checker, some repeated, so the per-tool memo is hit as well as built.
        for (tool, args) in calls.iter().chain(calls.iter()) {
            let got = c.check(tool, args.as_ref());
            let want = naive_in(&all, tool, args.as_ref(), cwd);
            prop_assert_eq!((got.decision, got.rule.map(|r| r.text().to_owned())), want, "{} {:?}", tool, args);
        }
    }

    #[test]
    fn adding_allow_never_stricter_deny_never_looser(rules in rules(), extra in prop::sample::select(RULES), (tool, args) in call()) {
        let before = checker(&rules).check(tool, args.as_ref()).decision;
        let mut with_allow = checker(&rules);
        with_allow.add_rule(PermissionRule::parse(RuleKind::Allow, extra, RuleSource::Api).unwrap());
        prop_assert!(with_allow.check(tool, args.as_ref()).decision <= before);
        let mut with_deny = checker(&rules);
        with_deny.add_rule(PermissionRule::parse(RuleKind::Deny, extra, RuleSource::Api).unwrap());
        prop_assert!(with_deny.check(tool, args.as_ref()).decision >= before);
    }

    #[test]
    fn p0_p2_deny_is_final(
        which in 0..3usize, config_kind in kind(), session in opt_result(), tool_level in opt_result(),
        block in any::<bool>(), asks in 0..3usize, mode in mode(), read_only in any::<bool>(),
    ) {
        let mut inputs = PrecedenceInputs {
            tool: "run_bash".into(),
            read_only,
            mode,
            config: result_of(config_kind),
            session,
            tool_level,
            hook_block: block.then(|| HookBlock { hook: "h".into(), reason: "r".into() }),
            hook_requests: (0..asks).map(|i| HookPermissionRequest { hook: format!("h{i}"), message: "m".into() }).collect(),
        };
        match which {
            0 => inputs.config = result_of(RuleKind::Deny),
            1 => inputs.tool_level = Some(result_of(RuleKind::Deny)),
            _ => inputs.session = Some(result_of(RuleKind::Deny)),
        }
        let r = resolve_permission_precedence(&inputs);
        prop_assert_eq!(r.decision, Decision::Deny);
        prop_assert!(r.decided_by.priority <= perm_rules::Priority::SessionDeny);
    }

    #[test]
    fn config_round_trips(rules in rules(), mode in prop::option::of(mode()), (tool, args) in call()) {
        let mut text = String::from("[permissions]\n");
        if let Some(m) = mode { text.push_str(&format!("mode = \"{m}\"\n")); }
        for (label, k) in [("deny", RuleKind::Deny), ("ask", RuleKind::Ask), ("allow", RuleKind::Allow)] {
            let list: Vec<String> = rules.iter().filter(|(rk, _)| *rk == k).map(|(_, t)| format!("{t:?}")).collect();
            text.push_str(&format!("{label} = [{}]\n", list.join(", ")));
        }
        let cfg = PermissionsConfig::from_policy_text("a.toml", &text).unwrap();
        let serialized = cfg.to_policy_text().unwrap();
        let again = PermissionsConfig::from_policy_text("b.toml", &serialized).unwrap();
        let layer = |cfg: PermissionsConfig, text: &str| ConfigLayer { origin: Origin::Project, path: "p".into(), text: text.into(), config: cfg };
        let c1 = PermissionChecker::from_config(&[layer(cfg, &text)], &HashMap::new()).unwrap();
        let c2 = PermissionChecker::from_config(&[layer(again, &serialized)], &HashMap::new()).unwrap();
        let t1: Vec<(RuleKind, String)> = c1.rules().map(|r| (r.kind(), r.text().to_owned())).collect();
        let t2: Vec<(RuleKind, String)> = c2.rules().map(|r| (r.kind(), r.text().to_owned())).collect();
        prop_assert_eq!(t1, t2);
        prop_assert_eq!(c1.mode(), c2.mode());
        prop_assert_eq!(c1.check(tool, args.as_ref()).decision, c2.check(tool, args.as_ref()).decision);
    }
}

#[test]
fn custom_subjects_provider_is_used() {
    struct Whole;
    impl ContentSubjects for Whole {
        fn subjects(&self, _tool: &str, args: &Value) -> Subjects {
            Subjects::List(vec![
                args["command"].as_str().unwrap_or_default().to_owned(),
            ])
        }
    }
    let mut c = checker(&[(RuleKind::Allow, "run_bash(ls:*)")]);
    c.set_default(Decision::Ask);
    let args = json!({"command": "ls && rm x"});
    assert_eq!(c.check("run_bash", Some(&args)).decision, Decision::Ask);
    c.set_subjects(Arc::new(Whole));
    assert_eq!(c.check("run_bash", Some(&args)).decision, Decision::Allow);
}

#[test]
fn unsplittable_never_allows() {
    let mut c = checker(&[(RuleKind::Allow, "run_bash(echo:*)")]);
    c.set_default(Decision::Ask);
    assert_eq!(
        c.check("run_bash", Some(&json!({"command": "echo $(rm -rf x)"})))
            .decision,
        Decision::Ask
    );
    assert_eq!(
        c.check("run_bash", Some(&json!({"command": "echo hi"})))
            .decision,
        Decision::Allow
    );
}

#[test]
fn fuzz_corpus() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(perm_rules::fuzz::check_rule_text(&data));
        n += 1;
    }
    assert!(n >= 5);
}
