//! Builtins judged by what bash really does with their arguments: some write files
//! (`history -w`), run code (`trap`, `mapfile -C`, `compgen -C`), load libraries
//! (`enable -f`), or evaluate a name's subscript as arithmetic (`read`, `printf -v`,
//! `declare`, `test -v`, `unset`, `let`), which runs the command substitutions it holds.

use crate::judge::PathAccess;
use crate::vars;
use crate::verdict::Decision;
use crate::walker::{StdinKind, Walker};
use crate::words::Decoded;

/// Options of a builtin that take a value (bash's builtins use plain `getopt`: short options,
/// clusters, attached or separate values, `--` ends options).
fn valued(name: &str) -> &'static str {
    match name {
        "read" => "adinNptu",
        "mapfile" | "readarray" => "dnOsuCc",
        "compgen" | "complete" => "oAGWFCXPS",
        "declare" | "typeset" | "local" | "export" | "readonly" => "",
        "printf" => "v",
        "history" => "d",
        "enable" => "f",
        _ => "",
    }
}

/// Splits a builtin's arguments into `(option, value)` pairs and operands.
fn getopt<'a>(name: &str, args: &'a [Decoded]) -> (Vec<(char, Option<Decoded>)>, Vec<&'a Decoded>) {
    let valued = valued(name);
    let mut opts = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        let t = a.text.as_str();
        if a.dynamic || !(t.starts_with('-') || t.starts_with('+')) || t.len() < 2 {
            // Builtins stop at the first operand (no GNU permutation).
            operands.push(a);
            operands.extend(args.get(i..).unwrap_or(&[]));
            break;
        }
        if t == "--" {
            operands.extend(args.get(i..).unwrap_or(&[]));
            break;
        }
        for (k, c) in t.char_indices().skip(1) {
            if valued.contains(c) {
                let rest = t.get(k + c.len_utf8()..).unwrap_or("");
                if rest.is_empty() {
                    opts.push((c, args.get(i).cloned()));
                    i += 1;
                } else {
                    let v = Decoded {
                        text: rest.to_owned(),
                        ..a.clone()
                    };
                    opts.push((c, Some(v)));
                }
                break;
            }
            opts.push((c, None));
        }
    }
    (opts, operands)
}

fn allow(w: &mut Walker<'_>, sub: &str, message: &str) {
    w.add(Decision::Allow, "read_only", sub, message.to_owned());
}

/// Judges `name` if it is a builtin with real semantics here; `false` leaves it to the
/// classifier.
pub(crate) fn builtin(
    w: &mut Walker<'_>,
    name: &str,
    args: &[Decoded],
    sub: &str,
    stdin: &StdinKind,
) -> bool {
    match name {
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            let (opts, operands) = getopt(name, args);
            // `-p`, and `declare -f`/`-F` (listing functions), only print: the names are not
            // set. Any other option sets an attribute (`export -f` and `declare -fx` export a
            // function, which is code for every child bash).
            let lists = |c: char| {
                c == 'p' || (matches!(name, "declare" | "typeset") && matches!(c, 'f' | 'F'))
            };
            if !opts.is_empty()
                && opts.iter().all(|(c, _)| lists(*c))
                && operands.iter().all(|a| !a.text.contains('='))
            {
                allow(w, sub, "prints shell variables or functions");
                return true;
            }
            let nameref = opts.iter().any(|(c, _)| *c == 'n');
            if opts.iter().any(|(c, _)| *c == 'i') {
                for a in &operands {
                    // `declare -i y=$x`: the name is static even when the value is not.
                    if !a.dynamic || a.text.contains('=') {
                        w.int_vars.insert(vars::base_name(&a.text).to_owned());
                    }
                }
            }
            for a in operands {
                assignment_word(w, a, sub, nameref);
            }
            allow(w, sub, "sets or prints shell variables");
        }
        "read" => {
            let (opts, operands) = getopt(name, args);
            for (c, v) in &opts {
                if *c == 'a'
                    && let Some(v) = v
                {
                    set_unknown(w, v, sub);
                }
            }
            for a in operands {
                set_unknown(w, a, sub);
            }
            allow(w, sub, "reads input into variables");
        }
        // `getopts OPTSTRING NAME [ARGS]` stores each option letter in NAME: a name such as
        // PATH or BASH_ENV (or a subscript `a[$(cmd)]`) is judged as `read` judges it.
        "getopts" => {
            match args.get(1) {
                Some(n) => set_unknown(w, n, sub),
                None => w.add(
                    Decision::Ask,
                    "missing_value",
                    sub,
                    "`getopts` without a variable name".to_owned(),
                ),
            }
            allow(w, sub, "parses options into a variable");
        }
        "printf" => {
            let (opts, _) = getopt(name, args);
            for (c, v) in &opts {
                if *c == 'v'
                    && let Some(v) = v
                {
                    set_unknown(w, v, sub);
                }
            }
            allow(w, sub, "`printf` only prints or sets a variable");
        }
        "mapfile" | "readarray" => {
            let (opts, operands) = getopt(name, args);
            for (c, v) in &opts {
                if *c == 'C'
                    && let Some(v) = v
                {
                    run_string(w, v, sub, name, "callback");
                }
            }
            for a in operands {
                set_unknown(w, a, sub);
            }
            allow(w, sub, "reads lines into an array");
        }
        "let" => {
            for a in args {
                if a.dynamic {
                    w.add(
                        Decision::Ask,
                        "dynamic_code_value",
                        sub,
                        "`let` evaluates text only known at run time as arithmetic, where an array subscript runs commands".to_owned(),
                    );
                } else {
                    w.arith(&a.text.clone());
                }
            }
            allow(w, sub, "evaluates arithmetic");
        }
        "test" | "[" => {
            let mut it = args.iter();
            while let Some(a) = it.next() {
                if !a.dynamic
                    && matches!(a.text.as_str(), "-v" | "-R")
                    && let Some(n) = it.next()
                {
                    vars::name_word(w, n, sub);
                }
            }
            allow(w, sub, "a test expression");
        }
        "unset" => {
            let (_, operands) = getopt(name, args);
            for a in operands {
                vars::name_word(w, a, sub);
            }
            allow(w, sub, "unsets shell variables or functions");
        }
        "history" => history(w, args, sub),
        "trap" => trap(w, args, sub, stdin),
        "compgen" | "complete" => {
            let (opts, _) = getopt(name, args);
            for (c, v) in &opts {
                let Some(v) = v else { continue };
                match c {
                    'C' => {
                        if name == "complete" {
                            w.add(Decision::Ask, "completion_command", sub, "`complete -C` registers a command that runs whenever a completion is asked for".to_owned());
                        }
                        run_string(w, v, sub, name, "completion command");
                    }
                    'F' if !w.functions.contains(&v.text) => {
                        w.add(
                            Decision::Ask,
                            "completion_function",
                            sub,
                            format!(
                                "`{name} -F` calls the function `{}`, not defined in this command",
                                v.text
                            ),
                        );
                    }
                    // The word list is expanded: substitutions in it run, even when quoted.
                    'W' if !v.dynamic => w.script(&format!(": {}", v.text), StdinKind::Terminal),
                    'W' => run_string(w, v, sub, name, "word list"),
                    _ => {}
                }
            }
            allow(w, sub, "lists completions");
        }
        "enable" => {
            let (opts, operands) = getopt(name, args);
            if opts.iter().any(|(c, _)| *c == 'f') {
                w.add(
                    Decision::Deny,
                    "loads_library",
                    sub,
                    "`enable -f` loads a shared library into the shell: native code that cannot be reviewed".to_owned(),
                );
            } else if opts.iter().any(|(c, _)| *c == 'd' || *c == 'n') || !operands.is_empty() {
                w.add(
                    Decision::Ask,
                    "changes_builtins",
                    sub,
                    "`enable` turns builtins on or off, changing what later command names run"
                        .to_owned(),
                );
            } else {
                allow(w, sub, "lists builtins");
            }
        }
        _ => return false,
    }
    true
}

/// A code string a builtin will run: analysed like `eval`, denied when only known at run time.
fn run_string(w: &mut Walker<'_>, v: &Decoded, sub: &str, name: &str, what: &str) {
    if v.dynamic {
        w.add(
            Decision::Deny,
            "dynamic_script",
            sub,
            format!("the {what} of `{name}` is only known at run time and runs as a command"),
        );
    } else {
        w.script(&v.text, StdinKind::Terminal);
    }
}

/// A variable that gets a value only known at run time (`read`, `printf -v`, `mapfile`).
fn set_unknown(w: &mut Walker<'_>, word: &Decoded, sub: &str) {
    vars::name_word(w, word, sub);
    if word.dynamic {
        return;
    }
    let base = vars::base_name(&word.text).to_owned();
    vars::check_set(w, &base, sub);
    vars::record(w, &base, None);
}

/// `NAME`, `NAME=value`, `NAME[i]=value`, `NAME+=value` given to `declare` and friends.
fn assignment_word(w: &mut Walker<'_>, a: &Decoded, sub: &str, nameref: bool) {
    let (name_part, value) = match a.text.split_once('=') {
        Some((n, v)) => (n.trim_end_matches('+'), Some(v)),
        None => (a.text.as_str(), None),
    };
    if name_part.is_empty() || (a.dynamic && value.is_none()) {
        w.add(
            Decision::Ask,
            "dynamic_name",
            sub,
            "a variable name is only known at run time; bash evaluates a subscript in it, which can run commands".to_owned(),
        );
        return;
    }
    let name_word = Decoded {
        text: name_part.to_owned(),
        ..Decoded::default()
    };
    vars::name_word(w, &name_word, sub);
    let base = vars::base_name(name_part).to_owned();
    vars::check_set(w, &base, sub);
    if nameref && let Some(target) = value {
        // `declare -n ref=BASH_ENV`: later assignments to `ref` set the target.
        let t = Decoded {
            text: target.to_owned(),
            dynamic: a.dynamic,
            ..Decoded::default()
        };
        vars::name_word(w, &t, sub);
        vars::check_set(w, vars::base_name(target), sub);
    }
    if value.is_some() {
        let v = Decoded {
            text: value.unwrap_or("").to_owned(),
            dynamic: a.dynamic,
            ..Decoded::default()
        };
        vars::record(w, &base, Some(&v));
    }
}

fn history(w: &mut Walker<'_>, args: &[Decoded], sub: &str) {
    let (opts, operands) = getopt("history", args);
    let file = operands.first().copied();
    let has = |c: char| opts.iter().any(|(o, _)| *o == c);
    if has('a') || has('w') {
        match file {
            Some(f) => w.path(f, PathAccess::Write, sub, "history file"),
            None => w.add(
                Decision::Ask,
                "writes_history",
                sub,
                "`history -a`/`-w` writes the history file ($HISTFILE)".to_owned(),
            ),
        }
    }
    if (has('r') || has('n'))
        && let Some(f) = file
    {
        w.path(f, PathAccess::Read, sub, "history file");
    }
    if has('c') || has('d') || has('s') {
        w.add(
            Decision::Ask,
            "changes_history",
            sub,
            "changes the shell's history list".to_owned(),
        );
    }
    allow(w, sub, "prints the history");
}

fn trap(w: &mut Walker<'_>, args: &[Decoded], sub: &str, _stdin: &StdinKind) {
    let rest: Vec<&Decoded> = match args.first() {
        Some(a) if !a.dynamic && a.text == "--" => args.iter().skip(1).collect(),
        _ => args.iter().collect(),
    };
    let lists = rest
        .first()
        .is_some_and(|a| !a.dynamic && matches!(a.text.as_str(), "-p" | "-l" | "-P"));
    // One operand, or `-` as the action: the signals are reset.
    let resets = rest.len() < 2 || rest.first().is_some_and(|a| !a.dynamic && a.text == "-");
    if lists || resets {
        allow(w, sub, "lists or resets traps");
        return;
    }
    if let Some(action) = rest.first() {
        run_string(w, action, sub, "trap", "action");
    }
    allow(w, sub, "sets a trap whose action is reviewed above");
}
