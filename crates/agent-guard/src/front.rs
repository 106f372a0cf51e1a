//! What every deciding front end of the CLI shares: the composed guard built from a policy
//! (agent-core's [`Guard`], the same one `run` uses), a runtime to drive it, and the
//! translation of its [`Verdict`] into the CLI's report. Front ends translate and print; the
//! layers are combined only by [`Guard::evaluate`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_core::{Call, Guard, Verdict};
use anyhow::Context as _;
use fs_sandbox::SandboxConfig;
use perm_rules::{Decision, PermissionMode};

use crate::policy::Policy;
use crate::report::{Reason, Report};

pub(crate) use agent_core::clients::GUARD_TOOLS as KNOWN_TOOLS;

/// `path` made absolute against `cwd` and normalised lexically, without touching the
/// filesystem. For rule text and configuration paths only (`lint`, `init`): paths a call names
/// are resolved physically by fs-sandbox, never like this.
pub(crate) fn absolutize(cwd: &Path, path: &Path) -> PathBuf {
    use std::path::Component;
    let joined = if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The policy's `[sandbox]` table.
pub(crate) fn sandbox_config(policy: &Policy) -> &SandboxConfig {
    &policy.doc.sandbox
}

/// How to build a [`Front`] beyond what the policy says.
#[derive(Debug, Clone, Default)]
pub(crate) struct FrontOptions {
    /// A mode that overrides the policy's.
    pub mode: Option<PermissionMode>,
    /// The client's own mode: when it is `plan` or `dontAsk` the guard is at least as strict.
    pub client_mode: Option<PermissionMode>,
    /// Extra read-write roots (`--root`).
    pub roots: Vec<PathBuf>,
    /// Extra read-only roots (`--read-only-root`).
    pub read_only_roots: Vec<PathBuf>,
    /// Network clients are asked about rather than denied (`--allow-network`).
    pub allow_network: bool,
    /// Open the policy's audit log (hooks record their decisions).
    pub audit: bool,
    /// An audit database that overrides the policy's `[hooks] audit_db` (a path or a
    /// `postgres://` URL).
    pub audit_db: Option<PathBuf>,
    /// Keep hook mode's session ledger (limits, allow-once) in that audit database.
    pub ledger: bool,
    /// Resolve asks with the policy's `[auto]` model (the agent hooks); `test`, `check` and
    /// `explain` never call a model.
    pub auto: bool,
}

/// A runtime, and the audit database opened on it, made before a call came: a resident
/// judge's (`resident::server`), for its one call.
struct Held {
    rt: tokio::runtime::Runtime,
    db: Option<perm_hooks::AuditDb>,
}

static HELD: std::sync::Mutex<Option<Held>> = std::sync::Mutex::new(None);

fn held() -> std::sync::MutexGuard<'static, Option<Held>> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts the runtime for the next [`Front::load`] of this process.
pub(crate) fn hold_runtime() -> anyhow::Result<()> {
    let rt = runtime()?;
    *held() = Some(Held { rt, db: None });
    Ok(())
}

/// Opens the SQLite audit database at `path` on the held runtime: the next [`Front::load`]
/// uses it when its policy names that file and the file and its schema are still as this open
/// checked them (else it opens the policy's database as usual). A database that does not open
/// is left to the call.
pub(crate) fn hold_audit_db(path: &Path) {
    if let Some(held) = held().as_mut() {
        held.db = held.rt.block_on(async {
            let db = perm_hooks::AuditDb::open_held(path).await.ok()?;
            // A statement not prepared here is parsed by the call, as before.
            let _ = db.prepare_calls().await;
            Some(db)
        });
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A built guard and the runtime that drives it.
pub(crate) struct Front {
    rt: tokio::runtime::Runtime,
    guard: Guard,
}

impl Front {
    /// Builds the guard from `policy` for a session working in `cwd`.
    pub(crate) fn load(policy: &Policy, cwd: &Path, opts: &FrontOptions) -> anyhow::Result<Front> {
        let (rt, held_db) = match held().take() {
            // The held database's pool was made on this runtime: they go together.
            Some(Held { rt, db }) => (rt, db),
            None => (runtime()?, None),
        };
        let env: HashMap<String, String> = crate::policy::process_env()?;
        let mut checker = policy.checker(&env)?;
        if let Some(mode) = opts.mode {
            checker.set_mode(mode);
        }
        if let Some(client) = opts.client_mode {
            let rank = |m: PermissionMode| match m {
                PermissionMode::Plan => 2,
                PermissionMode::DontAsk => 1,
                _ => 0,
            };
            if rank(client) > rank(checker.mode()) {
                checker.set_mode(client);
            }
        }
        let mut sandbox: SandboxConfig = policy.doc.sandbox.clone();
        sandbox.roots.extend(opts.roots.iter().cloned());
        sandbox
            .read_only_roots
            .extend(opts.read_only_roots.iter().cloned());
        let mut bash = policy.bash_config(&env);
        if opts.allow_network {
            bash.block_network = false;
        }
        let mut hooks = policy.doc.hooks.clone();
        hooks.audit = opts.audit;
        if let Some(db) = &opts.audit_db {
            hooks.audit_db = Some(db.clone());
        }
        // Every section but the limits is adjusted above, so the builder starts from them rather
        // than from `Policy::guard_builder` (which would parse the rules a second time).
        let builder = Guard::builder(cwd)
            .permissions(checker)
            .sandbox(sandbox)
            .bash(bash)
            .hooks(hooks)
            .ledger_from_audit(opts.ledger)
            .limits(policy.doc.limits.clone())
            .auto(if opts.auto {
                policy.doc.auto.clone()
            } else {
                agent_core::auto::AutoConfig::default()
            });
        let builder = match held_db {
            Some(db) if builder.audit_target().ok().flatten().as_ref() == Some(db.target()) => {
                builder.audit_db(db)
            }
            Some(db) => {
                // Not this call's database. Closing it could checkpoint its log (`fsync`s) on
                // the call's path; this judge's process ends after the call and closes it.
                std::mem::forget(db);
                builder
            }
            None => builder,
        };
        let guard = rt
            .block_on(builder.build())
            .map_err(|e| anyhow::anyhow!("{} ({})", e, policy.source_name()))?;
        if let Some(perm_hooks::AuditTarget::Sqlite(db)) = guard.audit_target() {
            crate::resident::note(crate::resident::Note::AuditDb, db);
        }
        Ok(Front { rt, guard })
    }

    /// The guard.
    pub(crate) fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Runs a future on this front's runtime.
    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Commits what the audit log queued, for a process that exits next; an error (for
    /// stderr) when rows were lost. Nothing is torn down: the process's exit ends the runtime
    /// and the pools, and closing them first would only delay the answer (and make the last
    /// SQLite connection checkpoint its log, with `fsync`s, on every hook call).
    pub(crate) fn finish(self) -> anyhow::Result<()> {
        let flushed = self
            .rt
            .block_on(self.guard.flush())
            .map_err(|e| anyhow::anyhow!("the audit log lost rows: {e}"));
        std::mem::forget(self);
        flushed
    }

    /// The verdict on one client call that translated into `calls` (a patch touching several
    /// files is several calls): the strictest of their verdicts.
    pub(crate) fn evaluate(&self, calls: &[Call]) -> Option<Verdict> {
        let mut best: Option<Verdict> = None;
        for call in calls {
            let v = self.rt.block_on(self.guard.evaluate(call));
            if best.as_ref().is_none_or(|b| v.decision > b.decision) {
                best = Some(v);
            }
        }
        best
    }
}

pub(crate) fn parse_mode(mode: &str) -> anyhow::Result<PermissionMode> {
    PermissionMode::parse(mode).with_context(|| {
        format!("unknown mode `{mode}`; expected default, acceptEdits, plan, dontAsk or bypassPermissions")
    })
}

/// A verdict in the CLI's report shape, with the whole trace attached.
pub(crate) fn report(v: &Verdict) -> anyhow::Result<Report> {
    let reasons = v
        .reasons()
        .into_iter()
        .map(|s| Reason::new(s.layer, s.code.clone(), s.message.clone()))
        .collect();
    let mut report = Report::new(v.decision, reasons)
        .with("tool", v.tool.clone())
        .with("mode", v.mode.as_str());
    if let Some(step) = v.deciding() {
        report = report.with("layer", step.layer);
        if let Some(rule) = &step.rule {
            report = report.with("rule", rule.clone());
        }
        if let Some(source) = &step.source {
            report = report.with("source", source.clone());
        }
    }
    Ok(report.with("trace", serde_json::to_value(&v.steps)?))
}

/// A verdict for a call that could not even be translated: a deny with the reason.
pub(crate) fn refusal(tool: &str, layer: &'static str, code: &str, message: String) -> Verdict {
    Verdict {
        tool: tool.to_owned(),
        mode: PermissionMode::Default,
        decision: Decision::Deny,
        steps: vec![agent_core::Step {
            layer,
            saw: format!("`{tool}`"),
            decision: Decision::Deny,
            code: code.to_owned(),
            message,
            rule: None,
            source: None,
        }],
        final_args: serde_json::Value::Null,
        additional_context: String::new(),
        resolution: None,
        asks: Vec::new(),
        resolved_by: None,
        advice: None,
    }
}

/// Folds a multi-line error (TOML parse errors quote the source with `|` gutters) into the
/// one line every error of the CLI must be.
pub(crate) fn one_line(err: anyhow::Error) -> anyhow::Error {
    let text = format!("{err:#}");
    let is_gutter = |line: &str| {
        let t = line.trim_start();
        let digits = t.trim_start_matches(|c: char| c.is_ascii_digit());
        t.is_empty()
            || t.starts_with('|')
            || (digits.len() < t.len() && digits.trim_start().starts_with('|'))
    };
    let parts: Vec<&str> = text
        .lines()
        .filter(|l| !is_gutter(l))
        .map(str::trim)
        .collect();
    anyhow::anyhow!("{}", parts.join(": "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_fold_to_one_line() {
        let err = anyhow::anyhow!(
            "bad policy file `p`: TOML parse error at line 2, column 1\n  |\n2 | denny = []\n  | ^^^^^\nunknown field `denny`\n"
        );
        assert_eq!(
            one_line(err).to_string(),
            "bad policy file `p`: TOML parse error at line 2, column 1: unknown field `denny`"
        );
    }

    #[test]
    fn an_untranslatable_call_is_a_deny() {
        let v = refusal("Bash", "claude-hook", "bad-tool-input", "no command".into());
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.code(), "bad-tool-input");
    }
}
