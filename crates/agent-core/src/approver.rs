//! Asking a person: the `Approver` trait and the 120 s rule.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::verdict::Step;

/// The default time a person has to answer (the spec's 120 s); silence is a deny.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

/// One question to a person.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The session.
    pub session_id: String,
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The final arguments.
    pub args: Value,
    /// Why approval is needed (the deciding rule or hook).
    pub message: String,
    /// The agent asking (`lead`, or a subagent's name).
    pub agent_name: String,
    /// Every layer's step of the verdict that asked (the `explain` trace), for an approver that
    /// shows a person why.
    pub steps: Vec<Step>,
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Approve,
    /// Do not.
    Deny,
    /// Nobody could be asked: the approver itself failed (e.g. an approval server went away
    /// while the call waited). A deny, with its own reason code.
    Unavailable,
}

/// How an Ask ended, with a stable code for the audit row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalOutcome {
    /// The person approved.
    Approved,
    /// The person refused.
    Refused,
    /// Nobody answered in time.
    TimedOut,
    /// The context is silent (a subagent): nobody can be asked.
    Silent,
    /// No approver is configured.
    NoApprover,
    /// The approver could not be reached or failed while the call waited.
    Unreachable,
    /// The approver panicked: a crash is a deny, never a crash of the whole turn.
    Failed,
}

impl ApprovalOutcome {
    /// Whether the call may run.
    pub fn is_approved(self) -> bool {
        self == ApprovalOutcome::Approved
    }

    /// The stable reason code.
    pub fn code(self) -> &'static str {
        match self {
            ApprovalOutcome::Approved => "ask-approved",
            ApprovalOutcome::Refused => "ask-refused",
            ApprovalOutcome::TimedOut => "ask-timeout",
            ApprovalOutcome::Silent => "ask-silent-context",
            ApprovalOutcome::NoApprover => "ask-no-approver",
            ApprovalOutcome::Unreachable => "ask-approver-unreachable",
            ApprovalOutcome::Failed => "ask-approver-failed",
        }
    }

    /// A message a person can act on.
    pub fn message(self, tool: &str) -> String {
        match self {
            ApprovalOutcome::Approved => format!("`{tool}` was approved"),
            ApprovalOutcome::Refused => format!("`{tool}` was refused by the user"),
            ApprovalOutcome::TimedOut => {
                format!("`{tool}` needed approval and nobody answered in time")
            }
            ApprovalOutcome::Silent => {
                format!("`{tool}` needs approval, which a silent (subagent) context cannot ask for")
            }
            ApprovalOutcome::NoApprover => {
                format!("`{tool}` needs approval and no approver is configured")
            }
            ApprovalOutcome::Unreachable => format!(
                "`{tool}` needed approval and the approver could not be reached (or went away) while it waited"
            ),
            ApprovalOutcome::Failed => {
                format!("`{tool}` needed approval and the approver failed; treated as a refusal")
            }
        }
    }
}

/// Asks a person whether a call may run.
#[async_trait]
pub trait Approver: Send + Sync {
    /// The answer for `request`. Taking longer than the executor's timeout counts as a deny.
    async fn approve(&self, request: &ApprovalRequest) -> Approval;
}

/// Asks `approver` with the spec's rules: silent = deny at once, no answer within `timeout` =
/// deny.
pub async fn ask(
    approver: Option<&dyn Approver>,
    silent: bool,
    request: &ApprovalRequest,
    timeout: Duration,
) -> ApprovalOutcome {
    if silent {
        return ApprovalOutcome::Silent;
    }
    let Some(approver) = approver else {
        return ApprovalOutcome::NoApprover;
    };
    match tokio::time::timeout(timeout, CatchPanic(approver.approve(request))).await {
        Ok(Some(Approval::Approve)) => ApprovalOutcome::Approved,
        Ok(Some(Approval::Deny)) => ApprovalOutcome::Refused,
        Ok(None) => ApprovalOutcome::Failed,
        Ok(Some(Approval::Unavailable)) => ApprovalOutcome::Unreachable,
        Err(_) => ApprovalOutcome::TimedOut,
    }
}

/// Polls an approver's answer and turns a panic into `None`, so a crashing approver (a UI
/// bridge, a plugin) refuses the call instead of unwinding through the executor.
struct CatchPanic<'a>(Pin<Box<dyn Future<Output = Approval> + Send + 'a>>);

impl Future for CatchPanic<'_> {
    type Output = Option<Approval>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Approval>> {
        let answer = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| answer.poll(cx))) {
            Ok(Poll::Ready(approval)) => Poll::Ready(Some(approval)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(None),
        }
    }
}

/// Answers every request the same way (for tests, `--yes` and `--no` style front ends).
#[derive(Debug, Clone, Copy)]
pub struct FixedApprover(pub Approval);

#[async_trait]
impl Approver for FixedApprover {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.0
    }
}

/// Forwards each request with a oneshot reply channel, so a server can answer from another task
/// (the spec's `PermissionRequest` + oneshot design). A dropped reply is a deny.
#[derive(Debug, Clone)]
pub struct ChannelApprover {
    tx: mpsc::UnboundedSender<(ApprovalRequest, oneshot::Sender<Approval>)>,
}

/// The receiving end of a [`ChannelApprover`].
pub type ApprovalReceiver = mpsc::UnboundedReceiver<(ApprovalRequest, oneshot::Sender<Approval>)>;

impl ChannelApprover {
    /// An approver and the receiver requests arrive on.
    pub fn new() -> (ChannelApprover, ApprovalReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ChannelApprover { tx }, rx)
    }
}

#[async_trait]
impl Approver for ChannelApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let (reply, answer) = oneshot::channel();
        if self.tx.send((request.clone(), reply)).is_err() {
            return Approval::Deny;
        }
        answer.await.unwrap_or(Approval::Deny)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> ApprovalRequest {
        ApprovalRequest {
            session_id: "s".into(),
            call_id: "c".into(),
            tool: "file_write".into(),
            args: Value::Null,
            message: "m".into(),
            agent_name: "lead".into(),
            steps: Vec::new(),
        }
    }

    struct Never;
    #[async_trait]
    impl Approver for Never {
        async fn approve(&self, _r: &ApprovalRequest) -> Approval {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn silent_denies_without_asking() {
        let a = FixedApprover(Approval::Approve);
        assert_eq!(
            ask(Some(&a), true, &req(), DEFAULT_APPROVAL_TIMEOUT).await,
            ApprovalOutcome::Silent
        );
    }

    #[tokio::test]
    async fn an_unreachable_approver_is_a_deny_with_its_own_code() {
        let a = FixedApprover(Approval::Unavailable);
        let out = ask(Some(&a), false, &req(), DEFAULT_APPROVAL_TIMEOUT).await;
        assert_eq!(out, ApprovalOutcome::Unreachable);
        assert!(!out.is_approved());
        assert_eq!(out.code(), "ask-approver-unreachable");
    }

    #[tokio::test]
    async fn timeout_is_a_deny() {
        let out = ask(Some(&Never), false, &req(), Duration::from_millis(20)).await;
        assert_eq!(out, ApprovalOutcome::TimedOut);
        assert!(!out.is_approved());
    }

    #[tokio::test]
    async fn channel_approver_round_trip_and_drop() {
        let (a, mut rx) = ChannelApprover::new();
        let answer = tokio::spawn(async move {
            let (r, reply) = rx.recv().await.unwrap();
            assert_eq!(r.tool, "file_write");
            reply.send(Approval::Approve).unwrap();
            let (_r, reply) = rx.recv().await.unwrap();
            drop(reply);
        });
        assert_eq!(
            ask(Some(&a), false, &req(), DEFAULT_APPROVAL_TIMEOUT).await,
            ApprovalOutcome::Approved
        );
        assert_eq!(
            ask(Some(&a), false, &req(), DEFAULT_APPROVAL_TIMEOUT).await,
            ApprovalOutcome::Refused
        );
        answer.await.unwrap();
        assert_eq!(
            ask(None, false, &req(), DEFAULT_APPROVAL_TIMEOUT).await,
            ApprovalOutcome::NoApprover
        );
    }
}
