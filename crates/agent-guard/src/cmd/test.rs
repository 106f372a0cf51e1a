//! `agent-guard test`: policy tests, so a team can keep its policy under CI.
//!
//! Each case is decided by agent-core's `Guard::evaluate`, the one composition the runtime and
//! the hooks use. A case may name a guard tool (`run_bash`) or a client's tool (`Bash`, Codex's
//! `apply_patch`, Gemini's `run_shell_command`), translated by the same table the hooks use.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use perm_rules::Decision;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use agent_core::Verdict;
use agent_core::clients::{self, Client};

use crate::front::{Front, FrontOptions, KNOWN_TOOLS, parse_mode, refusal};
use crate::policy::Policy;

const AFTER_HELP: &str = "\
Cases file: TOML (an array of [[case]] tables) or JSONL (one JSON object a line; chosen by a
.jsonl or .json extension). Fields of a case:
  name    = \"rm is denied\"             (optional; defaults to `case N`)
  tool    = \"run_bash\"                 (a guard tool, a client's tool such as \"Bash\", or mcp__*;
                                         any other name is refused as a typo, exit 2)
  client  = \"claude\"                   (optional: claude (default), codex or gemini: whose tool
                                         names `tool` uses)
  input   = { command = \"rm -rf /\" }   (the tool's arguments)
  expect  = \"deny\"                     (allow, ask or deny)
  rule    = \"run_bash(rm:*)\"           (optional: the rule that must decide)
  mode    = \"plan\"                     (optional: override the policy's mode for this case)
  cwd     = \"/repo\"                    (optional: the session directory; default the current one)

Every case is decided exactly as the runtime and the hooks decide it (agent-core's
Guard::evaluate): hooks, perm-rules, fs-sandbox for every path, bash-guard for commands, the
network policy, then the mode.
As in the hook, `AGENT_PERMISSIONS_*` rules and `AGENT_BLOCK_NETWORK` apply on top of the policy.

Exit status:
  0  every case passed
  1  at least one case failed
  2  a bad policy file or a bad cases file";

/// Arguments of `agent-guard test`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The policy file under test.
    pub policy: PathBuf,
    /// The cases file (TOML with `[[case]]` tables, or JSONL).
    pub cases: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: Option<String>,
    tool: String,
    #[serde(default = "empty_object")]
    input: Value,
    expect: Decision,
    rule: Option<String>,
    mode: Option<String>,
    cwd: Option<PathBuf>,
    /// Whose tool names `tool` uses: `claude` (default), `codex` or `gemini`.
    client: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CasesDoc {
    #[serde(default)]
    case: Vec<Case>,
}

#[derive(Debug, Serialize)]
struct Outcome {
    name: String,
    tool: String,
    expect: Decision,
    decision: Decision,
    pass: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    expect_rule: Option<String>,
    layer: Option<String>,
    code: Option<String>,
    rule: Option<String>,
    source: Option<String>,
    message: Option<String>,
}

fn load_cases(path: &Path) -> anyhow::Result<Vec<Case>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read cases file `{}`", path.display()))?;
    let jsonl = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("jsonl" | "json")
    );
    let cases = if jsonl {
        let mut cases = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let case: Case = serde_json::from_str(line).map_err(|e| {
                anyhow::anyhow!("bad cases file `{}` line {}: {e}", path.display(), i + 1)
            })?;
            cases.push(case);
        }
        cases
    } else {
        let doc: CasesDoc = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("bad cases file `{}`: {e}", path.display()))?;
        doc.case
    };
    anyhow::ensure!(
        !cases.is_empty(),
        "cases file `{}` has no cases",
        path.display()
    );
    for (i, case) in cases.iter().enumerate() {
        anyhow::ensure!(
            is_known_tool(&case.tool),
            "bad cases file `{}`: case {} names the unknown tool `{}`; expected one of {}, a Claude Code tool (`Bash`, `Read`, ...) or `mcp__*`",
            path.display(),
            i + 1,
            case.tool,
            KNOWN_TOOLS.join(", ")
        );
        anyhow::ensure!(
            case.input.is_object(),
            "bad cases file `{}`: case {} (`{}`) has an `input` that is not a table/object",
            path.display(),
            i + 1,
            case.tool
        );
    }
    Ok(cases)
}

/// A typo in a case's tool would silently test the default decision instead: refuse it.
fn is_known_tool(tool: &str) -> bool {
    KNOWN_TOOLS.contains(&tool)
        || clients::TOOL_MAP.iter().any(|m| m.name == tool)
        || tool.starts_with("mcp__")
        || tool.starts_with("mcp_")
}

fn client_of(case: &Case) -> anyhow::Result<Client> {
    Ok(match case.client.as_deref() {
        None | Some("claude") => Client::ClaudeCode,
        Some("codex") => Client::Codex,
        Some("gemini") => Client::Gemini,
        Some(other) => anyhow::bail!("unknown client `{other}`; expected claude, codex or gemini"),
    })
}

/// Decides one case: guard tool names are judged as they are; client tool names are
/// translated by the hooks' table.
fn decide(front: &Front, case: &Case, cwd: &Path) -> anyhow::Result<Verdict> {
    let calls = if KNOWN_TOOLS.contains(&case.tool.as_str()) {
        vec![agent_core::Call::new(case.tool.clone(), case.input.clone()).with_cwd(cwd)]
    } else {
        match clients::translate(client_of(case)?, &case.tool, &case.input, cwd) {
            Ok(calls) => calls,
            Err(message) => {
                return Ok(refusal(
                    &case.tool,
                    "client-input",
                    "bad-tool-input",
                    message,
                ));
            }
        }
    };
    Ok(front.evaluate(&calls).unwrap_or_else(|| {
        refusal(
            &case.tool,
            "client-input",
            "no-call",
            "nothing to judge".into(),
        )
    }))
}

fn outcome(index: usize, case: &Case, trace: &Verdict) -> Outcome {
    let decision = trace.decision;
    let deciding = trace.deciding();
    let rule = deciding.and_then(|s| s.rule.clone());
    let rule_ok = case
        .rule
        .as_ref()
        .is_none_or(|want| rule.as_ref() == Some(want));
    Outcome {
        name: case
            .name
            .clone()
            .unwrap_or_else(|| format!("case {}", index + 1)),
        tool: case.tool.clone(),
        expect: case.expect,
        decision,
        pass: decision == case.expect && rule_ok,
        expect_rule: case.rule.clone(),
        layer: deciding.map(|s| s.layer.to_owned()),
        code: deciding.map(|s| s.code.clone()),
        rule,
        source: deciding.and_then(|s| s.source.clone()),
        message: deciding.map(|s| s.message.clone()),
    }
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_inner(args).map_err(crate::front::one_line)
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let policy = Policy::load(Some(&args.policy))?;
    let cases = load_cases(&args.cases)?;
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let default_front = Front::load(&policy, &here, &FrontOptions::default())?;
    let mut outcomes = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        let special;
        let front = if case.mode.is_some() || case.cwd.is_some() {
            let cwd = case.cwd.clone().unwrap_or_else(|| here.clone());
            let opts = FrontOptions {
                mode: case.mode.as_deref().map(parse_mode).transpose()?,
                ..FrontOptions::default()
            };
            special = Front::load(&policy, &cwd, &opts)
                .with_context(|| format!("case {} (`{}`)", i + 1, case.tool))?;
            &special
        } else {
            &default_front
        };
        let cwd = case.cwd.as_deref().unwrap_or(&here);
        let verdict = decide(front, case, cwd)
            .with_context(|| format!("case {} (`{}`)", i + 1, case.tool))?;
        outcomes.push(outcome(i, case, &verdict));
    }
    let failed = outcomes.iter().filter(|o| !o.pass).count();
    let passed = outcomes.len() - failed;
    if args.json {
        let doc = serde_json::json!({ "passed": passed, "failed": failed, "cases": outcomes });
        println!("{}", serde_json::to_string(&doc)?);
    } else {
        for o in &outcomes {
            let why = match (&o.rule, &o.source) {
                (Some(rule), Some(source)) => format!("rule `{rule}` ({source})"),
                _ => format!(
                    "[{}] {}",
                    o.layer.as_deref().unwrap_or("-"),
                    o.message.as_deref().unwrap_or("no reason")
                ),
            };
            if o.pass {
                println!("PASS  {}: {} by {why}", o.name, o.decision);
            } else {
                let want_rule = o
                    .expect_rule
                    .as_ref()
                    .map(|r| format!(" by rule `{r}`"))
                    .unwrap_or_default();
                println!(
                    "FAIL  {}: expected {}{want_rule}, got {} by {why}",
                    o.name, o.expect, o.decision
                );
            }
        }
        println!("{passed} passed, {failed} failed");
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
