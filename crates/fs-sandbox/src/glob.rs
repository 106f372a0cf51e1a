//! Glob confinement: patterns rooted inside the sandbox, walked with the sandbox's `read_dir`.

use std::path::{Component, Path, PathBuf};

use globset::GlobBuilder;

use crate::error::SandboxError;
use crate::open::EntryKind;
use crate::sandbox::{Op, Sandbox};

const META: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// What a confined glob found, and how many sensitive matches it left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GlobOutcome {
    /// The matches, base-joined (not resolved), sorted.
    pub paths: Vec<PathBuf>,
    /// Matches (or directories on the way) left out because they are sensitive.
    pub skipped_sensitive: usize,
}

impl Sandbox {
    /// [`glob_outcome`](Sandbox::glob_outcome)'s paths, for callers that do not report skips.
    pub fn glob(&self, pattern: &str, base: Option<&Path>) -> Result<Vec<PathBuf>, SandboxError> {
        self.glob_outcome(pattern, base)
            .map(|outcome| outcome.paths)
    }

    /// Finds the paths matching `pattern` (globset syntax, `*` does not cross `/`, `**` does).
    ///
    /// A relative pattern is rooted at `base` (default: the cwd); an absolute one at its literal
    /// prefix. The base must pass [`check`](Sandbox::check) for listing, a pattern may not hold a
    /// `..` component, and the walk never descends through a symlink: a symlinked entry is
    /// returned only when it matches and its target passes the check for reading. Matches are
    /// returned as base-joined paths (not resolved), sorted.
    ///
    /// Sensitive files and directories are left out and counted; a base or literal pattern that
    /// names one is refused with code `sensitive_path`.
    pub fn glob_outcome(
        &self,
        pattern: &str,
        base: Option<&Path>,
    ) -> Result<GlobOutcome, SandboxError> {
        if pattern.is_empty() {
            return Err(SandboxError::Empty);
        }
        let pattern_path = Path::new(pattern);
        if pattern_path.components().any(|c| c == Component::ParentDir) {
            return Err(SandboxError::GlobEscape {
                pattern: pattern.to_owned(),
            });
        }
        let mut literal = PathBuf::new();
        let mut rest = Vec::new();
        for component in pattern_path.components() {
            match component {
                Component::Normal(name)
                    if rest.is_empty() && !name.to_string_lossy().contains(META) =>
                {
                    literal.push(name);
                }
                Component::RootDir if rest.is_empty() => literal.push("/"),
                Component::CurDir => {}
                other => rest.push(other.as_os_str().to_string_lossy().into_owned()),
            }
        }
        let start = base.unwrap_or(self.cwd()).join(&literal);
        if rest.is_empty() {
            let checked = self.check(&start, Op::Read)?;
            return Ok(GlobOutcome {
                paths: if checked.exists() {
                    vec![start]
                } else {
                    Vec::new()
                },
                skipped_sensitive: 0,
            });
        }
        let rest = rest.join("/");
        let matcher = GlobBuilder::new(&rest)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|err| SandboxError::BadPattern {
                pattern: pattern.to_owned(),
                message: err.kind().to_string(),
            })?
            .compile_matcher();
        let max_depth = if rest.contains("**") {
            usize::MAX
        } else {
            rest.split('/').count()
        };
        let start_dir = self.check(&start, Op::List)?;
        let mut found = Vec::new();
        let mut skipped_sensitive = 0usize;
        let mut stack = vec![(start_dir.path().to_owned(), PathBuf::new(), 0usize)];
        while let Some((dir, relative, depth)) = stack.pop() {
            let Ok(entries) = self.read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let rel = relative.join(&entry.name);
                let logical = start.join(&rel);
                let wanted = matcher.is_match(&rel);
                if entry.kind != EntryKind::Symlink && self.sensitive(&entry.path).is_some() {
                    // Counted whether or not it matched: a sensitive directory on the way hides
                    // matches below it too.
                    if wanted || entry.kind == EntryKind::Dir {
                        skipped_sensitive += 1;
                    }
                    continue;
                }
                match entry.kind {
                    EntryKind::Symlink => {
                        if wanted {
                            match self.check(&entry.path, Op::Read) {
                                Ok(_) => found.push(logical),
                                Err(SandboxError::Sensitive { .. }) => skipped_sensitive += 1,
                                Err(_) => {}
                            }
                        }
                    }
                    EntryKind::Dir => {
                        if wanted {
                            found.push(logical);
                        }
                        if depth + 1 < max_depth {
                            stack.push((entry.path, rel, depth + 1));
                        }
                    }
                    EntryKind::File | EntryKind::Other => {
                        if wanted {
                            found.push(logical);
                        }
                    }
                }
            }
        }
        found.sort();
        Ok(GlobOutcome {
            paths: found,
            skipped_sensitive,
        })
    }
}
