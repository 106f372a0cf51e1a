//! A conservative scanner for sed scripts: finds the commands that run shell code (`e`,
//! `s///e`) or touch files (`w`, `W`, `r`, `R`, `s///w`). Anything it does not understand is
//! an error, so the caller asks instead of allowing.

/// What a sed script does beyond printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    pub exec: bool,
    pub writes: Vec<String>,
    pub reads: Vec<String>,
}

pub(crate) fn scan(script: &str) -> Result<Effects, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut fx = Effects::default();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    let rest_of_line = |i: &mut usize| -> String {
        while at(*i).is_some_and(|c| c == ' ' || c == '\t') {
            *i += 1;
        }
        let mut s = String::new();
        while let Some(c) = at(*i) {
            if c == '\n' {
                break;
            }
            s.push(c);
            *i += 1;
        }
        s
    };
    // Skips a delimited part (`/re/`, `s` parts); returns false when unterminated.
    let delimited = |i: &mut usize, d: char| -> bool {
        while let Some(c) = at(*i) {
            *i += 1;
            if c == '\\' {
                *i += 1;
            } else if c == d {
                return true;
            }
        }
        false
    };
    loop {
        while at(i).is_some_and(|c| c.is_whitespace() || c == ';') {
            i += 1;
        }
        if at(i).is_none() {
            break;
        }
        // Addresses.
        for _ in 0..2 {
            loop {
                match at(i) {
                    Some(d) if d.is_ascii_digit() || d == '$' || d == '~' || d == '+' => i += 1,
                    Some('/') => {
                        i += 1;
                        if !delimited(&mut i, '/') {
                            return Err("unterminated address".into());
                        }
                        while at(i).is_some_and(|c| c == 'I' || c == 'M') {
                            i += 1;
                        }
                    }
                    Some('\\') => {
                        let d = at(i + 1).ok_or("bad address")?;
                        i += 2;
                        if !delimited(&mut i, d) {
                            return Err("unterminated address".into());
                        }
                    }
                    _ => break,
                }
            }
            if at(i) == Some(',') {
                i += 1;
            } else {
                break;
            }
        }
        while at(i).is_some_and(|c| c == ' ' || c == '!') {
            i += 1;
        }
        let c = match at(i) {
            Some(c) => c,
            None => return Err("address without command".into()),
        };
        i += 1;
        match c {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' | 'l' => {}
            'q' | 'Q' | 'L' => {
                while at(i).is_some_and(|c| c.is_ascii_digit() || c == ' ') {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while at(i).is_some_and(|c| c != ';' && c != '\n' && c != '}') {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                rest_of_line(&mut i);
            }
            'e' => fx.exec = true,
            'w' | 'W' => fx.writes.push(rest_of_line(&mut i)),
            'r' | 'R' => fx.reads.push(rest_of_line(&mut i)),
            's' | 'y' => {
                let d = at(i).ok_or("`s` without delimiter")?;
                if d == '\n' || d == '\\' {
                    return Err("bad delimiter".into());
                }
                i += 1;
                if !delimited(&mut i, d) || !delimited(&mut i, d) {
                    return Err(format!("unterminated `{c}` command"));
                }
                if c == 's' {
                    while let Some(f) = at(i) {
                        match f {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                            'e' => {
                                fx.exec = true;
                                i += 1;
                            }
                            'w' => {
                                i += 1;
                                fx.writes.push(rest_of_line(&mut i));
                            }
                            _ => break,
                        }
                    }
                }
            }
            '#' => {
                rest_of_line(&mut i);
            }
            other => return Err(format!("unknown sed command `{other}`")),
        }
    }
    Ok(fx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exec_and_files() {
        assert!(scan("s/a/b/e").unwrap().exec);
        assert!(scan("1e id").unwrap().exec);
        assert_eq!(scan("s/a/b/w out.txt").unwrap().writes, ["out.txt"]);
        assert_eq!(scan("/x/r /etc/passwd").unwrap().reads, ["/etc/passwd"]);
        assert_eq!(scan("s/a/b/g; 2,5p").unwrap(), Effects::default());
        assert!(scan("s/a/b").is_err());
        assert_eq!(scan("s|/usr|/opt|g").unwrap(), Effects::default());
    }
}
