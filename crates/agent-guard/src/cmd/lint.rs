//! `agent-guard lint`: find rules that cannot do what their author meant.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use perm_rules::{ConfigLayer, Origin, PermissionChecker, PermissionRule, RuleKind};
use serde::Serialize;

use crate::front::{KNOWN_TOOLS, absolutize, sandbox_config};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Checks:
  shadowed           an allow (or ask) rule that a broader deny (or ask) rule always beats:
                     Deny > Ask > Allow whatever the order, so it can never decide
  duplicate          the same rule twice in one list
  allows-everything  an allow rule for a shell, interpreter or wrapper (`run_bash(python:*)`,
                     `run_bash(bash:*)`, `run_bash(env:*)`, `run_bash(xargs:*)`, ...), for all of
                     `run_bash`, or for every tool (`*`): it allows arbitrary code
  unknown-tool       a tool name that is not one of the guard's tools (or `mcp__*`)
  outside-roots      an allow rule for an absolute path outside every [sandbox] root: the
                     sandbox refuses (or asks about) it whatever the rule says
  hook-command-missing
                     a [[hooks.command]] whose program (or the script its interpreter runs)
                     does not exist or is not executable: the hook fails on every call, and a
                     failing PreToolUse hook denies by default
  hook-command-unchecked (warning)
                     a [[hooks.command]] whose program cannot be known before it runs (shell
                     syntax, an unknown variable): check it by hand

`$CLAUDE_PROJECT_DIR` and `$GEMINI_PROJECT_DIR` in a hook command expand to --project (default:
the current directory), as they do when the hook runs; `$HOME`, `~` and other variables expand
from the environment; the program is looked up on PATH, as `bash -c` would.

Only the file's rules are linted (`AGENT_PERMISSIONS_*` are ignored), so the verdict is the
same on every machine.

Exit status:
  0  no problems found (warnings alone do not fail)
  1  problems found (listed on stdout)
  2  a bad policy file";

/// Arguments of `agent-guard lint`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The policy file to lint.
    pub policy: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// The project directory hook commands run in (`$CLAUDE_PROJECT_DIR`); default: the current
    /// directory.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// How bad a problem is: errors fail the lint (exit 1), warnings are reported only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    /// The policy does not do what it says.
    Error,
    /// Something lint could not check.
    Warning,
}

/// One problem with one rule or one hook command.
#[derive(Debug, Serialize)]
pub(crate) struct Problem {
    /// The rule's place in the merged rule list (hooks come after every rule), to report in
    /// policy order.
    #[serde(skip)]
    index: usize,
    /// The stable machine-readable code (`shadowed`, `hook-command-missing`, ...).
    pub code: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// The rule's text, for rule problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The rule's kind, for rule problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<RuleKind>,
    /// The hook command, for hook problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `file:line` of the rule or hook.
    pub source: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl Problem {
    /// One line: `source: what: code: message`.
    pub(crate) fn line(&self) -> String {
        let what = match (&self.rule, self.kind, &self.command) {
            (Some(rule), Some(kind), _) => format!("{} rule `{rule}`", kind.as_str()),
            (_, _, Some(command)) => format!("hook command `{command}`"),
            _ => "policy".to_owned(),
        };
        let tag = match self.severity {
            Severity::Error => "",
            Severity::Warning => " (warning)",
        };
        format!(
            "{}: {what}: {}{tag}: {}",
            self.source, self.code, self.message
        )
    }
}

/// The outcome of linting one policy file.
#[derive(Debug)]
pub(crate) struct Report {
    /// The policy's name in messages.
    pub policy: String,
    /// How many rules it has.
    pub rules: usize,
    /// Problems in policy order, hook commands last.
    pub problems: Vec<Problem>,
}

impl Report {
    /// How many problems are errors.
    pub(crate) fn errors(&self) -> usize {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count()
    }
}

/// Programs that run whatever code or command their arguments name.
const RUNS_ANYTHING: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "python", "python2", "python3",
    "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua", "awk", "gawk", "mawk", "env",
    "xargs", "eval", "exec", "command", "builtin", "nohup", "nice", "timeout", "time", "watch",
    "sudo", "doas", "su", "npx", "busybox", "find", "parallel", "make",
];

const PATH_TOOLS: &[&str] = &[
    "read_file",
    "file_write",
    "file_edit",
    "glob_files",
    "grep_files",
];

/// `*` and `?` glob matching over a tool name (enough for tool-name patterns).
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.split_first(), name.split_first()) {
        (None, None) => true,
        (Some((b'*', rest)), _) => {
            glob_match(rest, name)
                || name
                    .split_first()
                    .is_some_and(|(_, n)| glob_match(pattern, n))
        }
        (Some((b'?', rest)), Some((_, n))) => glob_match(rest, n),
        (Some((p, rest)), Some((c, n))) => p == c && glob_match(rest, n),
        _ => false,
    }
}

fn tool_covers(broad: &PermissionRule, narrow: &PermissionRule) -> bool {
    if broad.is_tool_glob() {
        if narrow.is_tool_glob() {
            return broad.tool_pattern() == "*" || broad.tool_pattern() == narrow.tool_pattern();
        }
        return glob_match(
            broad.tool_pattern().as_bytes(),
            narrow.tool_pattern().as_bytes(),
        );
    }
    !narrow.is_tool_glob() && broad.tool_pattern() == narrow.tool_pattern()
}

/// A bash specifier as (words, is-prefix).
fn bash_spec(spec: &str) -> (Vec<&str>, bool) {
    let (text, prefix) = match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
        Some(p) => (p, true),
        None => (spec, false),
    };
    (text.split_whitespace().collect(), prefix)
}

/// Whether every call `narrow`'s content matches is matched by `broad`'s content too.
fn content_covers(broad: &PermissionRule, narrow: &PermissionRule) -> bool {
    let Some(b) = broad.specifier() else {
        return true;
    };
    let Some(n) = narrow.specifier() else {
        return false;
    };
    if b == n {
        return true;
    }
    if narrow.tool_pattern() == "run_bash" && !narrow.is_tool_glob() {
        let (bw, bp) = bash_spec(b);
        let (nw, _) = bash_spec(n);
        return bp && nw.len() >= bw.len() && nw.iter().zip(&bw).all(|(x, y)| x == y);
    }
    if PATH_TOOLS.contains(&narrow.tool_pattern()) {
        if b == "**" || b == "/**" && n.starts_with('/') {
            return true;
        }
        if let Some(dir) = b.strip_suffix("/**")
            && !dir.contains(['*', '?', '[', '{'])
        {
            return n
                .strip_prefix(dir)
                .is_some_and(|rest| rest.starts_with('/'));
        }
    }
    false
}

fn problem(index: usize, code: &'static str, rule: &PermissionRule, message: String) -> Problem {
    Problem {
        index,
        code,
        severity: Severity::Error,
        rule: Some(rule.text().to_owned()),
        kind: Some(rule.kind()),
        command: None,
        source: rule.source().to_string(),
        message,
    }
}

fn shadowing(rules: &[&PermissionRule], out: &mut Vec<Problem>) {
    for (i, narrow) in rules.iter().enumerate() {
        if narrow.kind() == RuleKind::Deny {
            continue;
        }
        let shadow = rules.iter().enumerate().find(|(j, broad)| {
            *j != i
                && broad.kind() > narrow.kind()
                && tool_covers(broad, narrow)
                && content_covers(broad, narrow)
        });
        if let Some((_, broad)) = shadow {
            out.push(problem(
                i,
                "shadowed",
                narrow,
                format!(
                    "can never decide: {} always wins ({} beats {} whatever the order)",
                    broad.describe(),
                    broad.kind().as_str(),
                    narrow.kind().as_str()
                ),
            ));
            continue;
        }
        let duplicate = rules
            .iter()
            .take(i)
            .find(|r| r.kind() == narrow.kind() && r.text() == narrow.text());
        if let Some(first) = duplicate {
            out.push(problem(
                i,
                "duplicate",
                narrow,
                format!("repeats {}", first.describe()),
            ));
        }
    }
}

fn allows_everything(rule: &PermissionRule) -> Option<String> {
    if rule.kind() != RuleKind::Allow {
        return None;
    }
    if rule.is_tool_glob() && rule.tool_pattern() == "*" && rule.specifier().is_none() {
        return Some("allows every tool, including `run_bash` and every MCP tool".to_owned());
    }
    if !glob_match(rule.tool_pattern().as_bytes(), b"run_bash") {
        return None;
    }
    let Some(spec) = rule.specifier() else {
        return Some(
            "allows every bash command; allow command prefixes instead (`run_bash(git diff:*)`)"
                .to_owned(),
        );
    };
    let (words, prefix) = bash_spec(spec);
    let program = words.first().map(|w| w.rsplit('/').next().unwrap_or(w))?;
    if !RUNS_ANYTHING.contains(&program) {
        return None;
    }
    // `python3 -m pytest:*` narrows what runs; `python:*` or `bash -c:*` does not.
    let code_flag = words
        .get(1)
        .is_some_and(|w| matches!(*w, "-c" | "-e" | "--eval" | "-p" | "--print" | "-exec"));
    let open = prefix && (words.len() == 1 || (words.len() == 2 && code_flag));
    open.then(|| {
        format!("`{program}` runs whatever its arguments say, so this allows arbitrary code; allow the exact commands instead")
    })
}

fn unknown_tool(rule: &PermissionRule) -> Option<String> {
    let pattern = rule.tool_pattern();
    if pattern.starts_with("mcp__") {
        return None;
    }
    if rule.is_tool_glob() {
        let hits = KNOWN_TOOLS
            .iter()
            .any(|t| glob_match(pattern.as_bytes(), t.as_bytes()));
        return (!hits)
            .then(|| format!("the tool pattern `{pattern}` matches none of the guard's tools"));
    }
    if KNOWN_TOOLS.contains(&pattern) {
        return None;
    }
    // A client's own name (`Bash`, `read_file`, `exec_command`) is applied as the guard tool
    // the client table maps it onto; one the clients disagree on is refused when loaded.
    match agent_core::clients::rule_tool(pattern) {
        Ok(Some(_)) => None,
        Err(guards) => Some(format!(
            "`{pattern}` is a tool name the clients map onto different guard tools ({}); the policy is refused until the rule names one",
            guards.join(", ")
        )),
        Ok(None) => Some(format!(
            "`{pattern}` is not one of the guard's tools ({}) nor a client's",
            KNOWN_TOOLS.join(", ")
        )),
    }
}

fn outside_roots(rule: &PermissionRule, roots: &[PathBuf], home: Option<&Path>) -> Option<String> {
    if rule.kind() != RuleKind::Allow || !PATH_TOOLS.contains(&rule.tool_pattern()) {
        return None;
    }
    let spec = rule.specifier()?;
    let literal: String = spec
        .chars()
        .take_while(|c| !matches!(c, '*' | '?' | '[' | '{'))
        .collect();
    let base = if let Some(rest) = literal.strip_prefix("~/") {
        home?.join(rest)
    } else if literal.starts_with('/') {
        PathBuf::from(&literal)
    } else {
        // `./x`, `x/y` and `**/x` are relative to the cwd or match anywhere.
        return None;
    };
    let base = absolutize(Path::new("/"), &base);
    let inside = roots
        .iter()
        .any(|root| base.starts_with(root) || root.starts_with(&base));
    (!inside).then(|| {
        let list: Vec<String> = roots.iter().map(|r| format!("`{}`", r.display())).collect();
        format!("`{spec}` is outside every sandbox root ({}); the sandbox refuses or asks whatever this rule says", list.join(", "))
    })
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_inner(args).map_err(crate::front::one_line)
}

/// Lints the policy file at `path`; hook commands are resolved as if run in `project`, and
/// relative sandbox roots against `cwd`.
///
/// # Errors
/// A policy that cannot be read or parsed.
pub(crate) fn lint_policy(path: &Path, project: &Path, cwd: &Path) -> anyhow::Result<Report> {
    let policy = Policy::load(Some(path))?;
    // The file alone: `AGENT_PERMISSIONS_*` of whoever runs the lint must not change its verdict.
    let layer = ConfigLayer::parse(Origin::Project, &policy.source_name(), &policy.text)?;
    let checker = PermissionChecker::from_config(&[layer], &HashMap::new())?;
    let sandbox = sandbox_config(&policy);
    let mut roots: Vec<PathBuf> = sandbox
        .roots
        .iter()
        .chain(&sandbox.read_only_roots)
        .map(|r| absolutize(cwd, r))
        .collect();
    if roots.is_empty() {
        roots.push(cwd.to_owned());
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let rules: Vec<&PermissionRule> = checker.rules().collect();
    let mut problems = Vec::new();
    shadowing(&rules, &mut problems);
    for (i, rule) in rules.iter().enumerate() {
        if let Some(message) = allows_everything(rule) {
            problems.push(problem(i, "allows-everything", rule, message));
        }
        if let Some(message) = unknown_tool(rule) {
            problems.push(problem(i, "unknown-tool", rule, message));
        }
        if let Some(message) = outside_roots(rule, &roots, home.as_deref()) {
            problems.push(problem(i, "outside-roots", rule, message));
        }
    }
    problems.sort_by_key(|p| p.index);
    let env = HookEnv::from_process(project);
    let hook_lines = hook_header_lines(&policy.text);
    for (n, hook) in policy.doc.hooks.command.iter().enumerate() {
        let source = match hook_lines.get(n) {
            Some(line) => format!("{}:{line}", policy.source_name()),
            None => policy.source_name(),
        };
        if let Some((severity, code, message)) = check_hook_command(&hook.command, &env) {
            problems.push(Problem {
                index: rules.len() + n,
                code,
                severity,
                rule: None,
                kind: None,
                command: Some(hook.command.clone()),
                source,
                message,
            });
        }
    }
    Ok(Report {
        policy: policy.source_name(),
        rules: rules.len(),
        problems,
    })
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let project = match &args.project {
        Some(dir) => absolutize(&cwd, dir),
        None => cwd.clone(),
    };
    let report = lint_policy(&args.policy, &project, &cwd)?;
    let errors = report.errors();
    let warnings = report.problems.len() - errors;
    if args.json {
        let doc = serde_json::json!({
            "policy": report.policy,
            "rules": report.rules,
            "problems": report.problems,
        });
        println!("{}", serde_json::to_string(&doc)?);
    } else {
        for p in &report.problems {
            println!("{}", p.line());
        }
        let warned = match warnings {
            0 => String::new(),
            n => format!(", {n} warning(s)"),
        };
        match errors {
            0 => println!(
                "{}: {} rules, no problems{warned}",
                report.policy, report.rules
            ),
            n => println!(
                "{}: {} rules, {n} problem(s){warned}",
                report.policy, report.rules
            ),
        }
    }
    Ok(if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The 1-based line of each `[[hooks.command]]` header, in file order.
fn hook_header_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim();
            l.strip_prefix("[[")
                .and_then(|l| l.split_once("]]"))
                .is_some_and(|(name, _)| name.split('.').map(str::trim).eq(["hooks", "command"]))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// Bash builtins a hook may start with: always present.
const SHELL_BUILTINS: &[&str] = &[
    ":", ".", "source", "echo", "printf", "true", "false", "exit", "test", "[", "cd", "read",
    "set", "export", "return", "trap", "wait", "kill", "pwd", "type", "shift", "unset",
];

/// Words that open shell syntax, after which the program is not the first word.
const SHELL_KEYWORDS: &[&str] = &[
    "if", "then", "for", "while", "until", "case", "function", "select", "time", "!", "{", "[[",
    "coproc", "eval",
];

/// Builtins that run the next word as the program.
const EXEC_WRAPPERS: &[&str] = &["exec", "command"];

/// Interpreters whose first non-option argument is a script that must exist.
const INTERPRETERS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "python", "python3", "node", "perl", "ruby", "deno", "bun",
];

/// What a hook command's variables and lookups resolve against.
struct HookEnv {
    project: PathBuf,
    vars: HashMap<String, String>,
    path: Option<std::ffi::OsString>,
}

impl HookEnv {
    fn from_process(project: &Path) -> HookEnv {
        // Without the environment (one of ours is not UTF-8), every variable stays unknown.
        let mut vars = crate::policy::process_env().unwrap_or_default();
        // The hook runners set these to the project, whatever the linting shell has.
        for name in ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"] {
            vars.insert(name.to_owned(), project.display().to_string());
        }
        HookEnv {
            project: project.to_owned(),
            vars,
            path: std::env::var_os("PATH"),
        }
    }
}

/// Why a word cannot be known before the shell runs it.
type Unknowable = String;

/// The first `max` words of `command`, expanded as bash would for the simple cases: quotes,
/// backslashes, `~/`, `$NAME` and `${NAME}` of known variables. Anything else (command
/// substitution, globs, unknown variables, leading shell syntax) is unknowable.
fn leading_words(
    command: &str,
    vars: &HashMap<String, String>,
    max: usize,
) -> Result<Vec<String>, Unknowable> {
    let mut words = Vec::new();
    let mut chars = command.chars().peekable();
    while words.len() < max {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else { break };
        if matches!(first, ';' | '|' | '&' | '<' | '>' | '(' | ')') {
            if words.is_empty() {
                return Err(format!("it starts with the shell operator `{first}`"));
            }
            break;
        }
        let mut word = String::new();
        // Text before any quote, to recognise `NAME=value` assignments.
        let mut plain = true;
        let mut assignment = false;
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>') {
                break;
            }
            chars.next();
            match c {
                '\'' => {
                    plain = false;
                    loop {
                        match chars.next() {
                            Some('\'') => break,
                            Some(q) => word.push(q),
                            None => return Err("a quote is not closed".to_owned()),
                        }
                    }
                }
                '"' => {
                    plain = false;
                    loop {
                        match chars.next() {
                            Some('"') => break,
                            Some('\\') => match chars.next() {
                                Some(e @ ('$' | '`' | '"' | '\\')) => word.push(e),
                                Some('\n') => {}
                                Some(e) => {
                                    word.push('\\');
                                    word.push(e);
                                }
                                None => return Err("a quote is not closed".to_owned()),
                            },
                            Some('$') => word.push_str(&expand_var(&mut chars, vars)?),
                            Some('`') => return Err("it uses command substitution".to_owned()),
                            Some(q) => word.push(q),
                            None => return Err("a quote is not closed".to_owned()),
                        }
                    }
                }
                '\\' => {
                    plain = false;
                    if let Some(e) = chars.next() {
                        word.push(e);
                    }
                }
                '$' => {
                    let value = expand_var(&mut chars, vars)?;
                    if value.chars().any(char::is_whitespace) {
                        return Err("an unquoted variable holds spaces".to_owned());
                    }
                    plain = false;
                    word.push_str(&value);
                }
                '`' => return Err("it uses command substitution".to_owned()),
                '*' | '?' | '[' => return Err(format!("`{c}` makes it a glob")),
                '{' if word.is_empty() && chars.peek().is_some_and(|n| !n.is_whitespace()) => {
                    return Err("it uses brace expansion".to_owned());
                }
                '~' if word.is_empty() && plain && matches!(chars.peek(), None | Some('/')) => {
                    let home = vars
                        .get("HOME")
                        .ok_or_else(|| "`~` needs HOME, which is not set".to_owned())?;
                    word.push_str(home);
                    plain = false;
                }
                '(' | ')' => return Err(format!("`{c}` is shell syntax")),
                '=' if plain
                    && !word.is_empty()
                    && word.chars().all(|w| w.is_ascii_alphanumeric() || w == '_') =>
                {
                    assignment = true;
                    word.push(c);
                }
                _ => word.push(c),
            }
        }
        // `NAME=value cmd` runs `cmd`.
        if !assignment {
            words.push(word);
        }
    }
    Ok(words)
}

/// Expands `$NAME` or `${NAME}` (the `$` already read).
fn expand_var(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    vars: &HashMap<String, String>,
) -> Result<String, Unknowable> {
    let braced = chars.next_if_eq(&'{').is_some();
    let mut name = String::new();
    while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_') {
        name.push(c);
    }
    if braced && chars.next_if_eq(&'}').is_none() {
        return Err("it uses a `${...}` form other than `${NAME}`".to_owned());
    }
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err("it uses `$` for more than a variable (`$(...)`, `$1`, ...)".to_owned());
    }
    vars.get(&name)
        .cloned()
        .ok_or_else(|| format!("`${name}` is not set here, so its value is unknown"))
}

/// Whether `path` is a regular file someone may execute.
fn executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    match std::fs::metadata(path) {
        Err(_) => Err(format!("`{}` does not exist", path.display())),
        Ok(m) if m.is_dir() => Err(format!("`{}` is a directory", path.display())),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err(format!(
            "`{}` is not executable (`chmod +x {}`)",
            path.display(),
            path.display()
        )),
        Ok(_) => Ok(()),
    }
}

/// The program a word names, as bash finds it: a path (relative to the project) or a PATH
/// lookup.
fn resolve_program(word: &str, env: &HookEnv) -> Result<PathBuf, String> {
    if word.contains('/') {
        let path = env.project.join(word);
        executable(&path)?;
        return Ok(path);
    }
    let dirs = env.path.as_deref().map(std::env::split_paths);
    dirs.into_iter()
        .flatten()
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(word))
        .find(|p| executable(p).is_ok())
        .ok_or_else(|| format!("`{word}` is not a program on PATH"))
}

/// Whether a hook command's program can be found before it runs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ProgramStatus {
    /// It resolves (or is a shell builtin).
    Resolves,
    /// It does not exist or cannot be executed; why.
    Missing(String),
    /// Only the shell can tell; why.
    Unknowable(String),
}

/// Where a hook command's program is, as `bash -c` in `project` would find it.
pub(crate) fn hook_program_status(command: &str, project: &Path) -> ProgramStatus {
    program_status(command, &HookEnv::from_process(project))
}

/// `None` when the command's program resolves; else the severity, code and message.
fn check_hook_command(command: &str, env: &HookEnv) -> Option<(Severity, &'static str, String)> {
    match program_status(command, env) {
        ProgramStatus::Resolves => None,
        ProgramStatus::Unknowable(why) => Some((
            Severity::Warning,
            "hook-command-unchecked",
            format!("cannot tell which program it runs ({why}); make sure it exists"),
        )),
        ProgramStatus::Missing(why) => Some((
            Severity::Error,
            "hook-command-missing",
            format!(
                "{why}: the hook fails on every call (a failing PreToolUse hook denies by default); fix the path or remove the hook"
            ),
        )),
    }
}

fn program_status(command: &str, env: &HookEnv) -> ProgramStatus {
    let words = match leading_words(command, &env.vars, 4) {
        Ok(words) => words,
        Err(why) => return ProgramStatus::Unknowable(why),
    };
    let mut words = words.iter().map(String::as_str);
    let Some(mut program) = words.next() else {
        return ProgramStatus::Missing("the command is empty".to_owned());
    };
    if EXEC_WRAPPERS.contains(&program) {
        // A bare `exec` runs nothing.
        let Some(next) = words.next() else {
            return ProgramStatus::Resolves;
        };
        program = next;
    }
    if SHELL_KEYWORDS.contains(&program) {
        return ProgramStatus::Unknowable(format!("it starts with the shell keyword `{program}`"));
    }
    if SHELL_BUILTINS.contains(&program) {
        return ProgramStatus::Resolves;
    }
    let resolved = match resolve_program(program, env) {
        Ok(path) => path,
        Err(why) => return ProgramStatus::Missing(why),
    };
    let name = resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if INTERPRETERS.contains(&name.as_str())
        && let Some(script) = words.next()
        && !script.starts_with('-')
    {
        let path = env.project.join(script);
        if !path.is_file() {
            return ProgramStatus::Missing(format!(
                "`{program}` runs the script `{}`, which does not exist",
                path.display()
            ));
        }
    }
    ProgramStatus::Resolves
}

#[cfg(test)]
mod tests {
    use super::*;
    use perm_rules::RuleSource;

    fn rule(kind: RuleKind, text: &str) -> PermissionRule {
        PermissionRule::parse(kind, text, RuleSource::Api).unwrap()
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match(b"run_*", b"run_bash"));
        assert!(glob_match(b"*", b"x"));
        assert!(!glob_match(b"mcp__*", b"run_bash"));
        assert!(glob_match(b"r?ad_file", b"read_file"));
    }

    #[test]
    fn coverage() {
        let deny_bash = rule(RuleKind::Deny, "run_bash");
        let allow_git = rule(RuleKind::Allow, "run_bash(git:*)");
        assert!(tool_covers(&deny_bash, &allow_git) && content_covers(&deny_bash, &allow_git));
        let ask_git = rule(RuleKind::Ask, "run_bash(git:*)");
        let allow_diff = rule(RuleKind::Allow, "run_bash(git diff --stat)");
        assert!(content_covers(&ask_git, &allow_diff));
        let ask_gitx = rule(RuleKind::Ask, "run_bash(git push:*)");
        assert!(!content_covers(&ask_gitx, &allow_diff));
        let deny_etc = rule(RuleKind::Deny, "file_write(/etc/**)");
        let allow_etc = rule(RuleKind::Allow, "file_write(/etc/hosts)");
        assert!(content_covers(&deny_etc, &allow_etc));
        assert!(!content_covers(&allow_etc, &deny_etc));
    }

    fn words(command: &str) -> Result<Vec<String>, Unknowable> {
        let vars: HashMap<String, String> = [
            ("HOME".to_owned(), "/home/u".to_owned()),
            ("P".to_owned(), "/proj dir".to_owned()),
        ]
        .into();
        leading_words(command, &vars, 3)
    }

    #[test]
    fn leading_words_expand_like_bash_in_the_simple_cases() {
        assert_eq!(words("a b c d").unwrap(), ["a", "b", "c"]);
        assert_eq!(words("'a b' \"c\\\"d\"").unwrap(), ["a b", "c\"d"]);
        assert_eq!(words("\"$P/x\" y").unwrap(), ["/proj dir/x", "y"]);
        assert_eq!(words("~/bin/h --x").unwrap(), ["/home/u/bin/h", "--x"]);
        assert_eq!(words("X=1 Y=2 cmd arg").unwrap(), ["cmd", "arg"]);
        assert_eq!(words("cmd;rest").unwrap(), ["cmd"]);
        assert_eq!(words("cmd>out").unwrap(), ["cmd"]);
        assert_eq!(words("'X=1' cmd").unwrap(), ["X=1", "cmd"]);
        assert_eq!(words("").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn leading_words_refuse_what_only_the_shell_knows() {
        for command in [
            "$(which h)",
            "`which h`",
            "\"$(which h)\"",
            "$P/x",
            "$UNSET/x",
            "${P:-/x}",
            "$1",
            "h*",
            "{a,b}",
            "(sub)",
            "> out cmd",
            "'open",
        ] {
            assert!(words(command).is_err(), "{command}");
        }
    }

    #[test]
    fn interpreters() {
        assert!(allows_everything(&rule(RuleKind::Allow, "run_bash(python:*)")).is_some());
        assert!(allows_everything(&rule(RuleKind::Allow, "run_bash(bash -c:*)")).is_some());
        assert!(allows_everything(&rule(RuleKind::Allow, "run_bash")).is_some());
        assert!(
            allows_everything(&rule(RuleKind::Allow, "run_bash(python3 -m pytest:*)")).is_none()
        );
        assert!(allows_everything(&rule(RuleKind::Allow, "run_bash(git diff:*)")).is_none());
        assert!(allows_everything(&rule(RuleKind::Deny, "run_bash(python:*)")).is_none());
    }
}
