//! Layout rules of the workspace, checked by `cargo xtask tidy` and by an ordinary `#[test]`.
//!
//! - Dependency direction (docs/architecture.md): the leaf layers depend on no sibling,
//!   `perm-hooks` only on `perm-rules`, nothing depends on the CLI.
//! - Every crate has a README that is its crate documentation, and inherits the workspace lints.
//! - One composition: only agent-core's `Guard::evaluate` (`src/compose.rs`) combines layers.
//!   No other source file of agent-core or of the CLI's deciding front ends resolves rule
//!   precedence, applies a mode, or runs bash-guard or the sandbox judge to reach a verdict.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};

/// Crates that must not depend on any sibling crate.
const LEAVES: &[&str] = &["perm-rules", "fs-sandbox", "bash-guard", "runtime-limits"];

/// Siblings each non-leaf crate may depend on. A crate missing here may depend on any sibling
/// except the CLI.
const ALLOWED: &[(&str, &[&str])] = &[("perm-hooks", &["perm-rules"])];

/// The binary crate: nothing may depend on it.
const CLI: &str = "agent-guard";

/// Calls that combine layers into a verdict; only [`COMPOSER`] may make them.
const COMPOSING: &[&str] = &[
    "resolve_permission_precedence(",
    ".apply_mode(",
    ".transform(",
    "Analyzer::new(",
    "SandboxJudge::new(",
    ".analyze(",
];
/// The one file that composes the layers.
const COMPOSER: &str = "crates/agent-core/src/compose.rs";
/// Files that may use those calls for something else: the tool that builds its analyzer and
/// judge (bash.rs); the CLI's
/// single-layer commands (`check`, `bash`, `path`, `exec`, `lint`) are not deciding front ends.
const COMPOSING_ALLOWED: &[&str] = &[
    "crates/agent-core/src/tools/bash.rs",
    "crates/agent-guard/src/cmd/check.rs",
    "crates/agent-guard/src/cmd/bash.rs",
    "crates/agent-guard/src/cmd/path.rs",
    "crates/agent-guard/src/cmd/exec.rs",
    "crates/agent-guard/src/cmd/lint.rs",
];

/// Source files under `dir` (recursively), as paths relative to `root`.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && let Ok(rel) = path.strip_prefix(root)
        {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The one-composition rule over agent-core's and the CLI's sources (tests excluded).
fn composition_problems(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for krate in ["agent-core", "agent-guard"] {
        rust_files(
            root,
            &root.join("crates").join(krate).join("src"),
            &mut files,
        );
    }
    let mut problems = Vec::new();
    for file in files {
        if file == COMPOSER || COMPOSING_ALLOWED.contains(&file.as_str()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue;
        };
        // Unit tests at the bottom of a file may build whatever they check.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for call in COMPOSING {
            if code.contains(call) {
                problems.push(format!(
                    "`{file}` calls `{call}`: only `{COMPOSER}` (Guard::evaluate) combines layers; decide through it"
                ));
            }
        }
    }
    problems
}

/// Checks every rule and reports all violations at once.
pub(crate) fn check(root: &Path) -> anyhow::Result<()> {
    let crates_dir = root.join("crates");
    let mut crates = BTreeMap::new();
    for entry in std::fs::read_dir(&crates_dir)
        .with_context(|| format!("cannot list `{}`", crates_dir.display()))?
    {
        let dir = entry?.path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)
            .with_context(|| format!("cannot read `{}`", manifest.display()))?;
        let doc: toml::Table = toml::from_str(&text)
            .with_context(|| format!("cannot parse `{}`", manifest.display()))?;
        let name = doc
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(toml::Value::as_str)
            .with_context(|| format!("`{}` has no package name", manifest.display()))?
            .to_owned();
        crates.insert(name, (dir, doc));
    }

    let mut problems = Vec::new();
    for (name, (dir, doc)) in &crates {
        let deps = sibling_deps(doc, &crates);
        for dep in &deps {
            if dep == CLI {
                problems.push(format!("`{name}` depends on the CLI crate `{CLI}`"));
            } else if LEAVES.contains(&name.as_str()) {
                problems.push(format!(
                    "leaf crate `{name}` depends on sibling `{dep}`: define a narrow trait instead"
                ));
            } else if let Some((_, allowed)) = ALLOWED.iter().find(|(n, _)| n == name)
                && !allowed.contains(&dep.as_str())
            {
                problems.push(format!("`{name}` may not depend on `{dep}`"));
            }
        }

        let lints_inherited = doc
            .get("lints")
            .and_then(|l| l.get("workspace"))
            .and_then(toml::Value::as_bool)
            == Some(true);
        if !lints_inherited {
            problems.push(format!("`{name}` lacks `[lints] workspace = true`"));
        }

        if !dir.join("README.md").is_file() {
            problems.push(format!("`{name}` has no README.md"));
        }
        let lib = dir.join("src").join("lib.rs");
        if lib.is_file() {
            let text = std::fs::read_to_string(&lib)?;
            if !text.contains("#![doc = include_str!(\"../README.md\")]") {
                problems.push(format!(
                    "`{name}`: src/lib.rs does not use README.md as its crate docs"
                ));
            }
        }
    }

    problems.extend(composition_problems(root));

    if problems.is_empty() {
        Ok(())
    } else {
        bail!(
            "tidy found {} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        )
    }
}

/// The sibling crates named in any dependency table (normal, dev, build).
fn sibling_deps<T>(doc: &toml::Table, crates: &BTreeMap<String, T>) -> Vec<String> {
    let mut out = Vec::new();
    for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(deps) = doc.get(table).and_then(toml::Value::as_table) {
            for key in deps.keys() {
                if crates.contains_key(key) && !out.contains(key) {
                    out.push(key.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_crate(root: &Path, name: &str, deps: &[&str], lints: bool, readme: bool) {
        let dir = root.join("crates").join(name);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let mut manifest = format!("[package]\nname = \"{name}\"\n\n[dependencies]\n");
        for dep in deps {
            manifest.push_str(&format!("{dep}.workspace = true\n"));
        }
        if lints {
            manifest.push_str("\n[lints]\nworkspace = true\n");
        }
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            "#![doc = include_str!(\"../README.md\")]\n",
        )
        .unwrap();
        if readme {
            std::fs::write(dir.join("README.md"), "# x\n").unwrap();
        }
    }

    #[test]
    fn this_workspace_is_tidy() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        check(root).unwrap();
    }

    #[test]
    fn a_good_layout_passes() {
        let tmp = tempfile::tempdir().unwrap();
        write_crate(tmp.path(), "perm-rules", &[], true, true);
        write_crate(tmp.path(), "perm-hooks", &["perm-rules"], true, true);
        write_crate(
            tmp.path(),
            "agent-core",
            &["perm-rules", "perm-hooks"],
            true,
            true,
        );
        check(tmp.path()).unwrap();
    }

    #[test]
    fn a_leaf_depending_on_a_sibling_fails() {
        let tmp = tempfile::tempdir().unwrap();
        write_crate(tmp.path(), "perm-rules", &[], true, true);
        write_crate(tmp.path(), "bash-guard", &["perm-rules"], true, true);
        let err = check(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("leaf crate `bash-guard` depends on sibling `perm-rules`"),
            "{err}"
        );
    }

    #[test]
    fn hooks_may_only_use_rules() {
        let tmp = tempfile::tempdir().unwrap();
        write_crate(tmp.path(), "perm-rules", &[], true, true);
        write_crate(tmp.path(), "fs-sandbox", &[], true, true);
        write_crate(
            tmp.path(),
            "perm-hooks",
            &["perm-rules", "fs-sandbox"],
            true,
            true,
        );
        let err = check(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("`perm-hooks` may not depend on `fs-sandbox`"),
            "{err}"
        );
    }

    #[test]
    fn missing_lints_and_readme_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        write_crate(tmp.path(), "runtime-limits", &[], false, false);
        let err = check(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("lacks `[lints] workspace = true`"), "{err}");
        assert!(err.contains("has no README.md"), "{err}");
    }

    #[test]
    fn a_front_end_composing_layers_fails() {
        let tmp = tempfile::tempdir().unwrap();
        write_crate(tmp.path(), "agent-guard", &[], true, true);
        let cmd = tmp.path().join("crates/agent-guard/src/cmd");
        std::fs::create_dir_all(&cmd).unwrap();
        std::fs::write(
            cmd.join("claude_hook.rs"),
            "fn f() { let r = resolve_permission_precedence(&i); }\n",
        )
        .unwrap();
        std::fs::write(
            cmd.join("check.rs"),
            "fn f() { let r = checker.apply_mode(r, t, false); }\n",
        )
        .unwrap();
        let err = check(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains(
                "`crates/agent-guard/src/cmd/claude_hook.rs` calls `resolve_permission_precedence(`"
            ),
            "{err}"
        );
        assert!(!err.contains("check.rs"), "{err}");
    }

    #[test]
    fn depending_on_the_cli_fails() {
        let tmp = tempfile::tempdir().unwrap();
        write_crate(tmp.path(), "agent-guard", &[], true, true);
        write_crate(tmp.path(), "agent-core", &["agent-guard"], true, true);
        let err = check(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("depends on the CLI crate"), "{err}");
    }
}
