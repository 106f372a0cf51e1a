//! Reading awk programs: one that only computes and prints is allowed; `system()`, pipes to or
//! from commands and output redirection are judged like the shell commands they are.

use crate::judge::PathAccess;
use crate::verdict::Decision;
use crate::walker::{StdinKind, Walker};
use crate::words::Decoded;

/// awk short options that take a value, attached or as the next argument (gawk's
/// `F:f:v:e:E:i:l:W;`, mawk's `-W`).
const SHORT_VALUED: &[char] = &['F', 'v', 'f', 'e', 'E', 'i', 'l', 'W'];
/// gawk short options with an optional attached value that write a file (`-d[file]` dumps the
/// variables, `-o[file]` pretty-prints, `-p[file]` profiles) or start the debugger (`-D`) or
/// set lint fatality (`-L`): none is a plain flag.
const SHORT_OPTIONAL: &[char] = &['d', 'o', 'p', 'D', 'L'];
/// gawk short flags that only change how the program is read or run.
const SHORT_FLAGS: &[char] = &[
    'b', 'c', 'C', 'g', 'h', 'M', 'n', 'N', 'O', 'P', 'r', 's', 'S', 't', 'V', 'Y',
];
/// awk long options that take a value (gawk).
const LONG_VALUED: &[&str] = &[
    "--source",
    "--file",
    "--include",
    "--load",
    "--field-separator",
    "--assign",
    "--exec",
];

/// Judges `awk` (and `gawk`, `mawk`, `nawk`) with its arguments. Options end at the first
/// operand (gawk's optstring starts with `+`): the first operand is the program unless
/// `-e`/`-f` gave one, and every later argument is an input file or an assignment.
pub(crate) fn awk(w: &mut Walker<'_>, name: &str, args: &[Decoded], sub: &str) {
    let mut programs: Vec<Decoded> = Vec::new();
    let mut from_file = false;
    let mut operands: Vec<&Decoded> = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        let t = a.text.as_str();
        if a.dynamic || !t.starts_with('-') || t == "-" {
            // The first operand: options end here.
            operands.extend(args.get(i - 1..).unwrap_or(&[]));
            break;
        }
        if t == "--" {
            operands.extend(args.get(i..).unwrap_or(&[]));
            break;
        }
        // (option letter or long name, value) pairs this argument holds.
        let mut opts: Vec<(String, Option<Decoded>)> = Vec::new();
        if t.starts_with("--") {
            let (opt, attached) = match t.split_once('=') {
                Some((o, v)) => (o, Some(v)),
                None => (t, None),
            };
            if LONG_VALUED.contains(&opt) {
                let value = crate::words::option_value(a, attached, true, args, &mut i);
                opts.push((opt.to_owned(), value));
            } else if !matches!(
                t,
                "--posix" | "--sandbox" | "--traditional" | "--lint" | "--characters-as-bytes"
            ) {
                // --profile=FILE, --pretty-print, --dump-variables, --debug, abbreviations:
                // unknown here, so asked.
                w.add(
                    Decision::Ask,
                    "unknown_option",
                    sub,
                    format!("`{name}` has an option `{t}` this analyzer does not know"),
                );
            }
        } else {
            // A cluster of short options (`-bf prog.awk`, `-vx=1`, `-o/tmp/x`).
            let body = t.get(1..).unwrap_or("");
            for (at, c) in body.char_indices() {
                let rest = body.get(at + c.len_utf8()..).unwrap_or("");
                if SHORT_VALUED.contains(&c) {
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned()
                    } else {
                        Some(Decoded {
                            text: rest.to_owned(),
                            ..a.clone()
                        })
                    };
                    opts.push((format!("-{c}"), value));
                    break;
                }
                if SHORT_OPTIONAL.contains(&c) {
                    if !rest.is_empty() {
                        let d = Decoded {
                            text: rest.to_owned(),
                            ..a.clone()
                        };
                        w.path(
                            &d,
                            PathAccess::Write,
                            sub,
                            "awk dump, profile or listing file",
                        );
                    }
                    w.add(
                        Decision::Ask,
                        "awk_writes_file",
                        sub,
                        format!("`{name} -{c}` writes a file or starts the debugger"),
                    );
                    break;
                }
                if !SHORT_FLAGS.contains(&c) {
                    w.add(
                        Decision::Ask,
                        "unknown_option",
                        sub,
                        format!("`{name}` has an option `-{c}` this analyzer does not know"),
                    );
                }
            }
        }
        for (opt, value) in opts {
            match opt.as_str() {
                "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" => {
                    if let Some(v) = &value {
                        w.path(v, PathAccess::Read, sub, "awk program file");
                    }
                    w.add(
                        Decision::Ask,
                        "awk_program_file",
                        sub,
                        format!(
                            "`{name}` runs a program from a file, which cannot be reviewed here"
                        ),
                    );
                    from_file = true;
                }
                "-l" | "--load" => {
                    w.add(
                        Decision::Deny,
                        "loads_library",
                        sub,
                        format!("`{name} {opt}` loads a shared library"),
                    );
                    return;
                }
                "-W" => w.add(
                    Decision::Ask,
                    "unknown_option",
                    sub,
                    format!("`{name} -W` sets an option (exec=, source=, dump=...) by name"),
                ),
                // Every -e counts: gawk concatenates them into one program.
                "-e" | "--source" => match value {
                    Some(v) => programs.push(v),
                    None => w.add(
                        Decision::Ask,
                        "awk_program",
                        sub,
                        format!("`{name} {opt}` without a program"),
                    ),
                },
                _ => {}
            }
        }
    }
    let mut operands = operands.into_iter();
    if programs.is_empty() && !from_file {
        match operands.next() {
            Some(p) => programs.push(p.clone()),
            None => {
                w.add(
                    Decision::Ask,
                    "awk_program",
                    sub,
                    format!("`{name}` without a program"),
                );
                return;
            }
        }
    }
    for program in &programs {
        if program.dynamic {
            w.add(
                Decision::Deny,
                "dynamic_script",
                sub,
                format!("the `{name}` program is only known at run time"),
            );
            return;
        }
        judge_program(w, name, &program.text, sub);
    }
    for o in operands {
        // `var=value` operands are assignments, not files.
        if o.text.contains('=') && !o.text.starts_with('/') && !o.text.starts_with('.') {
            continue;
        }
        if o.text != "-" {
            w.path(o, PathAccess::Read, sub, "input file");
        }
    }
    w.add(
        Decision::Allow,
        "read_only",
        sub,
        format!("the `{name}` program only reads and prints"),
    );
}

/// Looks through an awk program for commands, input and output files, network special files
/// and code loaded at run time. The scan knows strings, comments (`#` to the end of the line)
/// and regular expression literals (`/re/` where an operand is expected), because a `"` or `#`
/// inside one of them would otherwise hide the code after it; where a `/` could be either a
/// division or a regex and the reading changes what is code, the program is asked.
fn judge_program(w: &mut Walker<'_>, name: &str, prog: &str, sub: &str) {
    if let Some(what) = crate::backstop::catastrophic(prog) {
        w.add(
            Decision::Deny,
            "catastrophic_text",
            sub,
            format!("the `{name}` program holds {what}"),
        );
        return;
    }
    let b = prog.as_bytes();
    let strings = string_literals(prog);
    for (lit, _) in &strings {
        inet(w, name, lit, sub);
    }
    let mut in_print = false;
    let mut in_getline = false;
    // The previous significant token was an operand (a name, number, string, `)` or `]`),
    // after which `/` divides; elsewhere it opens a regex.
    let mut after_operand = false;
    // The previous token was `)`: `(a) / 2` divides but `if (x) /re/` matches.
    let mut after_paren = false;
    // Calls of system() the scan saw as code, compared with the text's count at the end.
    let mut system_calls = 0usize;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let paren = after_paren;
        if c != b' ' && c != b'\t' {
            after_paren = false;
        }
        match c {
            b'"' => {
                // Skip the literal.
                i += 1;
                while let Some(&q) = b.get(i) {
                    if q == b'\\' {
                        i += 1;
                    } else if q == b'"' {
                        break;
                    }
                    i += 1;
                }
                after_operand = true;
            }
            b'#' => {
                // A comment runs to the end of the line.
                while b.get(i).is_some_and(|q| *q != b'\n') {
                    i += 1;
                }
                continue;
            }
            b'/' if !after_operand || paren => {
                // A regex literal: up to the next unescaped `/` outside a bracket expression.
                let start = i + 1;
                let mut j = start;
                let mut bracket = false;
                while let Some(&q) = b.get(j) {
                    match q {
                        b'\\' => j += 1,
                        b'[' => bracket = true,
                        b']' => bracket = false,
                        b'/' if !bracket => break,
                        b'\n' => break,
                        _ => {}
                    }
                    j += 1;
                }
                let body = prog.get(start..j.min(prog.len())).unwrap_or("");
                let closed = b.get(j) == Some(&b'/');
                if paren && (!closed || !body.contains(['"', '#'])) {
                    // After `)` read it as a division: the body is then scanned as code,
                    // which sees at least as much as the regex reading would.
                    i += 1;
                    after_operand = false;
                    continue;
                }
                // Text a wrong reading would hide: a quote, a statement boundary; after `)`
                // also a comment.
                if !closed || body.contains(['"', ';']) || (paren && body.contains('#')) {
                    w.add(
                        Decision::Ask,
                        "awk_ambiguous",
                        sub,
                        format!(
                            "the `{name}` program has a `/` whose reading (division or regex) this analyzer cannot settle"
                        ),
                    );
                    return;
                }
                i = j + 1;
                after_operand = true;
                continue;
            }
            b')' => {
                after_operand = true;
                after_paren = true;
            }
            b']' => after_operand = true,
            b'@' => {
                // gawk: `@include "f"` and `@load "lib"` bring in code from a file,
                // `@f(x)` calls the function whose name `f` holds (system() too).
                let rest = prog.get(i + 1..).unwrap_or("");
                if rest.starts_with("load") {
                    w.add(
                        Decision::Deny,
                        "loads_library",
                        sub,
                        format!("the `{name}` program loads a shared library (`@load`)"),
                    );
                    return;
                }
                if !rest.starts_with("namespace") {
                    w.add(
                        Decision::Ask,
                        "awk_indirect",
                        sub,
                        format!(
                            "the `{name}` program includes a file or calls a function by a name only known at run time (`@`)"
                        ),
                    );
                }
                after_operand = false;
            }
            b';' | b'}' | b'{' | b'\n' => {
                in_print = false;
                in_getline = false;
                after_operand = false;
            }
            b'|' if b.get(i + 1) != Some(&b'|') => {
                // `print | "cmd"`, `"cmd" | getline`: the string next to the pipe is a command.
                let after = literal_at(prog, i + 1);
                let before = strings.iter().rev().find(|(_, end)| {
                    *end <= i && prog.get(*end..i).is_some_and(|g| g.trim().is_empty())
                });
                match after.or_else(|| before.map(|(s, _)| s.clone())) {
                    Some(cmd) if !cmd.starts_with("/inet") => w.script(&cmd, StdinKind::Dynamic),
                    Some(_) => {}
                    None => w.add(
                        Decision::Ask,
                        "awk_pipe",
                        sub,
                        format!(
                            "the `{name}` program pipes to or from a command only known at run time"
                        ),
                    ),
                }
                i += 1;
                if b.get(i) == Some(&b'&') {
                    i += 1;
                }
                after_operand = false;
                continue;
            }
            b'>' if in_print => {
                let mut j = i + 1;
                if b.get(j) == Some(&b'>') {
                    j += 1;
                }
                match literal_at(prog, j) {
                    Some(file) => {
                        let d = Decoded {
                            text: file,
                            ..Decoded::default()
                        };
                        w.path(&d, PathAccess::Write, sub, "awk output redirection");
                    }
                    None => w.add(
                        Decision::Ask,
                        "awk_output",
                        sub,
                        format!("the `{name}` program writes to a file only known at run time"),
                    ),
                }
                i = j;
                after_operand = false;
                continue;
            }
            // `getline < file`, `getline var < file`, `(getline line < f) > 0`.
            b'<' if in_getline => {
                if let Some(file) = literal_at(prog, i + 1) {
                    let d = Decoded {
                        text: file,
                        ..Decoded::default()
                    };
                    w.path(&d, PathAccess::Read, sub, "awk getline file");
                } else {
                    w.add(
                        Decision::Ask,
                        "awk_input",
                        sub,
                        format!("the `{name}` program reads a file only known at run time"),
                    );
                }
                after_operand = false;
            }
            _ if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => {
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|q| q.is_ascii_alphanumeric() || *q == b'_' || *q == b'.')
                {
                    i += 1;
                }
                if c == b'$' {
                    i = i.max(start + 1);
                }
                let word = prog.get(start..i).unwrap_or("");
                // Keywords after which an operand (so a regex) may follow.
                after_operand = !matches!(
                    word,
                    "print" | "printf" | "return" | "in" | "case" | "getline" | "do" | "else" | "$"
                );
                match word {
                    "print" | "printf" => in_print = true,
                    "getline" => in_getline = true,
                    "system" => {
                        system_calls += 1;
                        match literal_at(prog, i).or_else(|| literal_at(prog, i + 1)) {
                            Some(cmd) if prog.get(i..).is_some_and(|r| {
                                let r = r.trim_start().trim_start_matches('(').trim_start();
                                r.starts_with('"') && r.get(1..).and_then(|x| x.find('"')).is_some_and(|e| {
                                    r.get(e + 2..).is_some_and(|after| after.trim_start().starts_with(')'))
                                })
                            }) => w.script(&cmd, StdinKind::Terminal),
                            _ => w.add(Decision::Ask, "awk_system", sub, format!("the `{name}` program runs a command built at run time with system()")),
                        }
                    }
                    _ => {}
                }
                continue;
            }
            b' ' | b'\t' | b'\\' => {}
            // `a++ / 2` divides: `++` and `--` leave the operand state as it was.
            b'+' | b'-' if b.get(i + 1) == Some(&c) => i += 1,
            _ => after_operand = false,
        }
        i += 1;
    }
    // Fail closed: a `system` the scan did not meet as code (inside what it took for a
    // string) is text it may have misread.
    if prog.matches("system").count() > system_calls {
        w.add(
            Decision::Ask,
            "awk_ambiguous",
            sub,
            format!("the `{name}` program mentions `system` where this analyzer cannot tell code from text"),
        );
    }
}

/// gawk's network special files `/inet/tcp/LPORT/HOST/RPORT` (and `/inet4`, `/inet6`, udp):
/// a connection, judged by where it goes.
fn inet(w: &mut Walker<'_>, name: &str, lit: &str, sub: &str) {
    let Some(rest) = ["/inet/", "/inet4/", "/inet6/"]
        .iter()
        .find_map(|p| lit.strip_prefix(p))
    else {
        return;
    };
    let host = rest.split('/').nth(2).unwrap_or("");
    if let Some(reason) = w.judge.destination(host) {
        w.add(
            Decision::Deny,
            "network_internal",
            sub,
            format!("`{host}`: {reason}; network use is judged by where it goes"),
        );
    }
    crate::walker::network(w, sub, name);
}

/// The string literal starting at `at` (after blanks and an opening parenthesis), if any.
fn literal_at(prog: &str, at: usize) -> Option<String> {
    let rest = prog
        .get(at..)?
        .trim_start()
        .trim_start_matches('(')
        .trim_start();
    let body = rest.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return Some(out),
            other => out.push(other),
        }
    }
    None
}

/// Every string literal with the byte offset just past its closing quote.
fn string_literals(prog: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let b = prog.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'"'
            && let Some(s) = literal_at(prog, i)
        {
            {
                let mut j = i + 1;
                while let Some(&q) = b.get(j) {
                    if q == b'\\' {
                        j += 1;
                    } else if q == b'"' {
                        break;
                    }
                    j += 1;
                }
                out.push((s, j + 1));
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}
