//! Shell variables: which ones carry code for later commands (a table, one entry per name or
//! prefix), what this command assigns to them by any route, and the places where bash
//! evaluates a value as code (arithmetic, array subscripts, `${!x}` indirection).

use crate::analyze::Walker;
use crate::verdict::Decision;
use crate::words::Decoded;

/// What setting a variable changes for the commands after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VarEffect {
    /// `NAME` exactly, or a prefix when it ends in `*`.
    pub pattern: &'static str,
    pub decision: Decision,
    /// Completes "setting `NAME` ...".
    pub effect: &'static str,
}

const fn deny(pattern: &'static str, effect: &'static str) -> VarEffect {
    VarEffect {
        pattern,
        decision: Decision::Deny,
        effect,
    }
}

const fn ask(pattern: &'static str, effect: &'static str) -> VarEffect {
    VarEffect {
        pattern,
        decision: Decision::Ask,
        effect,
    }
}

const RUNS_FILE: &str = "makes the next shell run a file of commands at start-up";
const RUNS_CMD: &str = "makes a later command run a program chosen by the value";
const LOADS_LIB: &str = "makes every later program load code from the value";
const CONFIG: &str =
    "points a later program at configuration (which can run code) chosen by the value";
const INTERP: &str = "makes an interpreter load or run code chosen by the value";

/// Variables whose value changes what later commands run. Exact names before prefixes; the
/// first match wins. Every entry has a case in `tests/corpus/variables.txt`.
pub(crate) const VAR_EFFECTS: &[VarEffect] = &[
    // Names that only describe (identity, dates, terminal prompts) are harmless.
    ask("GIT_DIR", "points git at another repository"),
    ask("GIT_WORK_TREE", "points git at another working tree"),
    ask("GIT_INDEX_FILE", "points git at another index file"),
    VarEffect {
        pattern: "GIT_AUTHOR_*",
        decision: Decision::Allow,
        effect: "only names the author",
    },
    VarEffect {
        pattern: "GIT_COMMITTER_*",
        decision: Decision::Allow,
        effect: "only names the committer",
    },
    VarEffect {
        pattern: "GIT_TERMINAL_PROMPT",
        decision: Decision::Allow,
        effect: "only stops git from prompting",
    },
    deny(
        "GIT_*",
        "changes which programs, hooks or configuration git runs",
    ),
    deny("BASH_ENV", RUNS_FILE),
    deny("ENV", RUNS_FILE),
    deny(
        "PROMPT_COMMAND",
        "runs its value as a command before each prompt",
    ),
    deny(
        "PS0",
        "runs the command substitutions in its value before each command",
    ),
    deny(
        "PS1",
        "runs the command substitutions in its value at each prompt",
    ),
    deny(
        "PS2",
        "runs the command substitutions in its value at each prompt",
    ),
    deny(
        "PS4",
        "runs the command substitutions in its value on every traced command",
    ),
    deny(
        "SHELLOPTS",
        "turns on shell options (xtrace, ...) in every later shell",
    ),
    deny("BASHOPTS", "turns on shell options in every later shell"),
    deny(
        "BASH_FUNC_*",
        "exports a function that replaces a command in every later shell",
    ),
    deny(
        "BASH_XTRACEFD",
        "sends the trace to a file descriptor chosen by the value",
    ),
    deny("LD_*", LOADS_LIB),
    deny("DYLD_*", LOADS_LIB),
    deny("GCONV_PATH", LOADS_LIB),
    deny("PAGER", RUNS_CMD),
    deny("MANPAGER", RUNS_CMD),
    deny("SYSTEMD_PAGER", RUNS_CMD),
    deny("EDITOR", RUNS_CMD),
    deny("VISUAL", RUNS_CMD),
    deny("BROWSER", RUNS_CMD),
    deny("TERMINAL", RUNS_CMD),
    deny("SSH_ASKPASS", RUNS_CMD),
    deny("SUDO_ASKPASS", RUNS_CMD),
    deny("LESSOPEN", RUNS_CMD),
    deny("LESSCLOSE", RUNS_CMD),
    deny("RUSTC_WRAPPER", RUNS_CMD),
    deny("RUSTC", RUNS_CMD),
    ask("CARGO_TARGET_DIR", "moves cargo's build output"),
    deny("CARGO_HOME", CONFIG),
    deny("CARGO_TARGET_*", "sets a runner or linker that cargo runs"),
    deny("CARGO_BUILD_RUSTC*", RUNS_CMD),
    ask("CARGO_*", "changes how cargo builds"),
    deny("CC", RUNS_CMD),
    deny("CXX", RUNS_CMD),
    deny(
        "MAKEFLAGS",
        "passes options (`--eval`, `-f`) to every later make",
    ),
    deny("XDG_CONFIG_HOME", CONFIG),
    deny("RIPGREP_CONFIG_PATH", CONFIG),
    deny("NPM_CONFIG_*", CONFIG),
    deny("npm_config_*", CONFIG),
    deny("PIP_*", CONFIG),
    deny("WGETRC", CONFIG),
    deny("CURL_HOME", CONFIG),
    deny("GNUPGHOME", CONFIG),
    deny("INPUTRC", CONFIG),
    deny("PYTHONSTARTUP", INTERP),
    deny("PYTHONPATH", INTERP),
    deny("PYTHONHOME", INTERP),
    deny("PYTHONUSERBASE", INTERP),
    deny("NODE_OPTIONS", INTERP),
    deny("NODE_PATH", INTERP),
    deny("PERL5OPT", INTERP),
    deny("PERL5LIB", INTERP),
    deny("PERLLIB", INTERP),
    deny("RUBYOPT", INTERP),
    deny("RUBYLIB", INTERP),
    // Options read from the environment by the program itself: the option that runs a
    // program (`man -P`, `tar --to-command`, `rsync -e`) can come in through them.
    deny("MANOPT", "passes options to man, whose -P/-H run a program"),
    deny(
        "TAR_OPTIONS",
        "passes options to tar, whose --to-command/-I run a program",
    ),
    deny("RSYNC_RSH", "is the remote shell rsync runs"),
    deny("RSYNC_CONNECT_PROG", RUNS_CMD),
    deny(
        "ZDOTDIR",
        "makes zsh run the .zshenv of that directory at start-up",
    ),
    deny(
        "PYTHONWARNINGS",
        "imports the warning category modules it names",
    ),
    deny(
        "PYTHONBREAKPOINT",
        "names a callable Python imports and runs at breakpoint()",
    ),
    deny("PERL5DB", INTERP),
    deny(
        "JAVA_TOOL_OPTIONS",
        "passes -javaagent and other options that load code to every JVM",
    ),
    deny(
        "_JAVA_OPTIONS",
        "passes -javaagent and other options that load code to every JVM",
    ),
    deny(
        "JDK_JAVA_OPTIONS",
        "passes -javaagent and other options that load code to java",
    ),
    ask(
        "LESS",
        "passes options to less, where `+!cmd` runs a command",
    ),
    ask(
        "LESSKEY",
        "gives less a key file whose bindings run commands",
    ),
    ask("LOCPATH", "loads locale data from another directory"),
    ask("NLSPATH", "loads message catalogs from another path"),
    ask("PATH", "changes which programs later commands run"),
    ask("CDPATH", "changes where `cd` goes"),
    ask("HOME", "changes what `~` and configuration lookups mean"),
    ask(
        "TMPDIR",
        "changes where later programs write temporary files",
    ),
    ask("IFS", "changes how later expansions split into words"),
    ask("HISTFILE", "changes which file `history` writes"),
    ask("GLOBIGNORE", "changes what globs match"),
];

/// The table entry for `name`, if any.
pub(crate) fn effect(name: &str) -> Option<&'static VarEffect> {
    VAR_EFFECTS
        .iter()
        .find(|e| match e.pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => e.pattern == name,
        })
}

/// Judges setting `name` (by any route: assignment, `export`, `declare`, `read`, `printf -v`,
/// `env NAME=`, a prefix assignment).
pub(crate) fn check_set(w: &mut Walker<'_>, name: &str, sub: &str) {
    let Some(e) = effect(name) else { return };
    if e.decision == Decision::Allow {
        return;
    }
    let code = if e.decision == Decision::Deny {
        "env_code_injection"
    } else {
        "env_path_change"
    };
    w.add(
        e.decision,
        code,
        sub,
        format!("setting `{name}` {}", e.effect),
    );
}

/// What this command put into a variable, as far as the review can know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// Literal text.
    Known(String),
    /// Output of a command, input, another variable ...
    Unknown,
}

/// Records a plain assignment's value (prefix assignments only last for their command).
pub(crate) fn record(w: &mut Walker<'_>, name: &str, value: Option<&Decoded>) {
    if w.int_vars.contains(name) {
        // `declare -i n; n='a[$(cmd)]'`: the value is evaluated as arithmetic on assignment.
        match value {
            Some(d) if !d.dynamic => w.arith(&d.text.clone()),
            _ => w.add(
                Decision::Ask,
                "dynamic_code_value",
                name,
                format!("`{name}` is an integer variable: a value only known at run time is evaluated as arithmetic, where an array subscript runs commands"),
            ),
        }
    }
    let v = match value {
        Some(d) if !d.dynamic => Value::Known(d.text.clone()),
        _ => Value::Unknown,
    };
    if name == "HOME" {
        w.home = match &v {
            Value::Known(h) if h.starts_with('/') => Some(h.clone()),
            _ => None,
        };
    }
    if name == "CDPATH" {
        // `cd dir` may now go anywhere.
        w.cdpath = true;
    }
    w.vars.insert(name.to_owned(), v);
}

/// The name part of `name[sub]` or `name=value` text.
pub(crate) fn base_name(text: &str) -> &str {
    let end = text.find(['[', '=', '+']).unwrap_or(text.len());
    text.get(..end).unwrap_or(text)
}

/// A word bash uses as a variable name (`read NAME`, `printf -v NAME`, `declare NAME=..`,
/// `test -v NAME`, `unset NAME`): a subscript in it is evaluated, and runs the command
/// substitutions it holds even when they were quoted.
pub(crate) fn name_word(w: &mut Walker<'_>, word: &Decoded, sub: &str) {
    if word.dynamic {
        w.add(
            Decision::Ask,
            "dynamic_name",
            sub,
            "a variable name is only known at run time; bash evaluates a subscript in it, which can run commands".to_owned(),
        );
        return;
    }
    let text = word.text.as_str();
    if let (Some(open), Some(close)) = (text.find('['), text.rfind(']'))
        && open < close
    {
        let inside = text.get(open + 1..close).unwrap_or("");
        w.arith(inside);
    }
}

/// Identifiers of an arithmetic expression whose values this command set: bash evaluates a
/// variable's value as arithmetic in turn, so `x='a[$(cmd)]'; echo $((x))` runs `cmd`.
pub(crate) fn arith_names(w: &mut Walker<'_>, text: &str, depth: usize) {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while b
                .get(i)
                .is_some_and(|&q| q.is_ascii_alphanumeric() || q == b'_')
            {
                i += 1;
            }
            // `16#ff`, `0x1f`: digits of a number, not a name.
            let after_number = start > 0
                && b.get(start - 1)
                    .is_some_and(|&p| p.is_ascii_digit() || p == b'#');
            if !after_number {
                let name = text.get(start..i).unwrap_or("");
                value_as_code(w, name, depth, "arithmetic", false);
            }
            continue;
        }
        i += 1;
    }
}

/// `name`'s value is about to be evaluated as code (arithmetic, indirection).
///
/// A name this command never assigned takes its value from the environment, which the guard
/// cannot see. Under `${!x}` indirection that asks (`indirection` is true): the value is used
/// as a name, bash evaluates a subscript in it (`x='a[$(cmd)]'`), and a one-shot command has
/// no other use for an inherited name there. Under arithmetic it does not: the names are
/// scanned lexically from the expression, so assignment targets (`for ((i=0; i<3; i++))`,
/// `(( i = 2 * 3 ))`) and words of literal subscripts (`m['$(id)']=1`) look the same as reads,
/// and asking on those would falsely ask for ordinary loops (issue 14 item 10). The inherited
/// environment is the user's, set before the session; what this command assigns is tracked,
/// and an unknown value (`read x`, `x=$(cmd)`) asks in both places.
pub(crate) fn value_as_code(
    w: &mut Walker<'_>,
    name: &str,
    depth: usize,
    what: &str,
    indirection: bool,
) {
    match w.vars.get(name).cloned() {
        None if indirection => w.add(
            Decision::Ask,
            "dynamic_code_value",
            name,
            format!("`{name}` is not assigned in this command, so its value comes from the environment, which cannot be reviewed; bash uses it as {what} and evaluates a subscript in it, which can run commands"),
        ),
        Some(Value::Unknown) => w.add(
            Decision::Ask,
            "dynamic_code_value",
            name,
            format!("`{name}` holds a value only known at run time, and bash evaluates it as {what}, where an array subscript runs commands"),
        ),
        // A value that holds a name is evaluated in turn (`x=y; y='a[$(cmd)]'; $((x))`, and a
        // nameref `declare -n r=x`): follow it, and past four hops ask rather than stop.
        Some(Value::Known(v))
            if v.contains(['[', '$', '`'])
                || v.bytes().any(|c| c.is_ascii_alphabetic() || c == b'_') =>
        {
            if depth >= 4 {
                w.add(
                    Decision::Ask,
                    "dynamic_code_value",
                    name,
                    format!("`{name}` names other variables more than four levels deep, and bash evaluates them as {what}, where an array subscript runs commands"),
                );
                return;
            }
            if v.contains(['$', '`']) {
                let mut out = crate::words::DecodeOut::default();
                w.decoder().decode_into(&v, &mut out);
                w.nested_subs(&out, what);
            }
            arith_names(w, &v, depth + 1);
        }
        _ => {}
    }
}

/// An arithmetic text whose expansion takes a value this command does not track: positional
/// and special parameters (`$1`, `$@`, `${10}`), command output (`$(cmd)`, backticks).
/// Text in single quotes and after a backslash is not expanded (`m['$(id)']=1`).
pub(crate) fn unknown_arith_source(text: &str) -> bool {
    let b = text.as_bytes();
    let mut quoted = false;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        i += 1;
        if quoted {
            quoted = c != b'\'';
            continue;
        }
        match c {
            b'\'' => quoted = true,
            b'\\' => i += 1,
            b'`' => return true,
            b'$' => {
                let next = b.get(i).copied().unwrap_or(0);
                let after = b.get(i + 1).copied().unwrap_or(0);
                if next.is_ascii_digit()
                    || matches!(next, b'@' | b'*')
                    // `$(cmd)`, but not a nested `$(( .. ))`.
                    || (next == b'(' && after != b'(')
                    || (next == b'{' && (after.is_ascii_digit() || matches!(after, b'@' | b'*')))
                {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_win_over_prefixes() {
        assert_eq!(effect("GIT_DIR").unwrap().decision, Decision::Ask);
        assert_eq!(effect("GIT_AUTHOR_NAME").unwrap().decision, Decision::Allow);
        assert_eq!(effect("GIT_SSH_COMMAND").unwrap().decision, Decision::Deny);
        assert_eq!(effect("LD_PRELOAD").unwrap().decision, Decision::Deny);
        assert!(effect("MY_VAR").is_none());
    }

    #[test]
    fn base_names_drop_subscripts_and_values() {
        assert_eq!(base_name("a[1]=x"), "a");
        assert_eq!(base_name("PATH+=:/x"), "PATH");
        assert_eq!(base_name("x"), "x");
    }
}
