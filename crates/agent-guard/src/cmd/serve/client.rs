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

use super::wire::{Decision, NewRequest, Report, Resolution, WireStep};

/// Where the client finds the server's token: an explicit file, `AGENT_GUARD_SERVE_TOKEN`, or
/// the default token file.
pub(crate) fn client_token(file: Option<&std::path::Path>) -> anyhow::Result<String> {
    if let Some(f) = file {
        return super::wire::read_token(f);
    }
    if let Ok(t) = std::env::var("AGENT_GUARD_SERVE_TOKEN") {
        let t = t.trim().to_owned();
        anyhow::ensure!(
            t.len() >= 16,
            "AGENT_GUARD_SERVE_TOKEN is shorter than 16 characters"
        );
        return Ok(t);
    }
    let f: PathBuf = super::wire::default_token_file();
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
        let http = reqwest::Client::builder()
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

    /// Fails clearly when the server is down or the token is wrong, before a session starts.
    pub(crate) async fn check(&self) -> anyhow::Result<()> {
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

    /// Posts an Ask and waits for its resolution. `Err` is the reason nobody could answer.
    pub(crate) async fn ask(&self, req: &NewRequest) -> Result<Resolution, String> {
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
        serde_json::from_slice(&body).map_err(|e| {
            format!(
                "the approval server `{}` sent a malformed answer: {e}",
                self.base
            )
        })
    }

    /// Best effort: a report that cannot be delivered changes no decision.
    pub(crate) async fn report(&self, report: &Report) {
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
    }
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

/// For the hooks' `--approve-via`: posts the Ask and turns the verdict into the person's
/// answer. The `approver` step goes first, so it is the step that decided; every failure
/// (no token, unreachable, a restart, the deadline) is a Deny with its own code.
pub(crate) fn decide_hook_ask(
    mut verdict: agent_core::Verdict,
    url: &str,
    client: &str,
    event: &crate::cmd::hook::Event,
    args: &crate::cmd::hook::HookArgs,
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
    let wait = Duration::from_secs(args.approve_wait_secs.max(1));
    let message = verdict
        .deciding()
        .map(|s| format!("[{}] {}", s.layer, s.message))
        .unwrap_or_default();
    let req = NewRequest {
        session: if event.session_id.is_empty() {
            format!("{client}-hook")
        } else {
            event.session_id.clone()
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
    };
    let answer = client_token(args.approve_token_file.as_deref())
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
