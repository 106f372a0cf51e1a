//! Reading awk programs: one that only computes and prints is allowed; `system()`, pipes to or
//! from commands and output redirection are judged like the shell commands they are.

use crate::analyze::{StdinKind, Walker};
use crate::judge::PathAccess;
use crate::verdict::Decision;
use crate::words::Decoded;

/// awk options that take a value (POSIX awk, gawk, mawk).
const VALUED: &[&str] = &[
    "-F",
    "-v",
    "-f",
    "-e",
    "-i",
    "-l",
    "-E",
    "--source",
    "--file",
    "--include",
    "--load",
    "--field-separator",
    "--assign",
    "--exec",
];

/// Judges `awk` (and `gawk`, `mawk`, `nawk`) with its arguments.
pub(crate) fn awk(w: &mut Walker<'_>, name: &str, args: &[Decoded], sub: &str) {
    let mut program: Option<Decoded> = None;
    let mut operands: Vec<&Decoded> = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while let Some(a) = args.get(i) {
        i += 1;
        let t = a.text.as_str();
        if only_operands || a.dynamic || !t.starts_with('-') || t == "-" {
            if program.is_none() {
                program = Some(a.clone());
            } else {
                operands.push(a);
            }
            continue;
        }
        if t == "--" {
            only_operands = true;
            continue;
        }
        let (opt, attached) = if t.starts_with("--") {
            match t.split_once('=') {
                Some((o, v)) => (o, Some(v)),
                None => (t, None),
            }
        } else if t.len() > 2 {
            (t.get(..2).unwrap_or(t), t.get(2..))
        } else {
            (t, None)
        };
        let Some(valued) = VALUED.iter().find(|v| **v == opt) else {
            // Flags (--posix, --sandbox, -b ...): harmless; unknown long ones ask.
            if t.starts_with("--")
                && !matches!(
                    t,
                    "--posix" | "--sandbox" | "--traditional" | "--lint" | "--characters-as-bytes"
                )
            {
                w.add(
                    Decision::Ask,
                    "unknown_option",
                    sub,
                    format!("`{name}` has an option `{t}` this analyzer does not know"),
                );
            }
            continue;
        };
        let value = match attached {
            Some(v) => Some(Decoded {
                text: v.to_owned(),
                ..a.clone()
            }),
            None => {
                i += 1;
                args.get(i - 1).cloned()
            }
        };
        match *valued {
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" => {
                if let Some(v) = &value {
                    w.path(v, PathAccess::Read, sub, "awk program file");
                }
                w.add(
                    Decision::Ask,
                    "awk_program_file",
                    sub,
                    format!("`{name}` runs a program from a file, which cannot be reviewed here"),
                );
                program = Some(Decoded::default());
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
            "-e" | "--source" => program = value,
            _ => {}
        }
    }
    let Some(program) = program else {
        w.add(
            Decision::Ask,
            "awk_program",
            sub,
            format!("`{name}` without a program"),
        );
        return;
    };
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

/// Looks through an awk program for commands and output files.
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
    let mut in_print = false;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
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
            }
            b';' | b'}' | b'{' | b'\n' => in_print = false,
            b'|' if b.get(i + 1) != Some(&b'|') => {
                // `print | "cmd"`, `"cmd" | getline`: the string next to the pipe is a command.
                let after = literal_at(prog, i + 1);
                let before = strings.iter().rev().find(|(_, end)| {
                    *end <= i && prog.get(*end..i).is_some_and(|g| g.trim().is_empty())
                });
                match after.or_else(|| before.map(|(s, _)| s.clone())) {
                    Some(cmd) => w.script(&cmd, StdinKind::Dynamic),
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
                continue;
            }
            b'<' if prog
                .get(..i)
                .is_some_and(|p| p.trim_end().ends_with("getline")) =>
            {
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
            }
            _ if c.is_ascii_alphabetic() => {
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|q| q.is_ascii_alphanumeric() || *q == b'_')
                {
                    i += 1;
                }
                let word = prog.get(start..i).unwrap_or("");
                match word {
                    "print" | "printf" => in_print = true,
                    "system" => match literal_at(prog, i).or_else(|| literal_at(prog, i + 1)) {
                        Some(cmd) if prog.get(i..).is_some_and(|r| {
                            let r = r.trim_start().trim_start_matches('(').trim_start();
                            r.starts_with('"') && r.get(1..).and_then(|x| x.find('"')).is_some_and(|e| {
                                r.get(e + 2..).is_some_and(|after| after.trim_start().starts_with(')'))
                            })
                        }) => w.script(&cmd, StdinKind::Terminal),
                        _ => w.add(Decision::Ask, "awk_system", sub, format!("the `{name}` program runs a command built at run time with system()")),
                    },
                    _ => {}
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
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
