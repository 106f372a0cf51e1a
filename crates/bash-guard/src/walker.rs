//! The walker's state and what it judges directly: the findings, the paths a command reads
//! and writes (through the [`PathJudge`], after the lexical deny lists of `stores`), the trees
//! it reads. The walk over the parse tree is `analyze`'s (`impl Walker` there); the modules
//! that judge commands (`classify`, `vars`, `builtins`, `awk`, `destination`) import this one
//! and never `analyze`, so imports go one way: `walker` <- judges <- `analyze`.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use brush_parser::ParserOptions;

use crate::config::BashConfig;
use crate::judge::{PathAccess, PathJudge, PathVerdict};
use crate::vartable::VarEffect;
use crate::verdict::{Decision, Finding};
use crate::words::{Decoded, Decoder};

/// Most names of one glob word judged one by one; a wider expansion asks.
const MAX_EXPANDED: usize = 1024;

/// Where the analysis runs: on the caller's stack (texts provably shallow), or on a thread
/// whose stack holds the nesting cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StackMode {
    Inline,
    Big,
}

/// Where a simple command's standard input comes from: a shell reading a script from stdin is
/// reviewed only when that script is literal text in the command.
#[derive(Debug, Clone)]
pub(crate) enum StdinKind {
    /// Not redirected (closed or a terminal).
    Terminal,
    /// The output of the previous pipeline stage.
    Pipe,
    /// Literal text (a here-document without expansions, a literal here-string).
    Literal(String),
    /// Text with run-time parts.
    Dynamic,
}

/// What this command put into a variable, as far as the review can know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// Literal text.
    Known(String),
    /// Output of a command, input, another variable ...
    Unknown,
}

/// A prefix assignment (`NAME=v cmd`, `env NAME=v cmd`) waiting for a program of its command
/// that reads it.
#[derive(Debug, Clone)]
pub(crate) struct PrefixVar {
    pub name: String,
    pub effect: &'static VarEffect,
    /// The command it prefixes, for the finding.
    pub sub: String,
    /// Its value, when known here.
    pub value: Option<String>,
    /// Already reported.
    pub fired: bool,
}

pub(crate) struct Walker<'a> {
    pub config: &'a BashConfig,
    /// `~` as the analyzer was configured to expand it.
    pub base_home: Option<&'a str>,
    pub judge: &'a dyn PathJudge,
    pub options: &'a ParserOptions,
    /// `None` once a `cd` to a place only known at run time happened.
    pub cwd: Option<PathBuf>,
    pub findings: Vec<Finding>,
    pub depth: usize,
    /// Functions defined in this command; calling one runs a body already walked.
    pub functions: HashSet<String>,
    pub judged: bool,
    /// Nesting spent by the command strings being walked (see `limits`).
    pub nesting: usize,
    /// Commands met so far, across nested command strings.
    pub commands: usize,
    pub mode: StackMode,
    /// Inline mode met a text that may nest deeper than the caller's stack is known to hold.
    pub needs_big_stack: bool,
    /// The command strings being walked, innermost last: source spans index into them.
    pub sources: Vec<String>,
    /// What this command assigned to variables so far.
    pub vars: std::collections::HashMap<String, Value>,
    /// `~` as this command would expand it (`HOME=..` changes it).
    pub home: Option<String>,
    /// `CDPATH` was set: a relative `cd` may go anywhere.
    pub cdpath: bool,
    /// Variables declared integer (`declare -i`): assigning them evaluates arithmetic.
    pub int_vars: HashSet<String>,
    /// Prefix assignments of the commands being classified, outermost first, waiting for a
    /// program that reads them (`vars::program_reads`).
    pub env: Vec<PrefixVar>,
    /// The command's standard output is known not to be a terminal (a pipe, a file).
    pub stdout_piped: bool,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        config: &'a BashConfig,
        base_home: Option<&'a str>,
        judge: &'a dyn PathJudge,
        options: &'a ParserOptions,
        cwd: Option<PathBuf>,
        mode: StackMode,
    ) -> Walker<'a> {
        Walker {
            config,
            base_home,
            judge,
            options,
            cwd,
            findings: Vec::new(),
            depth: 0,
            functions: HashSet::new(),
            judged: false,
            nesting: 0,
            commands: 0,
            mode,
            needs_big_stack: false,
            sources: Vec::new(),
            vars: std::collections::HashMap::new(),
            home: base_home.map(str::to_owned),
            cdpath: false,
            int_vars: HashSet::new(),
            env: Vec::new(),
            stdout_piped: false,
        }
    }

    pub(crate) fn add(
        &mut self,
        decision: Decision,
        code: &'static str,
        sub: &str,
        message: String,
    ) {
        self.findings.push(Finding {
            decision,
            code,
            subcommand: sub.to_owned(),
            message,
        });
    }

    pub(crate) fn decoder(&self) -> Decoder<'_> {
        Decoder {
            options: self.options,
            home: self.home.as_deref(),
        }
    }

    /// A command that reads a whole tree below `word`, hidden files included: a tree that
    /// holds a credential store is refused. The judge knows the stores; without one, `/` and
    /// the home directory (or a directory above it) still are.
    pub(crate) fn tree_read(&mut self, word: &Decoded, sub: &str, name: &str) {
        if let Some(likely) = likely(word) {
            return self.tree_read(&likely, sub, name);
        }
        if word.dynamic || word.text.is_empty() {
            return;
        }
        let Some(cwd) = self.cwd.clone() else {
            return;
        };
        let found = self.judge.secrets_below(&word.text, &cwd).or_else(|| {
            let abs = normalize(&cwd.join(&word.text));
            let home = self.base_home.map(Path::new);
            (abs == Path::new("/") || home.is_some_and(|h| h.starts_with(&abs)))
                .then(|| "the home directory's credential stores".to_owned())
        });
        if let Some(what) = found {
            self.add(
                Decision::Deny,
                "reads_secrets_tree",
                sub,
                format!(
                    "`{name}` reads every file below `{}`, and {what} is there; name a narrower directory",
                    word.text
                ),
            );
        }
    }

    /// Judges one path argument.
    pub(crate) fn path(&mut self, word: &Decoded, access: PathAccess, sub: &str, what: &str) {
        if word.dynamic {
            self.add(
                Decision::Ask,
                "dynamic_path",
                sub,
                format!("the {what} target is only known at run time"),
            );
            // `$HOME/...`: the run-time ask stands, and the place it most likely names is
            // judged too (a credential store there is refused as `~/...` is).
            if let Some(likely) = likely(word) {
                self.path(&likely, access, sub, what);
            }
            return;
        }
        let mut text = word.text.as_str();
        if text.is_empty() {
            return;
        }
        let glob_dir;
        if word.glob {
            self.expanded_paths(text, access, sub, what);
            let cut = text.find(['*', '?', '[']).unwrap_or(text.len());
            let prefix = text.get(..cut).unwrap_or("");
            glob_dir = match prefix.rfind('/') {
                Some(0) => "/".to_owned(),
                Some(i) => prefix.get(..i).unwrap_or(".").to_owned(),
                None => ".".to_owned(),
            };
            text = &glob_dir;
        }
        if let Some(d) = device(text, access) {
            if let Some((decision, code, msg)) = d {
                self.add(decision, code, sub, msg);
            }
            return;
        }
        let Some(cwd) = self.cwd.clone() else {
            if !text.starts_with('/') {
                self.add(
                    Decision::Ask,
                    "unknown_cwd",
                    sub,
                    format!("`{text}` is relative to a directory only known at run time"),
                );
                return;
            }
            self.judge_path(text, access, Path::new("/"), sub, what);
            return;
        };
        self.judge_path(text, access, &cwd, sub, what);
    }

    /// Judges the names a glob word expands to now (bash expands it before the command runs:
    /// `cat .en?` reads `.env`). Only what is not allowed is kept, so `cat *.rs` over a project
    /// does not list every file; the word's directory is judged by the caller as before.
    fn expanded_paths(&mut self, text: &str, access: PathAccess, sub: &str, what: &str) {
        let Some(cwd) = self.cwd.clone() else {
            return;
        };
        let crate::pathglob::Expansion::Names(names) = crate::pathglob::expand(text, &cwd) else {
            self.add(
                Decision::Ask,
                "glob_too_wide",
                sub,
                format!(
                    "`{text}` expands over more than {} directory entries (or names that are not UTF-8), too many to judge one by one",
                    crate::pathglob::MAX_ENTRIES
                ),
            );
            return;
        };
        if names.len() > MAX_EXPANDED {
            self.add(
                Decision::Ask,
                "glob_too_wide",
                sub,
                format!(
                    "`{text}` expands to {} names, more than the {MAX_EXPANDED} judged one by one",
                    names.len()
                ),
            );
            return;
        }
        let before = self.findings.len();
        for name in &names {
            self.judge_path(name, access, &cwd, sub, what);
        }
        let mut index = 0;
        self.findings.retain(|f| {
            index += 1;
            index <= before || f.decision != Decision::Allow
        });
    }

    fn judge_path(&mut self, text: &str, access: PathAccess, cwd: &Path, sub: &str, what: &str) {
        let abs = normalize(&cwd.join(text));
        if let Some(kind) = crate::stores::credential_store(&abs, self.base_home) {
            self.add(
                Decision::Deny,
                "credential_store",
                sub,
                format!("`{text}` is {kind}; reading or writing it is never allowed"),
            );
            return;
        }
        if access == PathAccess::Write
            && let Some(kind) = crate::stores::runs_code_later(&abs)
        {
            self.add(
                Decision::Deny,
                "write_code_config",
                sub,
                format!("`{text}` is {kind}, which runs code later; writing it is never allowed"),
            );
            return;
        }
        self.judged = true;
        let verdict = self.judge.judge(text, access, cwd);
        let (decision, code, message) = match (verdict, access) {
            (PathVerdict::Inside | PathVerdict::Root, PathAccess::Read) => {
                let name = abs.file_name().and_then(|n| n.to_str()).unwrap_or("");
                // `.envrc` is direnv's: exported tokens and keys, like `.env`; a cloud
                // service-account key (`credentials.json`), a copied `.aws/credentials` and
                // `secrets.yaml`-style files hold the same.
                let secrets_data = name.strip_prefix("secrets.").is_some_and(|ext| {
                    matches!(ext, "yaml" | "yml" | "json" | "toml" | "env" | "ini")
                });
                if name == ".env"
                    || name == ".envrc"
                    || name == "credentials.json"
                    || secrets_data
                    || (name == "credentials" && abs.ends_with(".aws/credentials"))
                    || (name.starts_with(".env.")
                        && !name.ends_with(".example")
                        && !name.ends_with(".sample"))
                {
                    (
                        Decision::Ask,
                        "secret_file",
                        format!("`{text}` usually holds secrets (API keys, passwords)"),
                    )
                } else {
                    return;
                }
            }
            (PathVerdict::Inside | PathVerdict::Root, PathAccess::Write) => (
                Decision::Ask,
                "write_inside_roots",
                format!("the {what} writes `{text}` inside the project"),
            ),
            (PathVerdict::OutsideRoots, PathAccess::Read) => (
                Decision::Ask,
                "read_outside_roots",
                format!("the {what} reads `{text}`, outside the allowed roots"),
            ),
            (PathVerdict::OutsideRoots, PathAccess::Write) => (
                Decision::Deny,
                "write_outside_roots",
                format!("the {what} writes `{text}`, outside the allowed roots"),
            ),
            (PathVerdict::Sensitive, _) => (
                Decision::Deny,
                "credential_store",
                format!("`{text}` holds credentials; the sandbox never lets a command touch it"),
            ),
            (PathVerdict::Denied { code, message }, _) => (
                Decision::Deny,
                "sandbox_denied",
                format!("the sandbox refuses `{text}` ({code}): {message}"),
            ),
        };
        self.add(decision, code, sub, message);
    }

    /// Whether `path` (as written, relative to the current cwd) names one of the roots.
    pub(crate) fn is_root(&mut self, word: &Decoded) -> bool {
        if word.dynamic {
            return false;
        }
        let cwd = self.cwd.clone().unwrap_or_else(|| PathBuf::from("/"));
        self.judged = true;
        self.judge.judge(&word.text, PathAccess::Write, &cwd) == PathVerdict::Root
    }
}

/// Reports network use: denied while the network is blocked, asked otherwise.
pub(crate) fn network(w: &mut Walker<'_>, sub: &str, what: &str) {
    if w.config.block_network {
        w.add(Decision::Deny, "network", sub, format!("`{what}` uses the network, which is blocked (to be asked instead: `block_network = false` under [bash] in the policy, or AGENT_BLOCK_NETWORK=false in the environment the agent runs in)"));
    } else {
        w.add(
            Decision::Ask,
            "network",
            sub,
            format!("`{what}` uses the network"),
        );
    }
}

/// Devices: `None` when `path` is not under `/dev`; `Some(None)` for harmless ones.
type DeviceVerdict = Option<Option<(Decision, &'static str, String)>>;

fn device(path: &str, access: PathAccess) -> DeviceVerdict {
    const HARMLESS: &[&str] = &[
        "/dev/null",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/stdin",
        "/dev/fd/0",
        "/dev/fd/1",
        "/dev/fd/2",
        "/dev/fd/63",
        "/dev/tty",
    ];
    const READABLE: &[&str] = &["/dev/zero", "/dev/urandom", "/dev/random"];
    if !path.starts_with("/dev/") {
        return None;
    }
    if HARMLESS.contains(&path) || (access == PathAccess::Read && READABLE.contains(&path)) {
        return Some(None);
    }
    if path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/") {
        return Some(Some((
            Decision::Deny,
            "network",
            format!("`{path}` opens a network connection"),
        )));
    }
    Some(Some((
        Decision::Deny,
        "device_access",
        format!(
            "`{path}` is a device; commands may not read or write devices other than /dev/null and the standard streams"
        ),
    )))
}

/// Lexical normalisation (`.` and `..`), enough for the credential and rc-file checks; the
/// judge resolves physically.
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::with_capacity(p.as_os_str().len());
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

pub(crate) fn display_words(words: &[Decoded]) -> String {
    let mut s = String::with_capacity(words.iter().map(|w| w.text.len() + 1).sum());
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        if let Some(likely) = w.likely.as_deref().filter(|_| w.dynamic) {
            // `$HOME/.ssh/id_rsa` is shown (and matched by rules) as the place it names.
            s.push_str(likely);
        } else if w.dynamic && w.text.is_empty() {
            s.push_str("$?");
        } else {
            s.push_str(&w.text);
        }
    }
    s
}

/// The word as it most likely expands (`$HOME` replaced by the home directory), as a word known
/// now; `None` when it has no such reading.
fn likely(word: &Decoded) -> Option<Decoded> {
    let text = word.likely.clone()?;
    word.dynamic.then(|| Decoded {
        text,
        glob: word.glob,
        ..Decoded::default()
    })
}
