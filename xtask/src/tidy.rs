//! Layout rules of the workspace, checked by `cargo xtask tidy` and by an ordinary `#[test]`.
//!
//! - Dependency direction (docs/architecture.md): the leaf layers depend on no sibling,
//!   `perm-hooks` only on `perm-rules`, nothing depends on the CLI.
//! - Every crate has a README that is its crate documentation, and inherits the workspace lints.

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

/// Checks every rule and reports all violations at once.
pub fn check(root: &Path) -> anyhow::Result<()> {
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
    fn depending_on_the_cli_fails() {
        let tmp = tempfile::tempdir().unwrap();
        write_crate(tmp.path(), "agent-guard", &[], true, true);
        write_crate(tmp.path(), "agent-core", &["agent-guard"], true, true);
        let err = check(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("depends on the CLI crate"), "{err}");
    }
}
