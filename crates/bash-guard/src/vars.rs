//! Shell variables: which ones carry code for later commands (a table, one entry per name or
//! prefix), what this command assigns to them by any route, and the places where bash
//! evaluates a value as code (arithmetic, array subscripts, `${!x}` indirection).

use crate::vartable::{Readers, Runs, effect, listed, plain_options};
use crate::verdict::Decision;
use crate::walker::{PrefixVar, StdinKind, Value, Walker, display_words};
use crate::words::Decoded;

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

/// Judges a variable set for one command only. A variable every program reads is judged at
/// once; the others wait on the walker until a program of the command (the command itself, a
/// command it wraps, a script it runs) reads them, see [`program_reads`].
pub(crate) fn set_for_command(w: &mut Walker<'_>, name: &str, value: Option<&Decoded>, sub: &str) {
    let Some(e) = effect(name) else { return };
    if e.decision == Decision::Allow {
        return;
    }
    if e.readers == Readers::Every {
        return check_set(w, name, sub);
    }
    w.env.push(PrefixVar {
        name: name.to_owned(),
        effect: e,
        sub: sub.to_owned(),
        value: value.filter(|v| !v.dynamic).map(|v| v.text.clone()),
        fired: false,
    });
}

/// Finding codes of programs whose code the review does not see (or sees only in part): they
/// read every variable in their environment.
const UNSEEN: &[&str] = &[
    "unknown_command",
    "runs_program",
    "inline_code",
    "interpreter",
    "runs_script",
    "traces",
    "build",
    "source_file",
    "function_call",
    "awk_program",
    "shell_stdin",
    "dynamic_command",
    "dynamic_script",
    "unknown_subcommand",
    "unknown_option",
    "exec_option",
];

/// The program `argv` names has been classified (its findings start at `before`): report
/// every waiting prefix variable it reads.
pub(crate) fn program_reads(w: &mut Walker<'_>, argv: &[Decoded], before: usize) {
    if w.env.iter().all(|v| v.fired) {
        return;
    }
    let Some(first) = argv.first() else { return };
    let unseen = first.dynamic
        || w.findings
            .get(before..)
            .unwrap_or(&[])
            .iter()
            .any(|f| UNSEEN.contains(&f.code));
    let name = first.text.rsplit('/').next().unwrap_or("");
    let args = argv.get(1..).unwrap_or(&[]);
    // The whole command line, for exclusions such as `-node --version` (node prints its
    // version before it reads NODE_OPTIONS' modules).
    let line = (!args.iter().any(|a| a.dynamic)).then(|| format!("{name} {}", display_words(args)));
    // The subcommand, for a command the table gives subcommands (`git fetch`).
    let sub = crate::table::spec(name)
        .filter(|s| !s.subs.is_empty())
        .and_then(|s| {
            let p = crate::table::interpret(s, args);
            p.operands.first().map(|o| o.text.clone())
        });
    let terminal = !w.stdout_piped;
    let mut fire = Vec::new();
    for (k, v) in w.env.iter().enumerate() {
        if v.fired {
            continue;
        }
        let reads = unseen
            || match v.effect.readers {
                Readers::Every => true,
                Readers::Only(list) => listed(list, name, sub.as_deref(), line.as_deref()),
                Readers::Terminal(list) => {
                    terminal && listed(list, name, sub.as_deref(), line.as_deref())
                }
            };
        if reads {
            fire.push(k);
        }
    }
    // Whether the program writes where it works, for a `Place` variable.
    let writes = w.findings.get(before..).unwrap_or(&[]).iter().any(|f| {
        matches!(
            f.code,
            "writes_files" | "write_inside_roots" | "unknown_subcommand" | "unknown_command"
        )
    });
    for k in fire {
        let Some(v) = w.env.get_mut(k) else { continue };
        v.fired = true;
        let (name, sub) = (v.name.clone(), v.sub.clone());
        let (value, runs) = (v.value.clone(), v.effect.runs);
        match (runs, value) {
            // `GIT_PAGER=cat git log`: the reader runs `cat`, which is judged as any command
            // (`PAGER='rm -rf ~'` is the removal it is).
            (Runs::Alone | Runs::WithArgs, Some(text)) => run_value(w, &name, &text, runs),
            (Runs::Options(plain), Some(text)) => {
                if !plain_options(plain, &text) {
                    check_set(w, &name, &sub);
                }
            }
            (Runs::Place, Some(text)) => {
                check_set(w, &name, &sub);
                let access = if writes {
                    crate::judge::PathAccess::Write
                } else {
                    crate::judge::PathAccess::Read
                };
                let place = Decoded {
                    text,
                    ..Decoded::default()
                };
                w.path(&place, access, &sub, &format!("`{name}` directory"));
            }
            _ => check_set(w, &name, &sub),
        }
    }
}

/// Judges the command line a reader runs from `name`'s value, through the shell; with
/// `WithArgs` the reader's own arguments (a file, a host) follow, unknown to the review.
fn run_value(w: &mut Walker<'_>, name: &str, text: &str, runs: Runs) {
    let line = match runs {
        Runs::WithArgs => format!("{text} \"$_\""),
        _ => text.to_owned(),
    };
    let before = w.findings.len();
    let saved = w.cwd.clone();
    let stdin = match runs {
        Runs::Alone => StdinKind::Pipe,
        _ => StdinKind::Terminal,
    };
    w.script(&line, stdin);
    w.cwd = saved;
    if w.findings.len() == before {
        w.add(
            Decision::Ask,
            "env_runs_value",
            name,
            format!("`{name}` names a command that runs, and nothing of it could be reviewed"),
        );
    }
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
    fn base_names_drop_subscripts_and_values() {
        assert_eq!(base_name("a[1]=x"), "a");
        assert_eq!(base_name("PATH+=:/x"), "PATH");
        assert_eq!(base_name("x"), "x");
    }
}
