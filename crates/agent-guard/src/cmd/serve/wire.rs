//! The JSON the approval server and its clients exchange. One definition for both sides, so the
//! `run`/hook clients and the server cannot drift apart.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One layer's step of the verdict that asked (agent-core's `Step`, as owned strings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireStep {
    pub layer: String,
    #[serde(default)]
    pub saw: String,
    pub decision: String,
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl From<&agent_core::Step> for WireStep {
    fn from(s: &agent_core::Step) -> WireStep {
        WireStep {
            layer: s.layer.to_owned(),
            saw: s.saw.clone(),
            decision: s.decision.as_str().to_owned(),
            code: s.code.clone(),
            message: s.message.clone(),
            rule: s.rule.clone(),
            source: s.source.clone(),
        }
    }
}

/// `POST /api/requests`: a client's Ask. The response comes when a person (or the deadline)
/// answers it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewRequest {
    /// The session the call belongs to.
    pub session: String,
    /// The agent asking (`lead` or a subagent).
    #[serde(default)]
    pub agent: String,
    /// The client (`run`, `claude-code`, `codex`, ...).
    #[serde(default)]
    pub client: String,
    /// The call's id in its session.
    #[serde(default)]
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The final arguments (redacted by the server before anyone sees them).
    pub args: Value,
    /// Why the guard asks (the deciding step, in words).
    #[serde(default)]
    pub message: String,
    /// The whole layer trace.
    #[serde(default)]
    pub steps: Vec<WireStep>,
    /// How long the client can wait (its own hook timeout); the server's deadline is the
    /// smaller of this and its own.
    #[serde(default)]
    pub wait_ms: Option<u64>,
    /// Everything that runs if this is allowed, shown whole: the client's whole tool input
    /// (every file of a patch, every edit) and the content of each file the command names (the
    /// script `sh run.sh` runs). An answer binds the digest of it ([`digest`]).
    #[serde(default)]
    pub change: Vec<Shown>,
    /// The client's fresh random challenge; the server's answer carries a proof over it
    /// ([`answer_proof`]), so no one but the server can say "allow".
    #[serde(default)]
    pub nonce: String,
}

/// One part of what a person approves: a label (a path, `tool input`) and its full text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Shown {
    pub label: String,
    pub text: String,
}

/// The answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Decision {
    Allow,
    Deny,
}

/// How long an answer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Scope {
    /// This call only.
    #[default]
    Once,
    /// This call and every identical call (same session, tool and arguments) after it.
    Session,
}

/// `POST /api/permissions/{id}`: a person's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    pub decision: Decision,
    #[serde(default)]
    pub scope: Scope,
    /// The digest of what the person saw (the page sends it): an answer about other content
    /// is refused (409).
    #[serde(default)]
    pub digest: Option<String>,
}

/// Who ended a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ResolvedBy {
    /// A person answered it.
    User,
    /// Nobody answered before the deadline (a deny).
    Timeout,
    /// An earlier "for session" answer covered it.
    SessionGrant,
    /// Its session was cancelled (a deny).
    Cancelled,
    /// The waiting client went away; nobody is left to run it.
    Withdrawn,
    /// The server stopped (a deny).
    ServerStopped,
    /// Redaction would hide part of the call from the person (a private key block with no
    /// END line masks to the end of the text): what cannot be seen cannot be approved (a deny).
    Unreviewable,
}

/// How a request ended: the body of the `POST /api/requests` response and of the
/// `PermissionResolved` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Resolution {
    pub id: String,
    pub session: String,
    pub tool: String,
    pub decision: Decision,
    pub scope: Scope,
    pub by: ResolvedBy,
    /// A sentence a person can act on.
    pub reason: String,
    /// The digest of what was approved ([`digest`]): the client checks it is its own.
    #[serde(default)]
    pub digest: String,
    /// The server's proof over the client's nonce, the id, the digest and the decision
    /// ([`answer_proof`]).
    #[serde(default)]
    pub proof: String,
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A canonical text for `v` (object keys sorted), so equal arguments give equal digests
/// whatever the map order.
pub(crate) fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = o.get(k) {
                    canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// SHA-256 (hex) of exactly what a person approves: the tool, its canonical arguments and every
/// part of the change, each length-prefixed so no two different requests share a text.
pub(crate) fn digest(tool: &str, args: &Value, change: &[Shown]) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    let mut part = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    part(tool);
    let mut text = String::new();
    canonical(args, &mut text);
    part(&text);
    for shown in change {
        part(&shown.label);
        part(&shown.text);
    }
    hex(&h.finalize())
}

fn mac(token: &str, parts: &[&str]) -> String {
    use hmac::{KeyInit as _, Mac as _};
    let Ok(mut m) = HmacSha256::new_from_slice(token.as_bytes()) else {
        return String::new();
    };
    for p in parts {
        m.update(&(p.len() as u64).to_le_bytes());
        m.update(p.as_bytes());
    }
    hex(&m.finalize().into_bytes())
}

/// The server's answer to `GET /challenge?nonce=N`: proves it holds the token without sending
/// it, so a client sends the token to nothing but the server.
pub(crate) fn challenge_proof(token: &str, nonce: &str) -> String {
    mac(token, &["agent-guard serve challenge", nonce])
}

/// The server's proof on a resolution: binds the client's nonce, the request id, the digest of
/// what was approved and the decision.
pub(crate) fn answer_proof(token: &str, nonce: &str, r: &Resolution) -> String {
    let decision = match r.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
    };
    mac(
        token,
        &[
            "agent-guard serve answer",
            nonce,
            &r.id,
            &r.digest,
            decision,
        ],
    )
}

/// Constant-time comparison of two proofs (or tokens).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh random value (32 bytes from the kernel, hex): tokens, nonces, id prefixes.
pub(crate) fn random_hex(n: usize) -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| anyhow::anyhow!("cannot read random bytes from /dev/urandom: {e}"))?;
    Ok(hex(&bytes))
}

/// `POST /api/report`: what a client tells the server about its session besides Asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
pub(crate) enum Report {
    /// A session began (it shows in `GET /api/sessions` before its first Ask).
    SessionStart {
        session: String,
        #[serde(default)]
        agent: String,
        #[serde(default)]
        client: String,
    },
    /// A call finished (or was refused).
    ToolResult {
        session: String,
        call_id: String,
        tool: String,
        is_error: bool,
        #[serde(default)]
        code: Option<String>,
    },
    /// The session ended.
    SessionStop {
        session: String,
        #[serde(default)]
        reason: String,
    },
}

/// `POST /api/chat/cancel`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Cancel {
    pub session: String,
}

/// The bearer token: read from a file that is this user's own and private (owner is the
/// effective user, no access for group or others, in a directory nobody else may write), trimmed.
/// A file that is someone else's, even 0600, is someone else's token.
pub(crate) fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    check_private(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read the token file `{}`: {e}", path.display()))?;
    let token = text.trim().to_owned();
    anyhow::ensure!(
        token.len() >= 16 && token.chars().all(|c| c.is_ascii_graphic()),
        "the token file `{}` must hold one token of at least 16 printable characters",
        path.display()
    );
    Ok(token)
}

/// Refuses a token file that is not this user's own and private, or whose directory someone
/// else may write (they could swap the file).
pub(crate) fn check_private(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let me = rustix::process::geteuid().as_raw();
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| anyhow::anyhow!("cannot stat the token file `{}`: {e}", path.display()))?;
    anyhow::ensure!(
        meta.file_type().is_file(),
        "the token file `{}` is not a regular file (a symlink is refused)",
        path.display()
    );
    anyhow::ensure!(
        meta.uid() == me,
        "the token file `{}` belongs to uid {}, not to you (uid {me}): it is not your server's token",
        path.display(),
        meta.uid()
    );
    let mode = meta.permissions().mode();
    anyhow::ensure!(
        mode & 0o077 == 0,
        "the token file `{}` is readable by others (mode {:o}); `chmod 600` it",
        path.display(),
        mode & 0o777
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let d = std::fs::metadata(dir)
            .map_err(|e| anyhow::anyhow!("cannot stat `{}`: {e}", dir.display()))?;
        let sticky = d.permissions().mode() & 0o1000 != 0;
        anyhow::ensure!(
            (d.uid() == me || d.uid() == 0) && (d.permissions().mode() & 0o022 == 0 || sticky),
            "the token file's directory `{}` may be written by someone else; keep the token in a \
             directory of your own (0700)",
            dir.display()
        );
    }
    Ok(())
}

/// Where `serve` keeps its token and clients look for it when told nothing else:
/// `$HOME/.agent-guard/serve.token`. Without an absolute `HOME` there is no default (never the
/// current directory: that is the project, readable by the agent).
pub(crate) fn default_token_file() -> anyhow::Result<std::path::PathBuf> {
    let home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .filter(|h| h.is_absolute())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "HOME is not set (or not absolute): name the token file (`--token-file`, \
                 `--approve-token-file`)"
            )
        })?;
    Ok(home.join(".agent-guard").join("serve.token"))
}
