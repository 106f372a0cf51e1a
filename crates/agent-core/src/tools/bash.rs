//! run_bash, and the adapters that wire bash-guard into fs-sandbox and perm-rules.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bash_guard::{
    Analyzer, BashConfig, CachedAnalyzer, Confinement, Decision, ExecRequest, PathAccess,
    PathJudge, PathVerdict, Runner, Verdict,
};
use fs_sandbox::{Access, Op, Sandbox, SandboxError};
use perm_rules::{ContentSubjects, DefaultSubjects, Subjects};
use serde_json::{Value, json};

use super::{sandbox_denied, str_arg};
use crate::context::ToolContext;
use crate::tool::{AgentTool, InterruptBehavior, ToolError, ToolOutput};

/// bash-guard's [`PathJudge`] over an fs-sandbox [`Sandbox`]: a redirection target or a path
/// argument is judged exactly as the file tools would judge it.
#[derive(Debug, Clone)]
pub struct SandboxJudge {
    sandbox: Arc<Sandbox>,
}

impl SandboxJudge {
    /// A judge over `sandbox`.
    pub fn new(sandbox: Arc<Sandbox>) -> Self {
        SandboxJudge { sandbox }
    }
}

impl PathJudge for SandboxJudge {
    fn judge(&self, path: &str, access: PathAccess, cwd: &Path) -> PathVerdict {
        let full = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            cwd.join(path)
        };
        let op = match access {
            PathAccess::Read => Op::Read,
            PathAccess::Write => Op::Write,
        };
        match self.sandbox.check(&full, op) {
            Ok(checked) if checked.path() == checked.root().path() => PathVerdict::Root,
            Ok(_) => PathVerdict::Inside,
            Err(SandboxError::OutsideRoots { .. }) => PathVerdict::OutsideRoots,
            Err(SandboxError::Sensitive { .. }) => PathVerdict::Sensitive,
            Err(err) => PathVerdict::Denied {
                code: err.code().to_owned(),
                message: err.to_string(),
            },
        }
    }

    fn secrets_below(&self, path: &str, cwd: &Path) -> Option<String> {
        let full = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            cwd.join(path)
        };
        let names = self.sandbox.names(&full).ok()?;
        names
            .iter()
            .find_map(|n| self.sandbox.sensitive_below(n, true))
            .map(str::to_owned)
    }

    fn destination(&self, target: &str) -> Option<String> {
        crate::network::judge_destination(target)
            .err()
            .map(|refusal| refusal.to_string())
    }

    fn fingerprint(&self) -> u64 {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut h = DefaultHasher::new();
        for root in self.sandbox.roots() {
            root.path().hash(&mut h);
            matches!(root.access(), Access::ReadWrite).hash(&mut h);
        }
        self.sandbox.cwd().hash(&mut h);
        h.finish()
    }
}

/// perm-rules' [`ContentSubjects`] backed by bash-guard's real parser: a `run_bash` command is
/// split into every simple command it contains (inside substitutions and `bash -c` too); a
/// command that does not parse is [`Subjects::Unsplittable`] and never matches an Allow rule.
///
/// With [`BashSubjects::sharing`] the split comes from the same cached analysis that judges the
/// command, so a command is parsed once for the rules and for bash-guard.
#[derive(Debug, Clone, Default)]
pub struct BashSubjects {
    analyzer: Option<(Arc<CachedAnalyzer>, PathBuf)>,
}

impl BashSubjects {
    /// A provider that splits with the verdicts of `analyzer` (as run in `cwd`), which the
    /// `run_bash` judgement shares.
    pub fn sharing(analyzer: Arc<CachedAnalyzer>, cwd: PathBuf) -> Self {
        BashSubjects {
            analyzer: Some((analyzer, cwd)),
        }
    }
}

impl ContentSubjects for BashSubjects {
    fn subjects(&self, tool: &str, args: &Value) -> Subjects {
        if tool != "run_bash" {
            return DefaultSubjects.subjects(tool, args);
        }
        let Some(cmd) = args.get("command").and_then(Value::as_str) else {
            return Subjects::Unsplittable;
        };
        let split = match &self.analyzer {
            Some((analyzer, cwd)) => {
                let dir = match args.get("working_dir").and_then(Value::as_str) {
                    Some(d) if Path::new(d).is_absolute() => PathBuf::from(d),
                    Some(d) if !d.is_empty() => cwd.join(d),
                    _ => cwd.clone(),
                };
                analyzer.analyze(cmd, &dir).simple_commands().ok()
            }
            None => bash_guard::simple_commands_cached(cmd).ok(),
        };
        match split {
            Some(list) if !list.is_empty() => Subjects::List(list),
            _ => Subjects::Unsplittable,
        }
    }
}

/// Runs a bash command: bash-guard's verdict is one step of [`crate::Executor::evaluate`], and
/// the guarded runner executes it in its own process group under a
/// Landlock confinement compiled from the same sandbox roots. Serial, Block.
#[derive(Debug, Clone)]
pub struct RunBashTool {
    analyzer: Arc<CachedAnalyzer>,
    runner: Arc<Runner>,
    sandbox: Arc<Sandbox>,
}

impl RunBashTool {
    /// A tool analysing with `config` and judging paths through `sandbox`; `runner` executes.
    pub fn new(config: BashConfig, sandbox: Arc<Sandbox>, runner: Runner) -> Self {
        let judge: Arc<dyn PathJudge> = Arc::new(SandboxJudge::new(Arc::clone(&sandbox)));
        // One copy of the configuration (its exec lists are long): the analyzer's.
        let analyzer = CachedAnalyzer::new(Analyzer::new(config), judge, 256);
        RunBashTool {
            analyzer: Arc::new(analyzer),
            runner: Arc::new(runner),
            sandbox,
        }
    }

    fn config(&self) -> &BashConfig {
        self.analyzer.analyzer().config()
    }

    /// The analyzer (with its verdict cache) this tool judges commands with; the executor's
    /// permission phase shares it, so a command is parsed once per decision.
    pub fn analyzer(&self) -> &Arc<CachedAnalyzer> {
        &self.analyzer
    }

    fn cwd(&self, args: &Value) -> PathBuf {
        match args.get("working_dir").and_then(Value::as_str) {
            Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
            Some(dir) => self.sandbox.cwd().join(dir),
            None => self.sandbox.cwd().to_path_buf(),
        }
    }

    fn confinement(&self) -> Confinement {
        let mut read = Vec::new();
        let mut write = Vec::new();
        for root in self.sandbox.roots() {
            match root.access() {
                Access::ReadWrite => write.push(root.path().to_path_buf()),
                Access::ReadOnly => read.push(root.path().to_path_buf()),
            }
        }
        let mut c = Confinement::from_config(&self.config().exec, read, write);
        c.block_network = self.config().block_network;
        c
    }
}

fn describe(verdict: &Verdict) -> String {
    let parts: Vec<String> = verdict
        .deciding()
        .map(|f| format!("{} (`{}`): {}", f.code, f.subcommand, f.message))
        .collect();
    parts.join("; ")
}

#[async_trait]
impl AgentTool for RunBashTool {
    fn name(&self) -> &str {
        "run_bash"
    }
    fn description(&self) -> &str {
        "Run a bash command in `working_dir` (default: the working directory) with a timeout in seconds."
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","required":["command"],"additionalProperties":false,"properties":{
            "command":{"type":"string"},"working_dir":{"type":"string"},"timeout_secs":{"type":"integer"}}})
    }
    fn interrupt_behavior(&self) -> InterruptBehavior {
        InterruptBehavior::Block
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let command = str_arg(&args, "command")?;
        let cwd = self.cwd(&args);
        self.sandbox
            .check(&cwd, Op::ExecuteDir)
            .map_err(|e| sandbox_denied(&e))?;
        // Defence in depth: the permission phase already refused a Deny verdict.
        let verdict = self.analyzer.analyze(command, &cwd);
        if verdict.decision == Decision::Deny {
            let code = verdict.deciding().next().map_or("deny", |f| f.code);
            return Err(ToolError::denied(
                format!("bash-{code}"),
                describe(&verdict),
            ));
        }
        let request = ExecRequest {
            command: command.to_owned(),
            cwd,
            timeout: args
                .get("timeout_secs")
                .and_then(Value::as_u64)
                .map(Duration::from_secs),
            confinement: Some(self.confinement()),
        };
        let result = self
            .runner
            .run(&request, &ctx.cancel)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let mut out = String::new();
        out.push_str(&result.stdout);
        if !result.stderr.is_empty() {
            out.push_str("\n[stderr]\n");
            out.push_str(&result.stderr);
        }
        if result.timed_out {
            out.push_str(&format!(
                "\n[timed out after {} s]",
                result.timeout.as_secs()
            ));
        }
        if result.write_cap_exceeded {
            out.push_str(&format!(
                "\n[stopped: wrote more than {} bytes (bash.exec max_written_bytes)]",
                self.config().exec.max_written_bytes
            ));
        }
        match result.exit_code {
            Some(0) => Ok(ToolOutput::text(out)),
            Some(code) => Err(ToolError::Failed(format!("exit code {code}\n{out}"))),
            None => Err(ToolError::Failed(format!(
                "killed by signal {:?}\n{out}",
                result.signal
            ))),
        }
    }
}
