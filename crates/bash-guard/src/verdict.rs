//! Decisions, findings and verdicts.

use serde::Serialize;

/// What to do with a command, ordered by strictness so that combining findings is `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Provably read-only, no side effects.
    Allow,
    /// Side effects that are not catastrophic: a person should confirm.
    Ask,
    /// Catastrophic, unreviewable or forbidden by policy.
    Deny,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        })
    }
}

/// One rule that fired on one simple command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What this finding alone decides.
    pub decision: Decision,
    /// A stable machine-readable reason code (`read_only`, `network`, `write_outside_roots`, ...).
    pub code: &'static str,
    /// The simple command it is about, its decoded words joined by spaces.
    pub subcommand: String,
    /// Why, in words a person can act on.
    pub message: String,
}

impl Finding {
    /// Which kind of ask this finding is (`None` unless it asks): derived from its `code` by
    /// [`ask_kind`], so a code the table does not name cannot be lifted.
    pub fn ask_kind(&self) -> Option<AskKind> {
        (self.decision == Decision::Ask).then(|| ask_kind(self.code))
    }
}

/// The two kinds of ask (design.md section 7). An allow rule, an "allow for session" answer
/// and auto mode may lift a [`AskKind::SideEffect`] for the simple commands they match;
/// nothing lifts an [`AskKind::Unreviewable`] ask, and nothing lifts a deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AskKind {
    /// A known side effect: writes inside the project, builds and tests, network where it is
    /// allowed, a process left running. The guard saw everything the command does.
    SideEffect,
    /// Something the guard could not review: hidden execution (an interpreter, a script, a
    /// program from the project, a configured program), an unknown option, command or
    /// subcommand, an argument only known at run time, a policy's own ask.
    Unreviewable,
}

impl AskKind {
    /// Words for a refusal: "a known side effect" / "cannot be reviewed".
    pub fn as_str(self) -> &'static str {
        match self {
            AskKind::SideEffect => "a known side effect",
            AskKind::Unreviewable => "cannot be reviewed",
        }
    }
}

impl std::fmt::Display for AskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of [`ASK_KINDS`]: an ask finding's code, its kind, and a command that earns it
/// (the test of the row runs it).
#[derive(Debug, Clone, Copy)]
pub struct AskKindEntry {
    /// The finding code.
    pub code: &'static str,
    /// Its kind.
    pub kind: AskKind,
    /// A command whose analysis (network allowed) asks with this code.
    pub example: &'static str,
}

const fn side(code: &'static str, example: &'static str) -> AskKindEntry {
    AskKindEntry {
        code,
        kind: AskKind::SideEffect,
        example,
    }
}

const fn unreviewable(code: &'static str, example: &'static str) -> AskKindEntry {
    AskKindEntry {
        code,
        kind: AskKind::Unreviewable,
        example,
    }
}

/// The kind of every ask code bash-guard gives: the one table [`ask_kind`] reads. A code not
/// listed is [`AskKind::Unreviewable`] (fails closed: a new code is never lifted until it is
/// listed here as a side effect).
pub const ASK_KINDS: &[AskKindEntry] = &[
    // Known side effects: every path is judged, every program is named and reviewed.
    side("build", "cargo build"),
    side("write_inside_roots", "touch notes.txt"),
    side("writes_files", "mkdir -p src/bin"),
    side("network", "git fetch"),
    side("read_outside_roots", "cat /etc/hosts"),
    side("long_running", "tail -F log.txt"),
    side("background", "sleep 5 &"),
    side("coprocess", "coproc sleep 5"),
    side("endless_loop", "while true; do sleep 1; done"),
    side("repeats", "watch ls"),
    side("writes_history", "history -w"),
    side("changes_history", "history -c"),
    side("signal", "kill 12345"),
    // Cannot be reviewed: what runs, or what an option does, is not on the command line.
    unreviewable("unknown_command", "frobnicate --now"),
    unreviewable("unknown_option", "cat --frobnicate notes.txt"),
    unreviewable("unknown_subcommand", "git config $1 id"),
    unreviewable("option_side_effect", "git -p log"),
    unreviewable("build_option", "cargo test --config x=1"),
    unreviewable("missing_value", "env -S"),
    unreviewable("wrapper", "builtin"),
    unreviewable("dynamic_argument", "cat $1"),
    unreviewable("dynamic_path", "cat $1"),
    unreviewable("dynamic_name", "printf -v $1 %s x"),
    unreviewable("dynamic_code_value", "a[$1]=1"),
    unreviewable("unknown_cwd", "cd $1 && cat notes.txt"),
    unreviewable("glob_too_wide", "cat /usr/*/*/*/*"),
    unreviewable("inline_code", "python3 -c 'print(1)'"),
    unreviewable("interpreter", "python3 -m http.server"),
    unreviewable("runs_program", "./tool"),
    unreviewable("runs_script", "bash script.sh"),
    unreviewable("source_file", "source ./env.sh"),
    unreviewable("traces", "strace ls"),
    unreviewable("env_path_change", "PATH=/tmp/bin"),
    unreviewable("hash_alias", "hash -p /tmp/x ls"),
    unreviewable("changes_builtins", "enable -n echo"),
    unreviewable("completion_command", "complete -C make make"),
    unreviewable("completion_function", "compgen -F _myfunc x"),
    unreviewable("files_from_list", "wc --files0-from=list.txt"),
    unreviewable("git_config_override", "git -c user.name=x log"),
    unreviewable("database", "sqlite3 db.sqlite 'delete from t'"),
    unreviewable("sed_script_file", "sed -f script.sed notes.txt"),
    unreviewable("sed_unreadable", "sed -e \"$1\" notes.txt"),
    unreviewable("jq_module", "jq -n 'import \"x\" as $c; $c'"),
    unreviewable("awk_program_file", "awk -f prog.awk notes.txt"),
    unreviewable("awk_system", "awk '{system($0)}' notes.txt"),
    unreviewable("awk_indirect", "awk '@include \"lib.awk\"'"),
    unreviewable("awk_ambiguous", "awk 'BEGIN { x = /\"/; y = 1 }'"),
    unreviewable(
        "awk_input",
        "awk 'BEGIN { while ((getline line < f) > 0) n++ }'",
    ),
    unreviewable("awk_writes_file", "gawk -o/tmp/x 'BEGIN{}'"),
    unreviewable("awk_output", "awk 'BEGIN { print 1 > f }'"),
    unreviewable("awk_program", "gawk -W exec=prog.awk"),
    // What reads a likely secret is not lifted by a rule that names the reader.
    unreviewable("secret_file", "cat .envrc"),
    // The policy's own `[bash] ask_commands`: a configured ask, which no allow rule lifts.
    unreviewable("policy_ask", "terraform plan"),
];

/// The kind of an ask finding with `code` (see [`ASK_KINDS`]); an unknown code cannot be
/// reviewed.
pub fn ask_kind(code: &str) -> AskKind {
    ASK_KINDS
        .iter()
        .find(|e| e.code == code)
        .map_or(AskKind::Unreviewable, |e| e.kind)
}

/// The verdict on a whole command: the strictest finding wins, and every finding is listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The strictest decision of all findings.
    pub decision: Decision,
    /// Every finding, in the order the walker met them.
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// Builds a verdict from findings; no findings at all is a deny (nothing to run was found).
    pub(crate) fn from_findings(findings: Vec<Finding>) -> Verdict {
        let decision = findings
            .iter()
            .map(|f| f.decision)
            .max()
            .unwrap_or(Decision::Deny);
        Verdict { decision, findings }
    }

    /// Every simple command the analysis met (inside substitutions, `bash -c` strings, wrappers
    /// and `find -exec` too), each once, in walk order: the subjects perm-rules' content rules
    /// match. `Err` (why) when any part could not be parsed or hit a cap: such a command is
    /// unsplittable, and no allow rule may allow it. Derived from the same walk as the verdict,
    /// so a command is parsed once for both.
    pub fn simple_commands(&self) -> Result<Vec<String>, String> {
        if let Some(f) = self
            .findings
            .iter()
            .find(|f| crate::limits::UNPARSABLE.contains(&f.code))
        {
            return Err(f.message.clone());
        }
        let mut seen = std::collections::HashSet::new();
        Ok(self
            .findings
            .iter()
            .filter(|f| !f.subcommand.is_empty() && seen.insert(f.subcommand.as_str()))
            .map(|f| f.subcommand.clone())
            .collect())
    }

    /// The findings that decided the verdict (those as strict as the verdict itself).
    pub fn deciding(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(move |f| f.decision == self.decision)
    }
}
