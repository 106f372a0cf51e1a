//! The one composition of the layers: [`Executor::evaluate`] (and [`crate::Guard::evaluate`],
//! which calls it) takes a [`Call`] through every layer that applies to it and returns a
//! [`Verdict`]. The executor's permission phase, the Claude Code / Codex / Gemini hooks,
//! `agent-guard test` and `agent-guard explain` all decide through it, so a call gets the same
//! verdict whichever door it comes through.
//!
//! Order (the combined decision is the strictest step; the mode is applied once, at the end):
//! 1. PreToolUse hooks (they may rewrite the arguments; later layers judge the final ones);
//! 2. rules: policy, session and tool-level rules with the hooks' Block / PermissionRequired,
//!    through perm-rules' P0-P8 resolver (without the mode);
//! 3. fs-sandbox for every path-bearing argument ([`PATH_ARGS`]) and glob pattern
//!    ([`PATTERN_ARGS`]), physically resolved, sensitive files included;
//! 4. bash-guard for `run_bash` commands;
//! 5. the network policy for URLs (`web_fetch`);
//! 6. what the client adapter saw in its own input ([`Call::client`]);
//! 7. hook mode's session limits (call count, identical calls), when a session ledger is wired
//!    and the call carries its [`Call::ledger`] use;
//! 8. the mode, on the combined decision;
//! 9. an allow-once grant, which may lift a refusal that [`crate::not_liftable_because`]
//!    accepts (never a configured deny or the catastrophic class), once.
//!
//! This module sits above [`crate::verdict`] (the types and tables), `crate::ledger` and
//! `crate::executor`, so none of those reaches back into it: each imports one way.

use std::path::{Path, PathBuf};

use fs_sandbox::{Op, SandboxError};
use perm_hooks::{PreToolUseContext, PreToolUseResult};
use perm_rules::{
    Decision, HookBlock, HookPermissionRequest, PermissionMode, PrecedenceInputs, Priority,
    Resolution, resolve_permission_precedence,
};
use serde_json::Value;

use crate::executor::Executor;
use crate::network;
use crate::verdict::*;

impl Executor {
    /// Takes `call` through every layer (see the module docs) and returns the verdict. This is
    /// the only place the layers are combined.
    pub async fn evaluate(&self, call: &Call) -> Verdict {
        let tool = self.registry().get(&call.tool).cloned();
        let read_only = tool.as_ref().map_or(call.read_only, |t| t.is_read_only());
        let cwd = self.cwd_of(call);
        let mut steps = Vec::new();

        // The fleet kill switch: a cancelled session gets nothing more, whatever it asks.
        if let Some(kill) = self.kill_switch()
            && kill.is_cancelled(&call.session_id)
        {
            return Verdict {
                tool: call.tool.clone(),
                mode: self.checker().mode(),
                decision: Decision::Deny,
                steps: vec![Step::new(
                    "kill-switch",
                    format!("session `{}`", call.session_id),
                    Decision::Deny,
                    "cancelled",
                    format!(
                        "session `{}` was cancelled (`agent-guard cancel`); no call of it runs any more",
                        call.session_id
                    ),
                )],
                final_args: call.args.clone(),
                additional_context: String::new(),
                resolution: None,
                asks: Vec::new(),
                resolved_by: None,
                advice: None,
            };
        }

        // Layer 3: PreToolUse hooks. They see the call first and may rewrite it.
        let pre = if self.hooks().wants_pre_tool_use() {
            self.hooks()
                .run_pre_tool_use(PreToolUseContext {
                    session_id: call.session_id.clone(),
                    step: call.step,
                    agent_name: call.agent_name.clone(),
                    tool_name: call.tool.clone(),
                    tool_call_id: call.call_id.clone(),
                    args: call.args.clone(),
                    cwd: Some(cwd.clone()),
                    transcript_path: None,
                })
                .await
        } else {
            PreToolUseResult::unchanged(call.args.clone())
        };
        let args = pre.final_args;
        if !pre.mutations.is_empty() {
            steps.push(Step::new(
                "hooks",
                format!("`{}`", call.tool),
                Decision::Allow,
                "hook-rewrote-input",
                format!(
                    "rewritten by {}; every later layer judged the rewritten arguments",
                    pre.mutations
                        .iter()
                        .map(|m| m.hook.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let hook_block = pre.blocked.map(|b| HookBlock {
            hook: b.hook,
            reason: b.reason,
        });
        let hook_requests: Vec<HookPermissionRequest> = pre
            .permission_requests
            .into_iter()
            .map(|r| HookPermissionRequest {
                hook: r.hook,
                message: r.message,
            })
            .collect();

        // Layer 2 (and 1: the tool's own rules): P0-P8 without the mode.
        let mut resolution = self.resolve_rules(
            &call.tool,
            tool.as_deref(),
            read_only,
            &args,
            HookVerdicts {
                block: hook_block,
                requests: hook_requests,
            },
            // The mode applies once, to the combined verdict of every layer.
            PermissionMode::Default,
        );
        // A symlink must not carry a path past a rule that names its target: path rules are
        // matched against every name each path argument has (physically first), and the
        // strictest resolution counts. An explicit allow holds only where every name has one.
        if let Some((name, stricter)) = self.rules_on_every_name(
            &call.tool,
            tool.as_deref(),
            read_only,
            &args,
            &cwd,
            &resolution,
        ) {
            steps.push(rules_step(&call.tool, &args, &resolution));
            let mut step = rules_step(&call.tool, &args, &stricter);
            step.saw = format!("`{}` as `{}`", call.tool, name.display());
            steps.push(step);
            resolution = stricter;
        } else {
            steps.push(rules_step(&call.tool, &args, &resolution));
        }

        // Layer 4: every path the call names.
        for arg in PATH_ARGS.iter().filter(|a| a.tool == call.tool) {
            if let Some(step) = self.path_step(arg, &args, &cwd) {
                steps.push(step);
            }
        }
        for arg in PATTERN_ARGS.iter().filter(|a| a.tool == call.tool) {
            if let Some(step) = self.pattern_step(arg, &args, &cwd) {
                steps.push(step);
            }
        }

        // Layer 5: bash commands; an allow rule lifts a side-effect ask of the simple
        // commands it matches (crate::lift).
        let mut asks = Vec::new();
        let mut subjects = None;
        if call.tool == "run_bash" {
            let (step, judged) = self.bash_step(&args, &cwd);
            steps.push(step);
            if let Some(judged) = judged {
                asks = judged.items;
                subjects = judged.subjects;
            }
        }

        // Network tools, by where they really go.
        for (_, key) in URL_ARGS.iter().filter(|(t, _)| *t == call.tool) {
            steps.push(network_step(&args, key));
        }

        // Code in a language the guard does not parse: at least never a catastrophe.
        for (_, key) in UNSEEN_CODE_ARGS.iter().filter(|(t, _)| *t == call.tool) {
            if let Some(what) = args
                .get(key)
                .and_then(Value::as_str)
                .and_then(bash_guard::catastrophic_text)
            {
                steps.push(Step::new(
                    "bash-guard",
                    format!("`{}` {key}", call.tool),
                    Decision::Deny,
                    "catastrophic_text",
                    format!("the code holds {what}; no rule allows it"),
                ));
            }
        }

        // Tools with no contract here and no argument table above (MCP servers' tools
        // `mcp__server__tool` / `mcp_server_tool`, a client's tool the table does not know, a
        // renamed or future tool): the URLs and paths their input names, at any depth, are
        // judged like the known tools' arguments. A name is no reason to look away: `LS`,
        // `Read` under another client's name or `fs_read` reach files as an MCP tool does.
        if tool.is_none() && !has_argument_table(&call.tool) {
            steps.extend(self.opaque_input_steps(&args, &cwd, tool_may_write(&call.tool)));
        }

        // The policy's default is for what no rule names and no layer can vouch for. A call the
        // judging layers proved read-only (bash-guard: it only reads; the sandbox: each path
        // inside the roots) has nothing a person must see, so the default's ask does not apply
        // to it; a configured ask rule, any other layer's ask and every deny still do.
        if resolution.decision == Decision::Ask
            && resolution.decided_by.priority == Priority::Default
            && vouched_read_only(&call.tool, read_only, &steps)
            && let Some(step) = steps
                .iter_mut()
                .find(|s| s.layer == "perm-rules" && s.code == DEFAULT_CODE)
        {
            step.decision = Decision::Allow;
            step.message = format!(
                "{}; the call only reads (every layer that judged it allowed it), so the default's ask does not apply",
                step.message
            );
        }

        // What the client adapter saw.
        let before_client = steps.iter().map(|s| s.decision).max();
        let explicit_allow = resolution.decision == Decision::Allow
            && resolution.decided_by.rule.is_some()
            && resolution.decided_by.priority != Priority::Default;
        for f in &call.client {
            let decision = if f.yields_to_allow_rule && explicit_allow {
                Decision::Allow
            } else if f.only_upgrades_allow {
                match before_client {
                    Some(Decision::Allow) | None => f.decision,
                    Some(_) => Decision::Allow,
                }
            } else {
                f.decision
            };
            steps.push(Step::new(
                "client",
                format!("`{}` input", call.tool),
                decision,
                f.code.clone(),
                f.message.clone(),
            ));
        }

        // Hook mode's session limits, counted once per client call across processes.
        if let (Some(usage), Some(wired)) = (&call.ledger, self.ledger_wiring())
            && usage.count
            && let Some(step) = limits_step(wired, call, usage).await
        {
            steps.push(step);
        }

        asks.extend(crate::lift::step_items(&steps));
        let lifted_rules = lifted_rules(&asks, &steps);
        let advice = (combined_of(&steps) == Decision::Ask && call.tool == "run_bash")
            .then(|| crate::lift::advice(self, &asks, subjects.as_deref(), &cwd))
            .flatten();

        // The mode, once, on the combined decision. No step at all fails closed.
        let combined = steps
            .iter()
            .map(|s| s.decision)
            .max()
            .unwrap_or(Decision::Deny);
        let mode = self.checker().mode();
        let mut decision = mode.transform(combined, &call.tool, read_only);
        if decision != combined {
            steps.push(Step::new(
                "mode",
                format!("`{}` in mode `{mode}`", call.tool),
                decision,
                format!("mode-{}", mode.as_str()),
                mode_message(mode, combined, decision, read_only),
            ));
        }

        let mut resolved_by = (decision == Decision::Allow && !lifted_rules.is_empty()).then_some(
            crate::AskResolution::Rule {
                rules: lifted_rules,
            },
        );

        // Auto mode: a model may resolve an ask whose every standing reason is a known side
        // effect, never a deny, a configured ask or what the guard could not review.
        if decision == Decision::Ask
            && let Some(auto) = self.auto()
            && crate::lift::only_side_effects(&asks)
            && !steps.iter().any(|s| s.decision == Decision::Deny)
        {
            let (step, resolution) = self.auto_step(auto, call, &args, &cwd, &asks).await;
            decision = step.decision;
            steps.push(step);
            if resolution.is_some() {
                resolved_by = resolution;
            }
        }

        // A person's allow-once grant for exactly this call, consumed here, lifts a refusal
        // it may lift (never a configured deny or the catastrophic class).
        if decision != Decision::Allow
            && let (Some(usage), Some(wired)) = (&call.ledger, self.ledger_wiring())
            && usage.grantable
            && crate::ledger::refusal_not_liftable(&steps).is_none()
        {
            let args = usage.canonical_input();
            let cwd_text = cwd.to_string_lossy();
            let key = perm_hooks::CallKey {
                session_id: &call.session_id,
                tool_name: &usage.tool,
                args: &args,
                cwd: &cwd_text,
            };
            // A grant that cannot be read is no grant: the refusal stands.
            if let Ok(Some(code)) = wired.ledger.take_grant(&key).await {
                resolved_by = Some(crate::AskResolution::AllowOnce { code: code.clone() });
                steps.push(Step::new(
                    "allow-once",
                    format!("`{}` in session `{}`", usage.tool, call.session_id),
                    Decision::Allow,
                    "allow-once",
                    format!(
                        "a person let this exact call through once (`agent-guard allow-once {code}`); the refusal was {decision}"
                    ),
                ));
                decision = Decision::Allow;
            }
        }
        Verdict {
            tool: call.tool.clone(),
            mode,
            decision,
            steps,
            final_args: args,
            additional_context: pre.additional_context,
            resolution: Some(resolution),
            asks,
            resolved_by,
            advice,
        }
    }

    /// Asks auto mode's model about an ask; its step, and the resolution when it answered.
    async fn auto_step(
        &self,
        auto: &crate::auto::AutoMode,
        call: &Call,
        args: &Value,
        cwd: &Path,
        asks: &[crate::AskItem],
    ) -> (Step, Option<crate::AskResolution>) {
        use crate::auto::{AutoOutcome, UserRequests};
        let requests = call
            .requests
            .clone()
            .unwrap_or_else(|| UserRequests::Messages(self.user_requests(&call.session_id)));
        let root = self.sandbox().map_or(cwd, |s| s.cwd());
        let outcome = auto
            .resolve(&call.session_id, &requests, &call.tool, args, root, asks)
            .await;
        let model = auto.config().model.clone();
        let saw = format!("`{}` by model `{model}`", call.tool);
        match outcome {
            AutoOutcome::Answer {
                answer,
                latency_ms,
                cached,
                ..
            } => {
                let allow = answer.decision == Decision::Allow;
                let step = Step::new(
                    "auto-mode",
                    saw,
                    if allow {
                        Decision::Allow
                    } else {
                        Decision::Deny
                    },
                    if allow { "auto-allow" } else { "auto-deny" },
                    format!(
                        "auto mode's model `{model}` ({latency_ms} ms) {} this known side effect{}: {}",
                        if allow { "allowed" } else { "refused" },
                        if cached {
                            " (its answer to the identical call earlier in the session)"
                        } else {
                            ""
                        },
                        if answer.reason.is_empty() {
                            "no reason given"
                        } else {
                            answer.reason.as_str()
                        }
                    ),
                );
                let resolution = crate::AskResolution::Auto {
                    decision: answer.decision,
                    model,
                    latency_ms,
                    reason: answer.reason,
                    cached,
                };
                (step, Some(resolution))
            }
            AutoOutcome::NoAnswer(why) => (
                Step::new(
                    "auto-mode",
                    saw,
                    Decision::Ask,
                    "auto-no-answer",
                    format!("auto mode had no answer ({why}); a person decides"),
                ),
                None,
            ),
            AutoOutcome::StoodDown(n) => (
                Step::new(
                    "auto-mode",
                    saw,
                    Decision::Ask,
                    "auto-stood-down",
                    format!(
                        "auto mode stood down for this session after {n} refusals; a person decides"
                    ),
                ),
                None,
            ),
        }
    }

    fn cwd_of(&self, call: &Call) -> PathBuf {
        match (&call.cwd, self.sandbox()) {
            (Some(cwd), _) => cwd.clone(),
            (None, Some(sandbox)) => sandbox.cwd().to_path_buf(),
            (None, None) => PathBuf::from("/"),
        }
    }

    /// The rules layer: policy, session and tool-level rules with the hooks' verdicts through
    /// P0-P8, then `mode` (`Default` inside `evaluate`, which applies the mode once to the
    /// combined verdict).
    pub(crate) fn resolve_rules(
        &self,
        name: &str,
        tool: Option<&dyn crate::AgentTool>,
        read_only: bool,
        args: &Value,
        hooks: HookVerdicts,
        mode: PermissionMode,
    ) -> Resolution {
        let config = self.checker().check(name, Some(args));
        let session = self.session_result(name, args);
        let tool_level = tool.and_then(|t| self.tool_level(t, args));
        resolve_permission_precedence(&PrecedenceInputs {
            tool: name.to_owned(),
            read_only,
            mode,
            config,
            session,
            tool_level,
            hook_block: hooks.block,
            hook_requests: hooks.requests,
        })
    }

    /// The strictest resolution of the rules over the other names of the call's path
    /// arguments ([`Sandbox::names`](fs_sandbox::Sandbox::names): where each leads physically,
    /// the names met on the way), when one is stricter than `given`: a higher decision, or an
    /// Allow only the default gives where `given` had an explicit Allow rule. Hooks already
    /// spoke in `given`; an unresolvable path is the sandbox step's to refuse.
    fn rules_on_every_name(
        &self,
        name: &str,
        tool: Option<&dyn crate::AgentTool>,
        read_only: bool,
        args: &Value,
        cwd: &Path,
        given: &Resolution,
    ) -> Option<(PathBuf, Resolution)> {
        let sandbox = self.sandbox()?;
        let explicit = |r: &Resolution| {
            r.decided_by.rule.is_some() && r.decided_by.priority != Priority::Default
        };
        let mut worst: Option<(PathBuf, Resolution)> = None;
        for arg in PATH_ARGS.iter().filter(|a| a.tool == name) {
            let Some(raw) = args.get(arg.key).and_then(Value::as_str) else {
                continue;
            };
            let Ok(path) = self.physical_input(raw, cwd) else {
                continue;
            };
            let Ok(names) = sandbox.names(&path) else {
                continue;
            };
            for other in names.into_iter().filter(|n| *n != path) {
                let mut view = args.clone();
                if let Some(obj) = view.as_object_mut() {
                    obj.insert(
                        arg.key.to_owned(),
                        Value::String(other.to_string_lossy().into_owned()),
                    );
                }
                let r = self.resolve_rules(
                    name,
                    tool,
                    read_only,
                    &view,
                    HookVerdicts {
                        block: None,
                        requests: Vec::new(),
                    },
                    PermissionMode::Default,
                );
                let bar = worst.as_ref().map_or(given, |(_, w)| w);
                let stricter = r.decision > bar.decision
                    || (r.decision == Decision::Allow
                        && bar.decision == Decision::Allow
                        && explicit(bar)
                        && !explicit(&r));
                if stricter {
                    worst = Some((other, r));
                }
            }
        }
        worst
    }

    /// Every string of an opaque tool's input (at any depth) that is a URL is judged by where
    /// it goes, and every one that is an absolute or `~/` path by whether it is a secret
    /// (physically: a link to `~/.ssh/id_rsa` counts), or asked about when it is a protected
    /// file the tool might write. URLs inside prose are not (a chat message may mention
    /// `http://localhost:3000`), and nothing else is refused: an MCP server has its own scope,
    /// so a path outside the roots is not a refusal here. No refusal, no step.
    ///
    /// A string that holds a catastrophe as a shell command (`rm -rf ~`) is refused whatever
    /// the tool: an unknown tool may run it. When the tool's name says it writes
    /// ([`tool_may_write`]), a path outside the roots is asked: it may be `~/.bashrc` or
    /// `~/.config/autostart`, code that runs later.
    fn opaque_input_steps(&self, args: &Value, cwd: &Path, may_write: bool) -> Vec<Step> {
        let mut strings = Vec::new();
        let mut steps = Vec::new();
        if !collect_strings(args, &mut strings, 0, false) {
            // What is not read is not judged: input nested past the depth read is refused.
            steps.push(Step::new(
                "client-input",
                "the tool input".to_owned(),
                Decision::Deny,
                "input_too_deep",
                format!(
                    "the input nests deeper than {MAX_INPUT_DEPTH} levels; the guard does not judge what it cannot read"
                ),
            ));
        }
        let mut judged = 0usize;
        for (text, named_as_path) in strings {
            let text = text.trim();
            let is_url = !text.contains(char::is_whitespace)
                && network::urls_in(text)
                    .first()
                    .is_some_and(|u| text.starts_with(u.as_str()));
            // Absolute and `~/` paths wherever they are; a relative one (`.env`,
            // `.claude/settings.json`) where the key says it is a path, resolved in the cwd.
            let relative_path = named_as_path
                && !is_url
                && !text.is_empty()
                && !text.starts_with('~')
                && !text.contains(char::is_whitespace);
            let path_like = (text.starts_with('/') || text.starts_with("~/") || relative_path)
                && !text.contains(['\n', '\0']);
            if is_url || path_like {
                judged += 1;
                // Each one costs a resolution; a flood of them would outlast the client's
                // hook timeout, and a timed-out hook lets the call run.
                if judged > MAX_OPAQUE_TARGETS {
                    steps.push(Step::new(
                        "client-input",
                        "the tool input".to_owned(),
                        Decision::Deny,
                        "input_too_large",
                        format!(
                            "the input names more than {MAX_OPAQUE_TARGETS} paths and URLs; the guard does not judge what it cannot read in time"
                        ),
                    ));
                    break;
                }
            }
            if is_url && let Err(refusal) = network::judge_destination(text) {
                steps.push(Step::new(
                    "network",
                    format!("`{}`", crate::truncate_chars(text, 200).0),
                    Decision::Deny,
                    refusal.code(),
                    refusal.to_string(),
                ));
                continue;
            }
            if !path_like {
                if let Some(what) = bash_guard::catastrophic_text(text) {
                    steps.push(Step::new(
                        "bash-guard",
                        format!("`{}`", crate::truncate_chars(text, 200).0),
                        Decision::Deny,
                        "catastrophic_text",
                        format!(
                            "the input holds {what}; a tool the guard does not know may run it"
                        ),
                    ));
                }
                continue;
            }
            if text.len() > PATH_MAX_BYTES {
                // Too long for one open, not for a server that normalises it first
                // (`/root/.ssh/././.../id_rsa`): what is not judged is not allowed.
                steps.push(Step::new(
                    "fs-sandbox",
                    format!("`{}...`", crate::truncate_chars(text, 200).0),
                    Decision::Deny,
                    "too_long",
                    format!(
                        "a path of {} bytes is longer than the guard judges ({PATH_MAX_BYTES})",
                        text.len()
                    ),
                ));
                continue;
            }
            let (Some(sandbox), Ok(path)) = (self.sandbox(), self.physical_input(text, cwd)) else {
                continue;
            };
            // A server that normalises `..` lexically (`path.resolve`, `os.path.normpath`)
            // opens what the path spells after the `..`s are folded, even where the
            // physical resolution stops at a missing name.
            let folded = lexical(&path);
            if let Some(what) = sandbox.sensitive(&folded) {
                let how = if folded == path {
                    "is"
                } else {
                    "leads, once its `..` are folded, to"
                };
                steps.push(Step::new(
                    "fs-sandbox",
                    format!("`{}`", path.display()),
                    Decision::Deny,
                    "sensitive_path",
                    format!(
                        "`{}` {how} {what}; secrets are not handed to the agent",
                        path.display()
                    ),
                ));
                continue;
            }
            if let Err(err @ SandboxError::Sensitive { .. }) = sandbox.check(&path, Op::Read) {
                steps.push(Step::new(
                    "fs-sandbox",
                    format!("`{}`", path.display()),
                    Decision::Deny,
                    err.code(),
                    err.to_string(),
                ));
            } else {
                match sandbox.check(&path, Op::Write) {
                    // The guard cannot tell whether an opaque tool writes what it names: a
                    // file that makes tools run code later (`.git/hooks/*`,
                    // `.claude/settings.json`) is for a person to let it touch.
                    Err(err @ SandboxError::Protected { .. }) => steps.push(Step::new(
                        "fs-sandbox",
                        format!("`{}`", path.display()),
                        Decision::Ask,
                        err.code(),
                        format!("{err}; the tool may write it"),
                    )),
                    Err(err) if may_write => steps.push(Step::new(
                        "fs-sandbox",
                        format!("`{}`", path.display()),
                        Decision::Ask,
                        err.code(),
                        format!("{err}; the tool's name says it writes, and outside the project it may write code that runs later (a shell profile, an autostart entry)"),
                    )),
                    _ => {}
                }
            }
        }
        steps
    }

    fn path_step(&self, arg: &PathArg, args: &Value, cwd: &Path) -> Option<Step> {
        let raw = match args.get(arg.key) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::String(_)) | None if arg.defaults_to_cwd => {
                cwd.to_string_lossy().into_owned()
            }
            None => return None,
            Some(other) => {
                return Some(Step::new(
                    "fs-sandbox",
                    format!("`{}` = {other}", arg.key),
                    Decision::Deny,
                    "bad-path-argument",
                    format!("`{}` must be a non-empty string path", arg.key),
                ));
            }
        };
        let path = match self.physical_input(&raw, cwd) {
            Ok(p) => p,
            Err(step) => return Some(*step),
        };
        let op = if arg.op == Op::List && path.is_file() {
            Op::Read
        } else {
            arg.op
        };
        if arg.reads_tree
            && op == Op::List
            && let Some(sandbox) = self.sandbox()
            && let Some(what) = sandbox.names(&path).ok().and_then(|names| {
                // The search tools skip hidden names (ripgrep's default).
                names
                    .into_iter()
                    .find_map(|n| sandbox.sensitive_below(&n, false))
            })
        {
            return Some(Step::new(
                "fs-sandbox",
                format!("search below `{}`", path.display()),
                Decision::Deny,
                "sensitive_below",
                format!(
                    "searching `{}` reads every file below it, and {what} is there; search a narrower directory",
                    path.display()
                ),
            ));
        }
        Some(self.sandbox_step(&path, op))
    }

    fn pattern_step(&self, arg: &PatternArg, args: &Value, cwd: &Path) -> Option<Step> {
        let pattern = args.get(arg.key).and_then(Value::as_str)?;
        if pattern.is_empty() {
            return None;
        }
        let base_raw = args
            .get(arg.base_key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map_or_else(|| cwd.to_string_lossy().into_owned(), str::to_owned);
        let base = match self.physical_input(&base_raw, cwd) {
            Ok(p) => p,
            Err(step) => return Some(*step),
        };
        let sandbox = self.sandbox()?;
        // A client may expand `~` in a pattern; judging it as the home directory fails closed.
        let expanded;
        let pattern = if pattern.starts_with('~') {
            expanded = match self.physical_input(pattern, cwd) {
                Ok(p) => p.to_string_lossy().into_owned(),
                Err(step) => return Some(*step),
            };
            expanded.as_str()
        } else {
            pattern
        };
        // A pattern naming a sensitive file (`**/.env`, `~/.ssh/*`) is refused outright,
        // wherever it would match.
        let named = base.join(pattern.trim_start_matches("./"));
        if let Some(what) = sandbox.sensitive(&named) {
            return Some(Step::new(
                "fs-sandbox",
                format!("pattern `{pattern}` under `{}`", base.display()),
                Decision::Deny,
                "sensitive_path",
                format!("the pattern `{pattern}` names {what}; agents never read it"),
            ));
        }
        if !arg.walks {
            // A search's filter glob is a whitelist the search reads even through hidden and
            // ignored files: one that can select a secret's name reads the secret.
            if let Some((what, example)) = fs_sandbox::search_glob_selects_sensitive(pattern) {
                return Some(Step::new(
                    "fs-sandbox",
                    format!("filter `{pattern}` under `{}`", base.display()),
                    Decision::Deny,
                    "sensitive_path",
                    format!(
                        "the filter `{pattern}` selects files such as `{example}` ({what}), which the search then reads even when hidden or ignored; name the files to search more narrowly (e.g. `*.rs`)"
                    ),
                ));
            }
            return None;
        }
        let literal = literal_prefix(pattern);
        if literal.as_os_str().is_empty() {
            return None;
        }
        let reach = if literal.is_absolute() {
            literal
        } else {
            base.join(literal)
        };
        Some(self.sandbox_step(&reach, Op::List))
    }

    /// `raw` as the kernel would see it from `cwd`: `~` is the home directory from the
    /// environment, relative paths join the cwd, and nothing is normalised lexically (a `..`
    /// is the sandbox's to resolve after the symlinks before it).
    fn physical_input(&self, raw: &str, cwd: &Path) -> Result<PathBuf, Box<Step>> {
        // `~root/x`, `~+/x`, `~-/x`: a shell (or a client that expands like one) reads another
        // account's home or a directory stack entry, a file API a relative name in the cwd.
        // The guard cannot know which one the tool will open, so it judges neither.
        if let Some(rest) = raw.strip_prefix('~')
            && !rest.is_empty()
            && !rest.starts_with('/')
        {
            let name = rest.split('/').next().unwrap_or(rest);
            return Err(Box::new(Step::new(
                "fs-sandbox",
                format!("`{}`", crate::truncate_chars(raw, 200).0),
                Decision::Deny,
                "tilde_user",
                format!(
                    "`~{}` reads as another account's home directory in a shell but as a relative name to a file tool; the guard cannot tell which one the tool opens. Give an absolute path",
                    crate::truncate_chars(name, 64).0
                ),
            )));
        }
        let expanded = if raw == "~" || raw.starts_with("~/") {
            let Some(home) = self.home() else {
                return Err(Box::new(Step::new(
                    "fs-sandbox",
                    format!("`{raw}`"),
                    Decision::Deny,
                    "tilde",
                    format!("`{raw}` starts with `~` and the home directory is unknown"),
                )));
            };
            home.join(raw.trim_start_matches('~').trim_start_matches('/'))
        } else {
            PathBuf::from(raw)
        };
        Ok(if expanded.is_absolute() {
            expanded
        } else {
            cwd.join(expanded)
        })
    }

    fn sandbox_step(&self, path: &Path, op: Op) -> Step {
        let saw = format!("{} `{}`", op.as_str(), path.display());
        let Some(sandbox) = self.sandbox() else {
            return Step::new(
                "fs-sandbox",
                saw,
                Decision::Deny,
                "sandbox_unavailable",
                "no filesystem sandbox is configured, so no path can be judged",
            );
        };
        match sandbox.check(path, op) {
            Ok(checked) => Step::new(
                "fs-sandbox",
                saw,
                Decision::Allow,
                "inside_root",
                format!(
                    "`{}` is inside the root `{}`",
                    checked.path().display(),
                    checked.root().path().display()
                ),
            ),
            Err(err) => match special_outside(&err) {
                Some(message) => {
                    Step::new("fs-sandbox", saw, Decision::Deny, "special_file", message)
                }
                None => Step::new(
                    "fs-sandbox",
                    saw,
                    sandbox_refusal_decision(&err, op),
                    err.code(),
                    err.to_string(),
                ),
            },
        }
    }

    fn bash_step(&self, args: &Value, cwd: &Path) -> (Step, Option<crate::lift::BashJudgement>) {
        let Some(command) = args.get("command").and_then(Value::as_str) else {
            return (
                Step::new(
                    "bash-guard",
                    format!("{args}"),
                    Decision::Deny,
                    "no_command",
                    "`run_bash` input has no string `command`",
                ),
                None,
            );
        };
        let saw = format!("`{}`", crate::truncate_chars(command, 200).0);
        let Some(analyzer) = self.bash() else {
            return (
                Step::new(
                    "bash-guard",
                    saw,
                    Decision::Deny,
                    "bash_guard_unavailable",
                    "no bash analyzer is configured, so no command can be judged",
                ),
                None,
            );
        };
        let dir = match args.get("working_dir").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => match self.physical_input(d, cwd) {
                Ok(p) => p,
                Err(step) => return (*step, None),
            },
            _ => cwd.to_path_buf(),
        };
        let verdict = analyzer.analyze(command, &dir);
        let judged = crate::lift::judge_bash(self, &verdict);
        (
            Step::new(
                "bash-guard",
                saw,
                judged.decision,
                judged.code.clone(),
                judged.message.clone(),
            ),
            Some(judged),
        )
    }
}

/// The strictest decision of `steps` (none: deny).
fn combined_of(steps: &[Step]) -> Decision {
    steps
        .iter()
        .map(|s| s.decision)
        .max()
        .unwrap_or(Decision::Deny)
}

/// The allow rules that lifted a side-effect ask of bash-guard, each once, when the lifting
/// mattered: bash-guard asked and no other step asks or denies.
fn lifted_rules(asks: &[crate::AskItem], steps: &[Step]) -> Vec<String> {
    let mut rules: Vec<String> = Vec::new();
    for rule in asks.iter().filter_map(|a| a.lifted_by.as_ref()) {
        if !rules.contains(rule) {
            rules.push(rule.clone());
        }
    }
    if steps.iter().any(|s| s.decision != Decision::Allow) {
        return Vec::new();
    }
    rules
}

/// The session-limits step of a counted call: `None` within the limits, a refusal past them
/// or when the ledger cannot count (the limits cannot be checked: fail closed).
async fn limits_step(
    wired: &crate::ledger::Wired,
    call: &Call,
    usage: &crate::LedgerUse,
) -> Option<Step> {
    let saw = format!("`{}` in session `{}`", usage.tool, call.session_id);
    let tally = match wired
        .ledger
        .count_call(&call.session_id, &usage.tool, &usage.input_hash())
        .await
    {
        Ok(tally) => tally,
        Err(e) => {
            return Some(Step::new(
                "runtime-limits",
                saw,
                Decision::Deny,
                "ledger_unavailable",
                format!(
                    "the session's limits cannot be checked because the audit database failed ({e}); calls are refused until it works again"
                ),
            ));
        }
    };
    let names = [usage.tool.as_str(), call.tool.as_str()];
    let hit = wired.limits.judge(&names, tally.calls, tally.run)?;
    let mut message = hit.message();
    if hit.code() == "duplicate_call" {
        message.push_str(
            " (a person can raise `[limits] duplicate_threshold` or list the tool in `[limits] duplicate_exempt`)",
        );
    }
    Some(Step::new(
        "runtime-limits",
        saw,
        Decision::Deny,
        hit.code(),
        message,
    ))
}

/// The rules layer's code when no rule matched and the policy's default decided.
const DEFAULT_CODE: &str = "p8-default";

/// Whether the layers that judge what a call does all proved it read-only: for `run_bash`,
/// bash-guard allowed it; for a read-only tool, the sandbox allowed each path it names. Every
/// step but the rules' default must allow, and at least one such judging step must be there (a
/// tool no layer looked into is never vouched for).
fn vouched_read_only(tool: &str, read_only: bool, steps: &[Step]) -> bool {
    let judge = match tool {
        "run_bash" => "bash-guard",
        _ if read_only => "fs-sandbox",
        _ => return false,
    };
    let others = || {
        steps
            .iter()
            .filter(|s| !(s.layer == "perm-rules" && s.code == DEFAULT_CODE))
    };
    others().all(|s| s.decision == Decision::Allow) && others().any(|s| s.layer == judge)
}

fn rules_step(tool: &str, args: &Value, resolution: &Resolution) -> Step {
    let finding = &resolution.decided_by;
    let rule = finding.rule.as_ref();
    // The arguments themselves are in `Verdict::final_args`; name what the rules matched on.
    let text = match args.as_object() {
        Some(obj) => obj
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        None => String::new(),
    };
    let layer = match finding.priority {
        Priority::HookBlock | Priority::HookPermissionRequired => "perm-hooks",
        _ => "perm-rules",
    };
    Step {
        layer,
        saw: format!("`{tool}` ({text})"),
        decision: resolution.decision,
        code: finding.priority.code().to_owned(),
        message: finding.message.clone(),
        rule: rule.map(|r| r.text().to_owned()),
        source: rule.map(|r| r.source().to_string()),
    }
}
