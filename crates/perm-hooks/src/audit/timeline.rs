//! Calls reconstructed from rows: a hook's decision row (`ALLOWED`/`ASKED`/`DENIED`) and the
//! outcome row its client reported (`OK`/`FAIL`) become one entry, paired by the client's call
//! id, or, for a client that sends none (Gemini), by session, tool and input in order.

use std::collections::{HashMap, VecDeque};

use perm_rules::Decision;
use serde::{Deserialize, Serialize};

use super::{AuditRecord, AuditStatus, Resolver};

/// What came of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// It ran and succeeded.
    Ran,
    /// It ran and failed.
    Failed,
    /// The guard (or the person it asked) refused it.
    Refused,
    /// Allowed or asked, and no run was reported: a person refused it at the client's
    /// prompt, the client was stopped, or it is still running.
    NotRun,
    /// The session's end (`SESSION_STOP`).
    SessionStop,
}

impl Outcome {
    /// The text shown and exported.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ran => "ran",
            Outcome::Failed => "failed",
            Outcome::Refused => "refused",
            Outcome::NotRun => "not-run",
            Outcome::SessionStop => "session-stop",
        }
    }
}

/// One call as the log tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallEntry {
    /// The ids of its rows.
    pub row_ids: Vec<i64>,
    /// When it was judged (or, without a decision row, when it ran), ms since the epoch.
    pub ts: i64,
    /// The session.
    pub session_id: String,
    /// The client (empty: the guard's runtime).
    pub client: String,
    /// The agent.
    pub agent_name: String,
    /// The tool.
    pub tool_name: String,
    /// The client's call id.
    pub call_id: String,
    /// The input (redacted).
    pub input: String,
    /// The guard's decision.
    pub decision: Option<Decision>,
    /// The deciding layer.
    pub layer: Option<String>,
    /// The reason code.
    pub reason_code: Option<String>,
    /// Who decided or answered the ask.
    pub resolved_by: Option<Resolver>,
    /// How.
    pub resolution: Option<String>,
    /// The refusal's reference.
    pub ref_code: Option<String>,
    /// What came of it.
    pub outcome: Outcome,
    /// Run time: the reported one, else from the decision to the report.
    pub elapsed_ms: u64,
    /// The output preview (redacted), or the refusal's message.
    pub preview: String,
}

#[derive(Hash, PartialEq, Eq)]
enum Key {
    Id(String, String),
    Input(String, String, String),
}

fn key(r: &AuditRecord) -> Key {
    let row = &r.row;
    if row.call_id.is_empty() {
        Key::Input(
            row.session_id.clone(),
            row.tool_name.clone(),
            row.input.clone(),
        )
    } else {
        Key::Id(row.session_id.clone(), row.call_id.clone())
    }
}

fn entry(r: &AuditRecord, outcome: Outcome) -> CallEntry {
    let row = &r.row;
    CallEntry {
        row_ids: vec![r.id],
        ts: row.ts,
        session_id: row.session_id.clone(),
        client: row.client.clone(),
        agent_name: row.agent_name.clone(),
        tool_name: row.tool_name.clone(),
        call_id: row.call_id.clone(),
        input: row.input.clone(),
        decision: row.decision,
        layer: row.layer.clone(),
        reason_code: row.reason_code.clone(),
        resolved_by: row.resolved_by,
        resolution: row.resolution.clone(),
        ref_code: row.ref_code.clone(),
        outcome,
        elapsed_ms: row.elapsed_ms,
        preview: row.output_preview.clone(),
    }
}

/// The calls `records` (in id order) describe, in the order they were judged.
pub fn timeline(records: &[AuditRecord]) -> Vec<CallEntry> {
    let mut out: Vec<CallEntry> = Vec::new();
    let mut pending: HashMap<Key, VecDeque<usize>> = HashMap::new();
    for r in records {
        let row = &r.row;
        match row.status {
            AuditStatus::Allowed | AuditStatus::Asked => {
                pending.entry(key(r)).or_default().push_back(out.len());
                out.push(entry(r, Outcome::NotRun));
            }
            AuditStatus::Denied => out.push(entry(r, Outcome::Refused)),
            AuditStatus::SessionStop => out.push(entry(r, Outcome::SessionStop)),
            AuditStatus::Ok | AuditStatus::Fail => {
                let outcome = if row.status == AuditStatus::Ok {
                    Outcome::Ran
                } else {
                    Outcome::Failed
                };
                let found = pending
                    .get_mut(&key(r))
                    .and_then(VecDeque::pop_front)
                    .and_then(|i| out.get_mut(i));
                match found {
                    Some(call) => {
                        call.row_ids.push(r.id);
                        call.outcome = outcome;
                        call.elapsed_ms = if row.elapsed_ms > 0 {
                            row.elapsed_ms
                        } else {
                            u64::try_from(row.ts.saturating_sub(call.ts)).unwrap_or(0)
                        };
                        call.preview = row.output_preview.clone();
                        if call.decision == Some(Decision::Ask) && call.resolved_by.is_none() {
                            // The guard asked and the call ran: a person allowed it at the
                            // client's own prompt.
                            call.resolved_by = Some(Resolver::Person);
                            call.resolution = Some("allowed at the client's prompt".to_owned());
                        }
                    }
                    None => out.push(entry(r, outcome)),
                }
            }
        }
    }
    out
}
