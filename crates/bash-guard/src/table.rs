//! The command table (`commands.toml`, compiled in and parsed once) and the one option
//! interpreter that applies it with GNU `getopt_long` semantics: clusters (`-abc`), attached
//! and separate values (`-oFILE`, `-o FILE`), `--opt=value`, unambiguous long abbreviations,
//! `--` ending options, options after operands (permutation), and `-NUM` where allowed.
//!
//! Architecture Invariant: command knowledge lives in `commands.toml`; this module knows the
//! format, not the commands.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::words::Decoded;

/// How many values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arity {
    Flag,
    Required,
    /// Only given attached (`--color=always`).
    Optional,
    Two,
}

/// What an option's value, or the option itself, does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
    pub file_list: bool,
    pub long_running: bool,
    pub pattern: bool,
    pub ask: bool,
    /// `T`: the value is the directory written into; every operand is then a source.
    pub target_dir: bool,
    /// `K`: the option removes a safety net against destroying the system (deny).
    pub destroys: bool,
    /// `Y`: the command works recursively.
    pub recursive: bool,
    /// `N`: the option reaches the network.
    pub network: bool,
    /// `O`: the option keeps a network subcommand local (`git remote show -n`).
    pub offline: bool,
    /// `S`: the value is `key=value` configuration, judged against the spec's `exec_config`.
    pub config: bool,
    /// `C`: the value is a directory the command works in (read; later relative paths are
    /// resolved there).
    pub chdir: bool,
    /// `M`: the flag selects a mode (`tar -x`): the spec's `modes` entry under its long name
    /// sets the class, the operands' roles and the archive's access.
    pub mode: bool,
    /// `V`: the value is the archive, read or written as the mode says (`tar -f FILE`).
    pub archive: bool,
    /// `Q`: prompts on a terminal, which the agent does not have (`find -ok`).
    pub prompts: bool,
    /// `I`: edits the operands in place (`sed -i[SUFFIX]`): every operand is written.
    pub in_place: bool,
    /// `Z`: the option changes the system itself (`date --set`): denied.
    pub system: bool,
    /// `D`: the value is data that names a file to read when it says so (`curl -d @FILE`,
    /// `-F name=@FILE` or `name=<FILE`, `--data-urlencode name@FILE`).
    pub data_file: bool,
    /// `B`: the option selects the batch or query form a `fallback` entry claims (`top -b`).
    pub batch: bool,
    /// `E`: the value may be `KIND=PATH`; only the part after the first `=` is the path the
    /// option's R or W speak of (`rustc --print cfg=out.txt`), and only when there is one.
    pub kind_path: bool,
}

impl Effects {
    /// Whether the option does anything a review must see.
    pub(crate) fn any(&self) -> bool {
        *self != Effects::default()
            && *self
                != Effects {
                    pattern: true,
                    ..Effects::default()
                }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OptSpec {
    pub short: Option<char>,
    pub long: Option<String>,
    pub arity: Arity,
    pub effects: Effects,
}

impl OptSpec {
    /// The key of the mode an `M` option selects: its long name, else its letter (`unzip -l`).
    pub(crate) fn mode_name(&self) -> Option<String> {
        self.long
            .clone()
            .or_else(|| self.short.map(|c| c.to_string()))
    }

    /// How the option is written, for messages.
    pub(crate) fn display(&self) -> String {
        self.shown().to_string()
    }

    /// As [`OptSpec::display`], written only where a message uses it (every option given
    /// passes through the judgement, few make a message).
    pub(crate) fn shown(&self) -> impl std::fmt::Display + '_ {
        struct Shown<'a>(&'a OptSpec);
        impl std::fmt::Display for Shown<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match (&self.0.long, self.0.short) {
                    (Some(l), _) => write!(f, "--{l}"),
                    (None, Some(s)) => write!(f, "-{s}"),
                    (None, None) => Ok(()),
                }
            }
        }
        Shown(self)
    }
}

/// What a command's operands are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operands {
    Read,
    PatternRead,
    ReadWriteLast,
    /// Operands are data (numbers, strings), not paths.
    Data,
    /// Every operand is written (created, changed or removed).
    Write,
    /// The first operand is written, the rest are data (`mknod NAME TYPE MAJOR MINOR`).
    WriteFirst,
    /// The first operand is data (a mode, an owner) unless a `P` option gave it; the rest
    /// are written.
    DataFirstWrite,
    /// The last of two or more operands is the destination (written), the others are
    /// sources (read); with a `T` option every operand is a source.
    Copy,
    /// The first operand is read, the second is an output prefix (written).
    ReadPrefix,
    /// The first operand is read, the rest are data (`csplit FILE PATTERN...`).
    ReadFirst,
    /// Operands are `key=value` roles listed in `keys` (`dd if=IN of=OUT`).
    Keys,
    /// Operands are names a write class creates (`git branch NAME`): with none, or when a
    /// `P` option makes them patterns (`git tag -l 'v*'`), the command only reads.
    Names,
    /// After `lead` data operands, the operands are a command line the program runs
    /// (`timeout 5 CMD ARGS`, `nice CMD`): judged as that command.
    Command,
}

/// What the command is when its options and operands add nothing: the decision class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Only reads: allowed when every path it reads is allowed.
    Read,
    /// Changes files: asks (and every path written is judged).
    Write,
    /// Never run by the agent.
    Deny,
    /// Reaches the network (`git push`): the network policy decides.
    Network,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandSpec {
    pub operands: Operands,
    pub numeric: bool,
    pub opts: Vec<OptSpec>,
    pub class: Class,
    /// Why, for messages ("changes files", "the agent cannot approve its own calls").
    pub reason: Option<String>,
    /// `key=value` operands and the effect of each value (`Keys` operands).
    pub keys: Vec<(String, Effects)>,
    /// `"recursive"`: a recursive run on the system, the home or the project, or on a
    /// target only known at run time, is denied; `"always"`: the same without recursion.
    pub destroys: Option<Destroys>,
    /// An operand `host:path` or `scheme://...` reaches the network.
    pub remote: bool,
    /// The output written when no operand or option names one (`split` writes `xaa`...).
    pub default_out: Option<String>,
    /// Options may follow operands (GNU); false: the first operand ends the options (git's
    /// global options, a command with subcommands).
    pub permute: bool,
    /// Subcommands: the first operand picks one, the rest are its arguments.
    pub subs: HashMap<String, CommandSpec>,
    /// Configuration keys (`-c key=value`) that make the command run a program: `alias.*`
    /// (prefix), `*.textconv` (suffix), or an exact key; lower case.
    pub exec_config: Vec<String>,
    /// `--no-NAME` negates a known long option (git's parse-options), with no effect.
    pub negations: bool,
    /// The first argument may be a dash-less bundle of letters whose values follow in order
    /// (`tar xzf FILE`, `tar cfC FILE DIR`).
    pub bundled: bool,
    /// What each mode (an `M` option, by long name) makes the command.
    pub modes: HashMap<String, Mode>,
    /// An expression grammar after the operands (`find`): its primaries.
    pub primaries: Vec<Primary>,
    /// With `pos = "command"`: how many data operands come before the command.
    pub lead: usize,
    /// Effects of running the command at all, whatever its options (`nohup`: L).
    pub whole: Effects,
    /// The command is also on one of classify.rs's lists; the table decides only the forms
    /// [`claims`] finds (a listed subcommand, a `B` option).
    pub fallback: bool,
    /// Options are long names after one dash (`go list -json`, `ip -br a`).
    pub dash_long: bool,
    /// An operand `@FILE` is a file of more arguments (binutils, gcc): read through this
    /// option, whose effects make the file judged and the command ask.
    pub response: Option<OptSpec>,
}

/// One primary of an expression grammar (`find -newer FILE`, `find -exec CMD ;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Primary {
    /// The name without its dash; a trailing `*` makes it a prefix (`newer*`: `-newermt`).
    pub name: String,
    pub arity: PrimaryArity,
    /// The effect on the first value (R, W), or on the command (X runs the values as a
    /// command, W without values writes the start points, Q prompts, A asks).
    pub effects: Effects,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrimaryArity {
    /// A fixed number of values.
    Values(usize),
    /// Values up to a `;` or `+` word (`-exec ... ;`).
    UntilTerminator,
}

/// One mode of a moded command (`tar --extract`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mode {
    pub class: Class,
    pub operands: Operands,
    /// How the archive (`V` option value) is accessed.
    pub archive: PathAccessKind,
    /// Written when the mode writes where the command works (extraction: `.`).
    pub default_out: Option<String>,
    /// The mode reads its operands as whole trees (`tar -c DIR` archives every file below).
    pub recursive: bool,
}

/// An access named in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathAccessKind {
    Read,
    Write,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMode {
    class: String,
    pos: String,
    archive: String,
    #[serde(default)]
    default_out: Option<String>,
    #[serde(default)]
    recursive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Destroys {
    Recursive,
    Always,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommand {
    pos: String,
    #[serde(default)]
    numeric: bool,
    opts: Vec<String>,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    destroys: Option<String>,
    #[serde(default)]
    remote: bool,
    #[serde(default)]
    default_out: Option<String>,
    #[serde(default)]
    permute: Option<bool>,
    #[serde(default)]
    sub: HashMap<String, RawCommand>,
    #[serde(default)]
    exec_config: Vec<String>,
    #[serde(default)]
    negations: bool,
    #[serde(default)]
    bundled: bool,
    #[serde(default)]
    modes: HashMap<String, RawMode>,
    #[serde(default)]
    primaries: Vec<String>,
    #[serde(default)]
    lead: usize,
    #[serde(default)]
    effects: String,
    #[serde(default)]
    fallback: bool,
    #[serde(default)]
    dash_long: bool,
    #[serde(default)]
    response_files: bool,
}

/// Parses effect letters.
fn parse_effects(spec: &str, text: &str) -> Result<Effects, String> {
    let mut effects = Effects::default();
    for c in text.chars() {
        match c {
            'R' => effects.read = true,
            'W' => effects.write = true,
            'X' => effects.exec = true,
            'F' => effects.file_list = true,
            'L' => effects.long_running = true,
            'P' => effects.pattern = true,
            'A' => effects.ask = true,
            'T' => effects.target_dir = true,
            'K' => effects.destroys = true,
            'Y' => effects.recursive = true,
            'N' => effects.network = true,
            'O' => effects.offline = true,
            'S' => effects.config = true,
            'C' => effects.chdir = true,
            'M' => effects.mode = true,
            'V' => effects.archive = true,
            'Q' => effects.prompts = true,
            'I' => effects.in_place = true,
            'Z' => effects.system = true,
            'D' => effects.data_file = true,
            'B' => effects.batch = true,
            'E' => effects.kind_path = true,
            other => return Err(format!("`{spec}`: unknown effect `{other}`")),
        }
    }
    Ok(effects)
}

/// The file a `D` value names, if it names one: `@FILE`, `NAME=@FILE`, `NAME=<FILE`, and
/// `NAME@FILE` when no `=` comes before the `@` (curl's `--data-urlencode` forms; a plain `-d`
/// `a@b` is read as naming `b`, which only ever judges one more path).
pub(crate) fn data_file(value: &str) -> Option<&str> {
    if let Some(file) = value.strip_prefix('@') {
        return Some(file);
    }
    if let Some(i) = value.find("=@").or_else(|| value.find("=<")) {
        return value.get(i + 2..);
    }
    let at = value.find('@')?;
    (!value.get(..at)?.contains('=')).then(|| value.get(at + 1..))?
}

/// Parses one option spec: `"s|long<arity><effects>"`.
pub(crate) fn parse_opt(spec: &str) -> Result<OptSpec, String> {
    let cut = spec.find(['=', '?', '!']).unwrap_or(spec.len());
    let (names, rest) = spec.split_at(cut);
    let (short_part, long_part) = match names.split_once('|') {
        Some((s, l)) => (s, Some(l)),
        None => (names, None),
    };
    let mut short_chars = short_part.chars();
    let short = short_chars.next();
    if short_chars.next().is_some() {
        return Err(format!("`{spec}`: a short option is one character"));
    }
    let long = long_part.filter(|l| !l.is_empty()).map(str::to_owned);
    if short.is_none() && long.is_none() {
        return Err(format!("`{spec}`: no option name"));
    }
    let (arity, effects_text) = if let Some(r) = rest.strip_prefix("=2") {
        (Arity::Two, r)
    } else if let Some(r) = rest.strip_prefix('=') {
        (Arity::Required, r)
    } else if let Some(r) = rest.strip_prefix('?') {
        (Arity::Optional, r)
    } else {
        (Arity::Flag, rest.strip_prefix('!').unwrap_or(rest))
    };
    let effects = parse_effects(spec, effects_text)?;
    Ok(OptSpec {
        short,
        long,
        arity,
        effects,
    })
}

/// Parses one primary: `"name=ARITY EFFECTS"`, ARITY a count or `;` (up to `;`/`+`).
fn parse_primary(spec: &str) -> Result<Primary, String> {
    let (name, rest) = spec.split_once('=').unwrap_or((spec, "0"));
    if name.is_empty() {
        return Err(format!("`{spec}`: no primary name"));
    }
    let (arity, effects) = if let Some(e) = rest.strip_prefix(';') {
        (PrimaryArity::UntilTerminator, e)
    } else {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (n, e) = rest.split_at(digits);
        let n = n
            .parse::<usize>()
            .map_err(|_| format!("`{spec}`: the arity is a number or `;`"))?;
        (PrimaryArity::Values(n), e)
    };
    Ok(Primary {
        name: name.to_owned(),
        arity,
        effects: parse_effects(spec, effects)?,
    })
}

/// An expression read against a spec's primaries.
#[derive(Debug, Default)]
pub(crate) struct Expression<'a> {
    /// Options before the start points (`find -L -O2`).
    pub opts: Vec<Given<'a>>,
    /// The words before the expression (`find` start points).
    pub operands: Vec<Decoded>,
    /// Each primary with its values, in order.
    pub primaries: Vec<(&'a Primary, Vec<Decoded>)>,
    /// Primaries or options the table does not know, as written.
    pub unknown: Vec<String>,
    /// A primary whose values ran out (`-exec` without `;`), as written.
    pub unterminated: Vec<String>,
}

/// Words that combine primaries rather than being one.
const OPERATORS: &[&str] = &["(", ")", "!", "-not", "-a", "-and", "-o", "-or", ","];

/// Reads `find`-style arguments: options, then operands up to the first word that starts
/// an expression (`-x`, `(`, `!`), then primaries with the arities the table gives them.
pub(crate) fn interpret_expression<'a>(spec: &'a CommandSpec, args: &[Decoded]) -> Expression<'a> {
    let mut e = Expression::default();
    let mut i = 0;
    // Leading options: only those the table lists (-H -L -P -D LIST -OLEVEL).
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty() && !a.dynamic) else {
            break;
        };
        let mut chars = cluster.chars();
        let Some(o) = chars
            .next()
            .and_then(|c| spec.opts.iter().find(|o| o.short == Some(c)))
        else {
            break;
        };
        let rest = chars.as_str();
        i += 1;
        let mut values = Vec::new();
        match o.arity {
            Arity::Flag if !rest.is_empty() => {
                e.unknown.push(t.to_owned());
            }
            Arity::Flag => {}
            _ if !rest.is_empty() => values.push(Decoded {
                text: rest.to_owned(),
                ..a.clone()
            }),
            _ => {
                if let Some(v) = args.get(i) {
                    values.push(v.clone());
                    i += 1;
                }
            }
        }
        e.opts.push(Given { spec: o, values });
    }
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if !a.dynamic && (t.starts_with('-') && t.len() > 1 || t == "(" || t == "!") {
            break;
        }
        e.operands.push(a.clone());
        i += 1;
    }
    while let Some(a) = args.get(i) {
        i += 1;
        let t = a.text.as_str();
        if !a.dynamic && OPERATORS.contains(&t) {
            continue;
        }
        let name = t.strip_prefix('-').filter(|_| !a.dynamic).unwrap_or("");
        let Some(p) = spec
            .primaries
            .iter()
            .find(|p| match p.name.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix) && name.len() > prefix.len(),
                None => p.name == name,
            })
        else {
            e.unknown.push(if a.dynamic {
                "(a word only known at run time)".to_owned()
            } else {
                t.to_owned()
            });
            continue;
        };
        let mut values = Vec::new();
        match p.arity {
            PrimaryArity::Values(n) => {
                for _ in 0..n {
                    match args.get(i) {
                        Some(v) => {
                            values.push(v.clone());
                            i += 1;
                        }
                        None => e.unterminated.push(t.to_owned()),
                    }
                }
            }
            PrimaryArity::UntilTerminator => {
                let mut ended = false;
                while let Some(v) = args.get(i) {
                    i += 1;
                    if !v.dynamic && (v.text == ";" || v.text == "+") {
                        ended = true;
                        break;
                    }
                    values.push(v.clone());
                }
                if !ended {
                    e.unterminated.push(t.to_owned());
                }
            }
        }
        e.primaries.push((p, values));
    }
    e
}

/// `src/commands.toml` cut into one document per command by build.rs, sorted by name.
mod generated {
    include!(concat!(env!("OUT_DIR"), "/commands.rs"));
}

/// The table's `[classes]`: the name lists that give a command without an entry its class.
/// [`of`](classes::of) gives every class of a name at once, as bits (`PURE_BIT` ...).
pub(crate) mod classes {
    #[cfg(test)]
    pub(crate) use super::generated::{
        BUILD, INTERACTIVE, INTERPRETERS, NETWORK, PRIVILEGE, PURE, READERS, SHELLS, SYSTEM,
        WRITERS,
    };
    pub(crate) use super::generated::{
        BUILD_BIT, INTERACTIVE_BIT, INTERPRETERS_BIT, NETWORK_BIT, PRIVILEGE_BIT, PURE_BIT,
        READERS_BIT, SHELLS_BIT, SYSTEM_BIT, WRITERS_BIT,
    };

    /// The classes `name` is listed in, one bit each; 0 for a name in no list.
    pub(crate) fn of(name: &str) -> u16 {
        super::bucket_search(
            super::generated::CLASS_OF,
            &super::generated::CLASS_OF_BUCKETS,
            name,
        )
        .and_then(|i| super::generated::CLASS_OF.get(i))
        .map_or(0, |(_, bits)| *bits)
    }
}

/// Where `key` is in `list` (sorted bytewise by name, `buckets` its first-byte starts as
/// build.rs writes them): a binary search of the names that share its first byte. Every
/// simple command looks its name up, so this avoids the dozen `memcmp` calls of a search of
/// the whole list.
fn bucket_search<T>(list: &[(&str, T)], buckets: &[u16; 257], key: &str) -> Option<usize> {
    let first = usize::from(*key.as_bytes().first()?);
    let start = usize::from(*buckets.get(first)?);
    let end = usize::from(*buckets.get(first + 1)?);
    let bucket = list.get(start..end)?;
    bucket
        .binary_search_by(|(name, _)| bytewise(name.as_bytes(), key.as_bytes()))
        .ok()
        .map(|i| start + i)
}

/// `a.cmp(b)` for short names, in line (the names are a few bytes: a `memcmp` call costs more
/// than the comparison).
fn bytewise(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// Reads the `groups` table: option lists that a command includes with `"@name"` in its `opts`.
fn parse_groups(raw: Option<toml::Value>) -> Result<HashMap<String, Vec<String>>, String> {
    match raw {
        Some(g) => g.try_into().map_err(|e: toml::de::Error| e.to_string()),
        None => Ok(HashMap::new()),
    }
}

fn parse_command(
    name: &str,
    value: toml::Value,
    groups: &HashMap<String, Vec<String>>,
) -> Result<CommandSpec, String> {
    let r: RawCommand = value
        .try_into()
        .map_err(|e: toml::de::Error| format!("`{name}`: {e}"))?;
    parse_spec(name, r, groups)
}

/// Parses a whole table text (the `groups` table and every command).
pub(crate) fn parse_table(text: &str) -> Result<HashMap<String, CommandSpec>, String> {
    let mut raw: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let groups = parse_groups(raw.remove("groups"))?;
    // Name lists, not commands (build.rs compiles them into `classes`).
    raw.remove("classes");
    let mut out = HashMap::new();
    for (name, value) in raw {
        let spec = parse_command(&name, value, &groups)?;
        out.insert(name, spec);
    }
    Ok(out)
}

fn parse_pos(name: &str, pos: &str) -> Result<Operands, String> {
    Ok(match pos {
        "read" => Operands::Read,
        "pattern-read" => Operands::PatternRead,
        "read-write-last" => Operands::ReadWriteLast,
        "data" => Operands::Data,
        "write" => Operands::Write,
        "write-first" => Operands::WriteFirst,
        "data-first-write" => Operands::DataFirstWrite,
        "copy" => Operands::Copy,
        "read-prefix" => Operands::ReadPrefix,
        "read-first" => Operands::ReadFirst,
        "keys" => Operands::Keys,
        "names" => Operands::Names,
        "command" => Operands::Command,
        other => return Err(format!("`{name}`: unknown pos `{other}`")),
    })
}

fn parse_class(name: &str, class: Option<&str>) -> Result<Class, String> {
    Ok(match class {
        None | Some("read") => Class::Read,
        Some("write") => Class::Write,
        Some("deny") => Class::Deny,
        Some("network") => Class::Network,
        Some(other) => return Err(format!("`{name}`: unknown class `{other}`")),
    })
}

fn parse_spec(
    name: &str,
    r: RawCommand,
    groups: &HashMap<String, Vec<String>>,
) -> Result<CommandSpec, String> {
    let operands = parse_pos(name, &r.pos)?;
    let class = parse_class(name, r.class.as_deref())?;
    if operands == Operands::Command && r.permute != Some(false) {
        return Err(format!(
            "`{name}`: pos = \"command\" needs permute = false (the command's options are its own)"
        ));
    }
    let whole = parse_effects(name, &r.effects).map_err(|e| format!("`{name}`: {e}"))?;
    let destroys = match r.destroys.as_deref() {
        None => None,
        Some("recursive") => Some(Destroys::Recursive),
        Some("always") => Some(Destroys::Always),
        Some(other) => return Err(format!("`{name}`: unknown destroys `{other}`")),
    };
    let keys = r
        .keys
        .iter()
        .map(|k| {
            let (key, eff) = k.split_once('=').unwrap_or((k.as_str(), ""));
            parse_effects(k, eff)
                .map(|e| (key.to_owned(), e))
                .map_err(|e| format!("`{name}`: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if (operands == Operands::Keys) == keys.is_empty() {
        return Err(format!(
            "`{name}`: `keys` goes with pos = \"keys\" and only with it"
        ));
    }
    let mut opts = Vec::new();
    for o in &r.opts {
        // `@name` includes a group; `@|long` is an option whose short letter is `@` (rsync).
        if let Some(g) = o
            .strip_prefix('@')
            .filter(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        {
            let list = groups
                .get(g)
                .ok_or_else(|| format!("`{name}`: no option group `{g}`"))?;
            for o in list {
                opts.push(parse_opt(o).map_err(|e| format!("`{name}` (@{g}): {e}"))?);
            }
        } else {
            opts.push(parse_opt(o).map_err(|e| format!("`{name}`: {e}"))?);
        }
    }
    let mut modes = HashMap::new();
    for (mode, m) in r.modes {
        let archive = match m.archive.as_str() {
            "read" => PathAccessKind::Read,
            "write" => PathAccessKind::Write,
            other => return Err(format!("`{name}` mode `{mode}`: unknown archive `{other}`")),
        };
        if !opts
            .iter()
            .any(|o| o.effects.mode && o.mode_name().as_deref() == Some(mode.as_str()))
        {
            return Err(format!("`{name}`: mode `{mode}` has no M option"));
        }
        modes.insert(
            mode.clone(),
            Mode {
                class: parse_class(&format!("{name} {mode}"), Some(&m.class))?,
                operands: parse_pos(&format!("{name} {mode}"), &m.pos)?,
                archive,
                default_out: m.default_out,
                recursive: m.recursive,
            },
        );
    }
    let mut subs = HashMap::new();
    for (sub, raw) in r.sub {
        let mut spec = parse_spec(&format!("{name} {sub}"), raw, groups)?;
        // A subcommand that sets configuration (`git config KEY VALUE`, `git config set`)
        // knows the same keys that run programs as its command's `-c`.
        inherit_exec_config(&mut spec, &r.exec_config);
        subs.insert(sub, spec);
    }
    Ok(CommandSpec {
        operands,
        numeric: r.numeric,
        opts,
        class,
        reason: r.reason,
        keys,
        destroys,
        remote: r.remote,
        default_out: r.default_out,
        permute: r.permute.unwrap_or(true),
        subs,
        exec_config: r.exec_config,
        negations: r.negations,
        bundled: r.bundled,
        modes,
        primaries: r
            .primaries
            .iter()
            .map(|p| parse_primary(p).map_err(|e| format!("`{name}`: {e}")))
            .collect::<Result<Vec<_>, _>>()?,
        lead: r.lead,
        whole,
        fallback: r.fallback,
        dash_long: r.dash_long,
        response: r.response_files.then(|| OptSpec {
            short: Some('@'),
            long: None,
            arity: Arity::Required,
            effects: Effects {
                read: true,
                file_list: true,
                ..Effects::default()
            },
        }),
    })
}

/// Whether the table decides this use of a `fallback` command (always, for any other): a
/// subcommand it lists (and that subcommand claims the rest), or a `B` option; with neither
/// option nor operand, a reading entry that has no `B` option (`terraform state`).
pub(crate) fn claims(spec: &CommandSpec, args: &[Decoded]) -> bool {
    if !spec.fallback {
        return true;
    }
    let p = interpret(spec, args);
    if p.opts.iter().any(|g| g.spec.effects.batch) {
        return true;
    }
    match p.operands.split_first() {
        Some((first, rest)) if !first.dynamic => spec
            .subs
            .get(first.text.as_str())
            .is_some_and(|sub| claims(sub, rest)),
        Some(_) => false,
        // Bare: a command with subcommands prints its help or status (`timedatectl`); one
        // without needs its B option (`top` alone is interactive). An option the table does
        // not know leaves the command to its list (`mount -a`).
        None => {
            spec.class == Class::Read
                && p.unknown.is_empty()
                && (!spec.subs.is_empty() || !spec.opts.iter().any(|o| o.effects.batch))
        }
    }
}

/// The whole compiled table, for the tidy checks that list every entry; `None` if any entry
/// failed to parse (a test makes that impossible to ship). Lookups go through [`spec`], which
/// parses one command at a time.
pub(crate) fn table() -> Option<&'static HashMap<String, CommandSpec>> {
    static TABLE: OnceLock<Option<HashMap<String, CommandSpec>>> = OnceLock::new();
    TABLE
        .get_or_init(|| parse_table(include_str!("commands.toml")).ok())
        .as_ref()
}

/// The option groups, parsed once; `None` if they failed to (then every command using one is
/// unknown: ask).
fn groups() -> Option<&'static HashMap<String, Vec<String>>> {
    static GROUPS: OnceLock<Option<HashMap<String, Vec<String>>>> = OnceLock::new();
    GROUPS
        .get_or_init(|| {
            let raw: toml::Table = toml::from_str(generated::GROUPS).ok()?;
            parse_groups(Some(toml::Value::Table(raw))).ok()
        })
        .as_ref()
}

/// The spec of `name` (aliases share one: `egrep` is `grep`, `sha1sum` is `sha256sum` ...),
/// parsed the first time it is asked for. An entry that fails to parse is `None`, an unknown
/// command (ask); a test parses every entry, so none ships broken.
pub(crate) fn spec(name: &str) -> Option<&'static CommandSpec> {
    let key = match name {
        "egrep" | "fgrep" => "grep",
        "sha1sum" | "sha224sum" | "sha384sum" | "sha512sum" | "b2sum" | "shasum" | "cksum"
        | "sum" => "sha256sum",
        "base32" => "base64",
        "pip3" => "pip",
        "podman" => "docker",
        "dir" | "vdir" => "ls",
        // The compressed-file wrappers take their tool's options (zgrep passes them to grep).
        "zgrep" | "zegrep" | "zfgrep" | "bzgrep" | "bzegrep" | "bzfgrep" | "xzgrep" | "xzegrep"
        | "xzfgrep" | "lzgrep" | "lzegrep" | "lzfgrep" | "zstdgrep" => "grep",
        "zdiff" | "bzdiff" | "xzdiff" | "lzdiff" => "diff",
        "zcmp" | "bzcmp" | "xzcmp" | "lzcmp" => "cmp",
        "hd" => "hexdump",
        "lzma" => "xz",
        "unlzma" => "unxz",
        "lzcat" => "xzcat",
        "bunzip2" => "bzip2",
        "uncompress" => "gunzip",
        "unzstd" | "zstdmt" => "zstd",
        "pkgconf" => "pkg-config",
        "tomlq" | "xq-python" => "yq",
        // LLVM's binutils accept the GNU tools' options (an option only LLVM has asks).
        "llvm-readelf" => "readelf",
        "llvm-objdump" => "objdump",
        "llvm-nm" => "nm",
        "llvm-size" => "size",
        "llvm-strings" => "strings",
        "llvm-cxxfilt" => "c++filt",
        "llvm-addr2line" => "addr2line",
        other => other,
    };
    // Boxed: the slots are allocated for every command on the first lookup of a process, so
    // each is one pointer, not a whole spec; the table can grow without the start-up growing.
    static SPECS: OnceLock<Vec<OnceLock<Option<Box<CommandSpec>>>>> = OnceLock::new();
    let index = bucket_search(generated::COMMANDS, &generated::COMMANDS_BUCKETS, key)?;
    let (entry, text) = generated::COMMANDS.get(index)?;
    let specs = SPECS.get_or_init(|| {
        std::iter::repeat_with(OnceLock::new)
            .take(generated::COMMANDS.len())
            .collect()
    });
    specs
        .get(index)?
        .get_or_init(|| {
            let value = toml::Value::Table(toml::from_str(text).ok()?);
            parse_command(entry, value, groups()?).ok().map(Box::new)
        })
        .as_deref()
}

/// One option as the interpreter read it.
#[derive(Debug, Clone)]
pub(crate) struct Given<'a> {
    pub spec: &'a OptSpec,
    pub values: Vec<Decoded>,
}

/// An argument list read against a spec.
#[derive(Debug, Default)]
pub(crate) struct Parsed<'a> {
    pub opts: Vec<Given<'a>>,
    pub operands: Vec<Decoded>,
    /// Options the table does not know, or ambiguous abbreviations, as written.
    pub unknown: Vec<String>,
}

/// Reads `args` with GNU `getopt_long` semantics.
/// Gives `spec` and its subcommands, where they name none, the keys of `from`.
fn inherit_exec_config(spec: &mut CommandSpec, from: &[String]) {
    if from.is_empty() {
        return;
    }
    if spec.exec_config.is_empty() {
        spec.exec_config = from.to_vec();
    }
    let keys = spec.exec_config.clone();
    for sub in spec.subs.values_mut() {
        inherit_exec_config(sub, &keys);
    }
}

pub(crate) fn interpret<'a>(spec: &'a CommandSpec, args: &[Decoded]) -> Parsed<'a> {
    let mut p = Parsed::default();
    let mut i = 0;
    let mut only_operands = false;
    // `tar xzf FILE`: a first word without a dash is a bundle of short options; each letter
    // that takes a value takes the next word, in order.
    if spec.bundled
        && let Some(first) = args.first()
        && !first.dynamic
        && !first.text.starts_with('-')
    {
        i = 1;
        for c in first.text.chars() {
            let Some(o) = spec.opts.iter().find(|o| o.short == Some(c)) else {
                p.unknown.push(format!("-{c}"));
                continue;
            };
            let mut values = Vec::new();
            if matches!(o.arity, Arity::Required | Arity::Two)
                && let Some(v) = args.get(i)
            {
                values.push(v.clone());
                i += 1;
            }
            p.opts.push(Given { spec: o, values });
        }
    }
    while let Some(a) = args.get(i) {
        i += 1;
        let t = a.text.as_str();
        if let Some(resp) = &spec.response
            && !a.dynamic
            && let Some(file) = t.strip_prefix('@')
        {
            let values = vec![Decoded {
                text: file.to_owned(),
                ..a.clone()
            }];
            p.opts.push(Given { spec: resp, values });
            continue;
        }
        if only_operands || a.dynamic || t == "-" || !t.starts_with('-') {
            p.operands.push(a.clone());
            // Without permutation (POSIX, git's `+` mode) the first operand ends the options.
            only_operands |= !spec.permute || !spec.subs.is_empty();
            continue;
        }
        if t == "--" {
            only_operands = true;
            continue;
        }
        // `-json`, `-chdir=DIR`: one dash before a long name where the spec says so.
        let long_body = t
            .strip_prefix("--")
            .or_else(|| t.strip_prefix('-').filter(|_| spec.dash_long));
        if let Some(body) = long_body {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let o = match find_long(spec, name) {
                Long::One(o) => o,
                Long::Negated => continue,
                Long::Unknown => {
                    p.unknown.push(t.to_owned());
                    continue;
                }
                Long::Ambiguous(candidates) => {
                    // The program refuses an ambiguous abbreviation, but a program of another
                    // version may know fewer options and read it as one of them: every
                    // candidate's effect counts, judged on an attached value.
                    p.unknown.push(t.to_owned());
                    for c in candidates.into_iter().filter(|c| c.effects.any()) {
                        let values = attached
                            .map(|v| {
                                vec![Decoded {
                                    text: v.to_owned(),
                                    ..a.clone()
                                }]
                            })
                            .unwrap_or_default();
                        if c.arity == Arity::Flag || !values.is_empty() {
                            p.opts.push(Given { spec: c, values });
                        }
                    }
                    continue;
                }
            };
            let mut values = Vec::new();
            match (o.arity, attached) {
                (Arity::Flag, Some(_)) => {
                    p.unknown.push(t.to_owned());
                    continue;
                }
                (Arity::Flag | Arity::Optional, None) => {}
                (_, Some(v)) => values.push(Decoded {
                    text: v.to_owned(),
                    ..a.clone()
                }),
                (Arity::Required | Arity::Two, None) => {
                    if let Some(v) = args.get(i) {
                        values.push(v.clone());
                        i += 1;
                    }
                }
            }
            if o.arity == Arity::Two
                && let Some(v) = args.get(i)
            {
                values.push(v.clone());
                i += 1;
            }
            p.opts.push(Given { spec: o, values });
            continue;
        }
        let cluster = t.get(1..).unwrap_or("");
        if spec.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for (k, c) in cluster.char_indices() {
            let Some(o) = spec.opts.iter().find(|o| o.short == Some(c)) else {
                p.unknown.push(format!("-{c}"));
                break;
            };
            let rest = cluster.get(k + c.len_utf8()..).unwrap_or("");
            match o.arity {
                Arity::Flag => p.opts.push(Given {
                    spec: o,
                    values: Vec::new(),
                }),
                Arity::Optional => {
                    let values = if rest.is_empty() {
                        Vec::new()
                    } else {
                        vec![Decoded {
                            text: rest.to_owned(),
                            ..a.clone()
                        }]
                    };
                    p.opts.push(Given { spec: o, values });
                    break;
                }
                Arity::Required | Arity::Two => {
                    let mut values = Vec::new();
                    if rest.is_empty() {
                        if let Some(v) = args.get(i) {
                            values.push(v.clone());
                            i += 1;
                        }
                    } else {
                        values.push(Decoded {
                            text: rest.to_owned(),
                            ..a.clone()
                        });
                    }
                    if o.arity == Arity::Two
                        && let Some(v) = args.get(i)
                    {
                        values.push(v.clone());
                        i += 1;
                    }
                    p.opts.push(Given { spec: o, values });
                    break;
                }
            }
        }
    }
    p
}

/// How a long option name resolves.
enum Long<'a> {
    One(&'a OptSpec),
    /// `--no-NAME` of a known option, where the spec allows negation: no effect.
    Negated,
    Ambiguous(Vec<&'a OptSpec>),
    Unknown,
}

/// An exact long name, else the one option it abbreviates.
fn find_long<'a>(spec: &'a CommandSpec, name: &str) -> Long<'a> {
    if name.is_empty() {
        return Long::Unknown;
    }
    if let Some(o) = spec.opts.iter().find(|o| o.long.as_deref() == Some(name)) {
        return Long::One(o);
    }
    let mut matches: Vec<&OptSpec> = spec
        .opts
        .iter()
        .filter(|o| o.long.as_deref().is_some_and(|l| l.starts_with(name)))
        .collect();
    matches.dedup_by(|a, b| a == b);
    // Several candidates are fine only if they are the same option spelled twice.
    if let Some(first) = matches.first().copied() {
        if matches.iter().all(|o| *o == first) {
            return Long::One(first);
        }
        return Long::Ambiguous(matches);
    }
    if spec.negations
        && let Some(rest) = name.strip_prefix("no-")
        && !matches!(find_long(spec, rest), Long::Unknown)
    {
        return Long::Negated;
    }
    Long::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Decoded> {
        s.split_whitespace()
            .map(|t| Decoded {
                text: t.to_owned(),
                ..Decoded::default()
            })
            .collect()
    }

    #[test]
    fn the_table_parses() {
        let t = parse_table(include_str!("commands.toml")).unwrap();
        assert!(t.len() >= 25);
        assert!(table().is_some());
    }

    #[test]
    fn every_entry_parses_alone_as_in_the_whole_table() {
        // `spec` reads build.rs's per-command documents; each must mean what the whole table
        // says, so a cut that lost a key or a sub-table shows here.
        let whole = table().unwrap();
        assert_eq!(generated::COMMANDS.len(), whole.len());
        for (name, _) in generated::COMMANDS {
            let alone = spec(name).unwrap_or_else(|| panic!("`{name}` does not parse alone"));
            let from_whole = whole.get(*name).unwrap();
            assert!(
                alone == from_whole,
                "`{name}` alone differs from the whole table"
            );
        }
        assert!(
            generated::COMMANDS
                .windows(2)
                .all(|pair| pair[0].0 < pair[1].0),
            "sorted for the binary search"
        );
        assert!(spec("no-such-command").is_none());
        // The bucketed search finds every entry, and nothing between them.
        for (name, _) in generated::COMMANDS {
            assert!(spec(name).is_some(), "{name}");
            assert!(spec(&format!("{name}~")).is_none(), "{name}~");
        }
        assert!(spec("").is_none() && spec("\u{ff}").is_none());
        assert!(spec("egrep").is_some_and(|g| std::ptr::eq(g, spec("grep").unwrap())));
    }

    #[test]
    fn the_class_lists_are_compiled_and_every_reader_has_an_entry() {
        use super::classes::*;
        for list in [
            BUILD,
            INTERACTIVE,
            INTERPRETERS,
            NETWORK,
            PRIVILEGE,
            PURE,
            READERS,
            SHELLS,
            SYSTEM,
            WRITERS,
        ] {
            assert!(!list.is_empty());
        }
        assert!(PURE.contains(&"echo") && SYSTEM.contains(&"mkfs"));
        // `of` agrees with the lists, name by name.
        let lists = [
            (BUILD, BUILD_BIT),
            (INTERACTIVE, INTERACTIVE_BIT),
            (INTERPRETERS, INTERPRETERS_BIT),
            (NETWORK, NETWORK_BIT),
            (PRIVILEGE, PRIVILEGE_BIT),
            (PURE, PURE_BIT),
            (READERS, READERS_BIT),
            (SHELLS, SHELLS_BIT),
            (SYSTEM, SYSTEM_BIT),
            (WRITERS, WRITERS_BIT),
        ];
        for (list, _) in lists {
            for name in list {
                for (other, bit) in lists {
                    assert_eq!(of(name) & bit != 0, other.contains(name), "{name}");
                }
            }
        }
        for name in ["", "no-such-command", "ech", "echoo", "~", "\u{e9}"] {
            assert_eq!(of(name), 0, "{name}");
        }
        // A reader is judged by its entry (options, operands); one without would only ask.
        for name in READERS {
            assert!(
                spec(name).is_some(),
                "the reader `{name}` has no table entry"
            );
        }
        assert!(!table().unwrap().contains_key("classes"));
    }

    #[test]
    fn a_lookup_slot_is_one_pointer() {
        // What the first lookup allocates per command, whatever the table's size.
        assert_eq!(
            std::mem::size_of::<OnceLock<Option<Box<CommandSpec>>>>(),
            std::mem::size_of::<usize>() * 2
        );
        println!(
            "an unboxed slot would be {} bytes",
            std::mem::size_of::<OnceLock<Option<CommandSpec>>>()
        );
    }

    #[test]
    fn data_values_name_files_as_curl_reads_them() {
        for (value, file) in [
            ("@body.json", Some("body.json")),
            ("f=@photo.png", Some("photo.png")),
            ("f=<notes.txt", Some("notes.txt")),
            ("name@list.txt", Some("list.txt")),
            ("q=a@b", None),
            ("a=b", None),
            ("plain", None),
        ] {
            assert_eq!(data_file(value), file, "{value}");
        }
    }

    #[test]
    fn option_specs_parse() {
        let o = parse_opt("o|output=W").unwrap();
        assert_eq!((o.short, o.long.as_deref()), (Some('o'), Some("output")));
        assert_eq!(o.arity, Arity::Required);
        assert!(o.effects.write);
        let f = parse_opt("F!L").unwrap();
        assert_eq!((f.short, f.arity), (Some('F'), Arity::Flag));
        assert!(f.effects.long_running);
        assert_eq!(parse_opt("|rawfile=2R").unwrap().arity, Arity::Two);
        assert!(parse_opt("|x=z").is_err());
    }

    #[test]
    fn writer_schema_parses_and_rejects_mistakes() {
        let dd = spec("dd").unwrap();
        assert_eq!((dd.operands, dd.class), (Operands::Keys, Class::Write));
        assert!(dd.keys.iter().any(|(k, e)| k == "of" && e.write));
        assert_eq!(spec("rm").unwrap().destroys, Some(Destroys::Recursive));
        let cp = spec("cp").unwrap();
        let p = interpret(cp, &words("-rt/etc a b"));
        let t: Vec<&str> = p
            .opts
            .iter()
            .filter(|g| g.spec.effects.target_dir)
            .flat_map(|g| g.values.iter().map(|v| v.text.as_str()))
            .collect();
        assert_eq!(t, ["/etc"]);
        assert_eq!(p.operands.len(), 2);
        assert!(parse_table("[x]\npos = \"keys\"\nopts = []\n").is_err());
        assert!(parse_table("[x]\npos = \"write\"\nclass = \"maybe\"\nopts = []\n").is_err());
        assert!(parse_table("[x]\npos = \"write\"\nkeys = [\"a=W\"]\nopts = []\n").is_err());
    }

    #[test]
    fn getopt_long_forms() {
        let sort = spec("sort").unwrap();
        for args in [
            "-o out.txt in",
            "-oout.txt in",
            "--output=out.txt in",
            "--output out.txt in",
            "--out=out.txt in",
            "-ro out.txt in",
            "in -o out.txt",
        ] {
            let p = interpret(sort, &words(args));
            let w: Vec<&str> = p
                .opts
                .iter()
                .filter(|g| g.spec.effects.write)
                .flat_map(|g| g.values.iter().map(|v| v.text.as_str()))
                .collect();
            assert_eq!(w, ["out.txt"], "{args}");
            assert_eq!(p.operands.len(), 1, "{args}");
            assert!(p.unknown.is_empty(), "{args}");
        }
        let p = interpret(sort, &words("-- -o x"));
        assert!(p.opts.is_empty());
        assert_eq!(p.operands.len(), 2);
        // `--s` abbreviates several options: ambiguous, hence unknown.
        assert_eq!(interpret(sort, &words("--s x")).unknown, ["--s"]);
        assert_eq!(interpret(sort, &words("-q x")).unknown, ["-q"]);
        assert!(
            interpret(spec("head").unwrap(), &words("-5 f"))
                .unknown
                .is_empty()
        );
    }
}
