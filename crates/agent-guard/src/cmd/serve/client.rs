//! The clients of the approval server: [`HttpApprover`] (`run --approve http://ADDR`), the
//! hooks' `--approve-via`, and what `run` reports besides its Asks (tool results, the session's
//! end, and a watch for `POST /api/chat/cancel`).
//!
//! Kept in the CLI crate beside the server, not in agent-core: the wire types are shared with
//! the server and only the CLI speaks this protocol; agent-core only knows the `Approver` trait.
//!
//! Every failure fails closed: an unreachable server, a dropped connection (a restart), a bad
//! token or a malformed answer is a deny whose reason says which.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentEvent, Approval, ApprovalRequest, Approver, EventSink};
use anyhow::Context as _;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::wire::{Decision, NewRequest, Report, Resolution, Shown, WireStep};

/// Where the client finds the server's token: an explicit file, else the default token file.
/// Never the environment: the agent's tools inherit it (`printenv` is a read-only command).
pub(crate) fn client_token(file: Option<&std::path::Path>) -> anyhow::Result<String> {
    if let Some(f) = file {
        return super::wire::read_token(f);
    }
    let f: PathBuf = super::wire::default_token_file()?;
    super::wire::read_token(&f)
        .with_context(|| "no token for the approval server (use --approve-token-file)")
}

/// A connection to one approval server.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalClient {
    base: String,
    token: String,
    http: reqwest::Client,
    client: String,
}

impl ApprovalClient {
    /// A client of the server at `url` (`http://host:port`).
    pub(crate) fn new(url: &str, token: String, client: &str) -> anyhow::Result<ApprovalClient> {
        let parsed = url::Url::parse(url)
            .map_err(|e| anyhow::anyhow!("bad approval server URL `{url}`: {e}"))?;
        anyhow::ensure!(
            parsed.scheme() == "http" && parsed.host().is_some(),
            "the approval server URL must be `http://HOST:PORT`, not `{url}`"
        );
        // Never through a proxy: `http_proxy` would carry the token and the answer through
        // whatever it names, loopback included.
        let http = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .context("cannot build the HTTP client")?;
        Ok(ApprovalClient {
            base: url.trim_end_matches('/').to_owned(),
            token,
            http,
            client: client.to_owned(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Makes whatever listens at the address prove that it holds the token (`GET /challenge`
    /// with a fresh nonce) before the token is sent to it: a process squatting on the port while
    /// the server is down gets neither the token nor a say.
    pub(crate) async fn authenticate_server(&self) -> Result<(), String> {
        let nonce = super::wire::random_hex(32).map_err(|e| e.to_string())?;
        let resp = self
            .http
            .get(self.url(&format!("/challenge?nonce={nonce}")))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|e| format!("cannot reach the approval server `{}`: {e}", self.base))?;
        let body: serde_json::Value = resp.json().await.unwrap_or_default();
        let proof = body
            .get("proof")
            .and_then(|p| p.as_str())
            .unwrap_or_default();
        let expected = super::wire::challenge_proof(&self.token, &nonce);
        if !super::wire::same(proof.as_bytes(), expected.as_bytes()) {
            return Err(format!(
                "whatever listens at `{}` did not prove it holds the approval server's token: it \
                 is not your `agent-guard serve` (or not with this token file); nothing was sent \
                 to it",
                self.base
            ));
        }
        Ok(())
    }

    /// Fails clearly when the server is down or the token is wrong, before a session starts.
    pub(crate) async fn check(&self) -> anyhow::Result<()> {
        self.authenticate_server()
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        let resp = self
            .http
            .get(self.url("/api/sessions"))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!("cannot reach the approval server `{}`: {e}", self.base)
            })?;
        let status = resp.status();
        anyhow::ensure!(
            status.is_success(),
            "the approval server `{}` refused us ({status}): {}",
            self.base,
            resp.text().await.unwrap_or_default()
        );
        Ok(())
    }

    /// Posts an Ask and waits for its resolution. `Err` is the reason nobody could answer. The
    /// server is authenticated first, and its answer must carry its proof over this request's
    /// fresh nonce and the digest of exactly what this client asked about.
    pub(crate) async fn ask(&self, req: &NewRequest) -> Result<Resolution, String> {
        self.authenticate_server().await?;
        let mut req = req.clone();
        req.nonce = super::wire::random_hex(32).map_err(|e| e.to_string())?;
        let req = &req;
        let resp = self
            .http
            .post(self.url("/api/requests"))
            .bearer_auth(&self.token)
            .json(req)
            .send()
            .await
            .map_err(|e| format!("cannot reach the approval server `{}`: {e}", self.base))?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Err(format!(
                "the approval server `{}` refused the request ({status}): {body}",
                self.base
            ));
        }
        // A restart drops the connection mid-body; that is an error here, never an allow.
        let body = resp.bytes().await.map_err(|e| {
            format!(
                "the approval server `{}` went away while the call waited: {e}",
                self.base
            )
        })?;
        let resolution: Resolution = serde_json::from_slice(&body).map_err(|e| {
            format!(
                "the approval server `{}` sent a malformed answer: {e}",
                self.base
            )
        })?;
        let digest = super::wire::digest(&req.tool, &req.args, &req.change);
        let proof = super::wire::answer_proof(&self.token, &req.nonce, &resolution);
        if resolution.digest != digest
            || !super::wire::same(resolution.proof.as_bytes(), proof.as_bytes())
        {
            return Err(format!(
                "the answer from `{}` is not the server's answer to this call (its proof or the \
                 digest of what was approved does not match); it is ignored",
                self.base
            ));
        }
        Ok(resolution)
    }

    /// Best effort: a report that cannot be delivered changes no decision.
    pub(crate) async fn report(&self, report: &Report) {
        if self.authenticate_server().await.is_err() {
            return;
        }
        let _ = self
            .http
            .post(self.url("/api/report"))
            .bearer_auth(&self.token)
            .json(report)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
    }

    /// [`ApprovalClient::watch_cancel`] on an owned client, for `tokio::spawn`.
    pub(crate) async fn watch_cancel_owned(
        self: Arc<Self>,
        session: String,
        cancel: CancellationToken,
    ) {
        self.watch_cancel(session, cancel).await;
    }

    /// Follows the event stream and cancels `cancel` when `session` is cancelled on the
    /// server. Returns when the stream ends.
    pub(crate) async fn watch_cancel(&self, session: String, cancel: CancellationToken) {
        if self.authenticate_server().await.is_err() {
            return;
        }
        let Ok(mut resp) = self
            .http
            .get(self.url("/api/events"))
            .bearer_auth(&self.token)
            .send()
            .await
        else {
            return;
        };
        let mut buf = String::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                if let Some((name, data)) = parse_frame(&frame)
                    && name == "SessionCancelled"
                    && serde_json::from_str::<serde_json::Value>(&data)
                        .ok()
                        .and_then(|v| v.get("session").and_then(|s| s.as_str().map(str::to_owned)))
                        .is_some_and(|s| s == session)
                {
                    cancel.cancel();
                    return;
                }
            }
        }
    }
}

/// `(event name, data)` of one SSE frame; comments and keep-alives give `None`.
pub(crate) fn parse_frame(frame: &str) -> Option<(String, String)> {
    let mut name = None;
    let mut data = Vec::new();
    for line in frame.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            name = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
        }
    }
    Some((name?, data.join("\n")))
}

/// Answers the executor's Asks through an approval server.
pub(crate) struct HttpApprover {
    client: Arc<ApprovalClient>,
    wait: Duration,
    cancel: Option<CancellationToken>,
}

impl HttpApprover {
    /// Asks through `client`; `wait` is the executor's own approval timeout (the server's
    /// deadline is never later).
    pub(crate) fn new(client: Arc<ApprovalClient>, wait: Duration) -> HttpApprover {
        HttpApprover {
            client,
            wait,
            cancel: None,
        }
    }

    /// Cancels `token` when the server denies an Ask because its session was cancelled, so
    /// the run stops at once rather than at the next event the watcher reads.
    pub(crate) fn cancelling(mut self, token: CancellationToken) -> HttpApprover {
        self.cancel = Some(token);
        self
    }
}

/// The wire form of an executor's Ask.
pub(crate) fn new_request(request: &ApprovalRequest, client: &str, wait: Duration) -> NewRequest {
    NewRequest {
        session: request.session_id.clone(),
        agent: request.agent_name.clone(),
        client: client.to_owned(),
        call_id: request.call_id.clone(),
        tool: request.tool.clone(),
        args: request.args.clone(),
        message: request.message.clone(),
        steps: request.steps.iter().map(WireStep::from).collect(),
        wait_ms: Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
        change: named_files(&request.args, None),
        nonce: String::new(),
    }
}

/// Largest file whose content is shown and bound (bigger ones are bound by a note that they
/// could not be shown, so the answer cannot be given for them blind: the person sees the note).
const MAX_SHOWN_FILE: u64 = 256 * 1024;
/// At most this many named files are shown.
const MAX_SHOWN_FILES: usize = 16;

/// The files a command names, each with its content: what `sh run.sh`, `python3 tool.py` or
/// `make -f build.mk` runs is in a file, and a person approving the command approves that
/// content. Every word of the command that names an existing regular file counts (a class, not
/// a list of interpreters: an argument that is not code only adds to what is shown).
fn named_files(args: &serde_json::Value, cwd: Option<&std::path::Path>) -> Vec<Shown> {
    let Some(command) = args.get("command").and_then(serde_json::Value::as_str) else {
        return Vec::new();
    };
    let base = args
        .get("working_dir")
        .or_else(|| args.get("cwd"))
        .and_then(serde_json::Value::as_str)
        .map(std::path::PathBuf::from)
        .or_else(|| cwd.map(std::path::Path::to_path_buf))
        .or_else(|| std::env::current_dir().ok());
    let mut out: Vec<Shown> = Vec::new();
    for word in command.split(|c: char| c.is_whitespace() || ";|&()<>`".contains(c)) {
        let word = word.trim_matches(|c| c == '\'' || c == '"');
        if word.is_empty() || word.starts_with('-') || out.len() >= MAX_SHOWN_FILES {
            continue;
        }
        let path = match &base {
            Some(b) => b.join(word),
            None => std::path::PathBuf::from(word),
        };
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() || out.iter().any(|s| s.label == word) {
            continue;
        }
        let text = if meta.len() > MAX_SHOWN_FILE {
            // Not shown, but still bound: its hash is part of the digest.
            let hash = std::fs::read(&path).map(|b| {
                use sha2::Digest as _;
                sha2::Sha256::digest(&b)
                    .iter()
                    .map(|x| format!("{x:02x}"))
                    .collect::<String>()
            });
            match hash {
                Ok(h) => format!("({} bytes, too large to show here; sha256 {h})", meta.len()),
                Err(e) => format!("(cannot be read: {e})"),
            }
        } else {
            match std::fs::read(&path) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => format!("(cannot be read: {e})"),
            }
        };
        out.push(Shown {
            label: word.to_owned(),
            text,
        });
    }
    out
}

#[async_trait::async_trait]
impl Approver for HttpApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let req = new_request(request, &self.client.client, self.wait);
        match self.client.ask(&req).await {
            Ok(r) if r.decision == Decision::Allow => Approval::Approve,
            Ok(r) => {
                eprintln!("agent-guard: `{}` denied: {}", request.tool, r.reason);
                if r.by == super::wire::ResolvedBy::Cancelled
                    && let Some(token) = &self.cancel
                {
                    token.cancel();
                }
                Approval::Deny
            }
            Err(why) => {
                eprintln!("agent-guard: `{}` denied: {why}", request.tool);
                Approval::Unavailable
            }
        }
    }
}

/// Forwards the run's session start, tool results (the `ToolResult` event) and end to the
/// server, in order, from one task.
pub(crate) struct ReportSink {
    // `None` ends the delivery task after everything before it was sent.
    tx: mpsc::UnboundedSender<Option<Report>>,
    session: String,
}

impl ReportSink {
    /// A sink for `session` (it reports the session's start at once), and the task that
    /// delivers its reports; the task ends when the sink is dropped.
    pub(crate) fn new(
        client: Arc<ApprovalClient>,
        session: String,
    ) -> (ReportSink, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Option<Report>>();
        let task = tokio::spawn(async move {
            while let Some(Some(r)) = rx.recv().await {
                client.report(&r).await;
            }
        });
        let _ = tx.send(Some(Report::SessionStart {
            session: session.clone(),
            agent: "lead".to_owned(),
            client: "run".to_owned(),
        }));
        (ReportSink { tx, session }, task)
    }

    /// Reports the session's end; the delivery task finishes after it.
    pub(crate) fn stop(&self, reason: &str) {
        let _ = self.tx.send(Some(Report::SessionStop {
            session: self.session.clone(),
            reason: reason.to_owned(),
        }));
        let _ = self.tx.send(None);
    }
}

impl EventSink for ReportSink {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::ToolResult {
            call_id,
            tool,
            is_error,
            code,
        } = event
        {
            let _ = self.tx.send(Some(Report::ToolResult {
                session: self.session.clone(),
                call_id,
                tool,
                is_error,
                code,
            }));
        }
    }
}

/// What a hook's Ask hands the approval server: the parts of the client's event and of the
/// hook's options the request carries. The hook builds it, so this module never imports the
/// hook (the hook calls down into the client, one way).
pub(crate) struct HookAsk<'a> {
    /// The client's session id (empty: none given).
    pub session_id: &'a str,
    /// The whole event, for the client's own fields (`agent_type`, `tool_use_id`).
    pub raw: &'a serde_json::Map<String, serde_json::Value>,
    /// The client's tool name and input, shown whole to the person.
    pub tool_name: Option<&'a str>,
    pub tool_input: Option<&'a serde_json::Value>,
    /// Where the client's relative paths resolve.
    pub cwd: Option<&'a std::path::Path>,
    /// `--approve-wait`, in seconds.
    pub wait_secs: u64,
    /// `--approve-token-file`.
    pub token_file: Option<&'a std::path::Path>,
}

/// For the hooks' `--approve-via`: posts the Ask and turns the verdict into the person's
/// answer. The `approver` step goes first, so it is the step that decided; every failure
/// (no token, unreachable, a restart, the deadline) is a Deny with its own code.
pub(crate) fn decide_hook_ask(
    mut verdict: agent_core::Verdict,
    url: &str,
    client: &str,
    event: &HookAsk<'_>,
) -> agent_core::Verdict {
    use perm_rules::Decision as D;
    let raw = |key: &str| {
        event
            .raw
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let wait = Duration::from_secs(event.wait_secs.max(1));
    let message = verdict
        .deciding()
        .map(|s| format!("[{}] {}", s.layer, s.message))
        .unwrap_or_default();
    let req = NewRequest {
        session: if event.session_id.is_empty() {
            format!("{client}-hook")
        } else {
            event.session_id.to_owned()
        },
        agent: match raw("agent_type") {
            a if a.is_empty() => "lead".to_owned(),
            a => a,
        },
        client: client.to_owned(),
        call_id: raw("tool_use_id"),
        tool: verdict.tool.clone(),
        args: verdict.final_args.clone(),
        message,
        steps: verdict.steps.iter().map(WireStep::from).collect(),
        wait_ms: Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
        change: hook_change(&verdict, event),
        nonce: String::new(),
    };
    let answer = client_token(event.token_file)
        .map_err(|e| format!("{e:#}"))
        .and_then(|token| ask_blocking(url, token, client, req, wait));
    let (decision, code, message) = match answer {
        Ok(r) if r.decision == Decision::Allow => (D::Allow, "ask-approved", r.reason),
        Ok(r) if r.by == super::wire::ResolvedBy::Timeout => (D::Deny, "ask-timeout", r.reason),
        Ok(r) => (D::Deny, "ask-refused", r.reason),
        Err(why) => (D::Deny, "ask-approver-unreachable", why),
    };
    verdict.decision = decision;
    verdict.steps.insert(
        0,
        agent_core::Step {
            layer: "approver",
            saw: format!("asked a person through `{url}`"),
            decision,
            code: code.to_owned(),
            message,
            rule: None,
            source: None,
        },
    );
    verdict
}

/// What a hook's person approves: the client's whole tool input (the judged call may be one
/// file of a patch, one edit of several), and the files its command names.
fn hook_change(verdict: &agent_core::Verdict, event: &HookAsk<'_>) -> Vec<Shown> {
    let mut change = Vec::new();
    if let Some(input) = event.tool_input {
        let tool = event.tool_name.unwrap_or("tool");
        let text = match input
            .get("command")
            .or_else(|| input.get("patch"))
            .or_else(|| input.get("input"))
        {
            // A patch or a command is text: shown as itself, not as an escaped JSON string.
            Some(serde_json::Value::String(s))
                if input.as_object().is_some_and(|o| o.len() == 1) =>
            {
                s.clone()
            }
            _ => serde_json::to_string_pretty(input).unwrap_or_default(),
        };
        change.push(Shown {
            label: format!("{tool} input (all of it)"),
            text,
        });
    }
    change.extend(named_files(&verdict.final_args, event.cwd));
    change
}

/// For the hooks: asks the server about one call and blocks until the answer (or `wait`).
/// `Err` is the reason nobody could answer.
pub(crate) fn ask_blocking(
    url: &str,
    token: String,
    client: &str,
    req: NewRequest,
    wait: Duration,
) -> Result<Resolution, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the HTTP client: {e}"))?;
    let api = ApprovalClient::new(url, token, client).map_err(|e| e.to_string())?;
    rt.block_on(async {
        match tokio::time::timeout(wait, api.ask(&req)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "nobody answered within the hook's {} s",
                wait.as_secs()
            )),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_frames_give_their_name_and_data_and_comments_give_nothing() {
        assert_eq!(
            parse_frame("event: SessionCancelled\nid: 7\ndata: {\"session\":\"s\"}\n\n"),
            Some((
                "SessionCancelled".to_owned(),
                "{\"session\":\"s\"}".to_owned()
            ))
        );
        assert_eq!(
            parse_frame("event: x\ndata: a\ndata: b\n\n"),
            Some(("x".to_owned(), "a\nb".to_owned()))
        );
        assert_eq!(parse_frame(":\n\n"), None);
    }

    #[test]
    fn only_plain_http_urls_with_a_host_are_accepted() {
        let token = "0123456789abcdef".to_owned();
        assert!(ApprovalClient::new("http://127.0.0.1:8917", token.clone(), "t").is_ok());
        for bad in ["https://x:1", "ftp://x", "127.0.0.1:8917", "http://"] {
            assert!(
                ApprovalClient::new(bad, token.clone(), "t").is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_executor_ask_keeps_its_trace_and_the_wait_on_the_wire() {
        let req = ApprovalRequest {
            session_id: "s".into(),
            call_id: "c".into(),
            tool: "file_write".into(),
            args: serde_json::json!({"file_path": "a"}),
            message: "m".into(),
            agent_name: "lead".into(),
            steps: vec![],
        };
        let wire = new_request(&req, "run", Duration::from_secs(120));
        assert_eq!(
            (wire.session.as_str(), wire.agent.as_str(), wire.wait_ms),
            ("s", "lead", Some(120_000))
        );
    }
}
