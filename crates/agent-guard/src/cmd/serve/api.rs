//! The HTTP surface of the broker (axum). Every `/api/` route requires the bearer token; the
//! page at `/` is a static shell with no data in it, which reads the token from the URL's
//! fragment (never sent to the server) and calls the API with it.
//!
//! No cookies (so no CSRF), no CORS headers (so no other origin can read an answer), bodies
//! capped, and every refusal is JSON `{"error": ..., "code": ...}`.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use super::broker::{AnswerError, Broker, Submitted};
use super::wire::{Answer, Cancel, Decision, NewRequest, Report, Resolution, ResolvedBy, Scope};

/// The largest body any route takes (a request's arguments and trace).
pub(crate) const MAX_BODY: usize = 1024 * 1024;

const PAGE: &str = include_str!("page.html");

/// What the routes share.
#[derive(Clone)]
pub(crate) struct AppState {
    pub broker: Arc<Broker>,
    pub token: Arc<str>,
    pub audit_db: Option<PathBuf>,
    pub rate: Arc<super::listen::RateLimits>,
}

/// A refusal with a stable code.
fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into(), "code": code}))).into_response()
}

// Constant-time comparison, so the token cannot be found byte by byte from response times.
use super::wire::same;

async fn require_token(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let right = given.is_some_and(|t| same(t.as_bytes(), app.token.as_bytes()));
    if !app.rate.allow(right) {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            "too many requests for this token; slow down (see `serve --rate-limit`)",
        );
    }
    match given {
        Some(_) if right => next.run(req).await,
        Some(_) => error(
            StatusCode::UNAUTHORIZED,
            "bad-token",
            "the bearer token does not match the server's (see `serve --token-file`)",
        ),
        None => error(
            StatusCode::UNAUTHORIZED,
            "no-token",
            "every /api/ request needs `Authorization: Bearer <token>` (the token is in the server's token file)",
        ),
    }
}

/// A refusal not yet turned into a response (small, so `Result`s stay cheap).
struct ApiError(StatusCode, &'static str, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error(self.0, self.1, self.2)
    }
}

fn parse<T: DeserializeOwned>(headers: &HeaderMap, body: &Bytes) -> Result<T, ApiError> {
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json_type {
        return Err(ApiError(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "not-json",
            "send the body as `Content-Type: application/json`".to_owned(),
        ));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            "bad-json",
            format!("malformed request body: {e}"),
        )
    })
}

/// Withdraws a request whose client went away (the handler future is dropped with the
/// connection).
struct Withdraw {
    broker: Arc<Broker>,
    id: String,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.broker.withdraw(&self.id);
    }
}

async fn post_request(State(app): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let req: NewRequest = match parse(&headers, &body) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    if req.session.is_empty() || req.tool.is_empty() {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing-field",
            "`session` and `tool` must not be empty",
        );
    }
    let nonce = req.nonce.clone();
    let digest = super::wire::digest(&req.tool, &req.args, &req.change);
    // The proof lets the client tell the server's answer from anyone else's.
    let signed = |mut r: Resolution| {
        r.proof = super::wire::answer_proof(&app.token, &nonce, &r);
        Json(r).into_response()
    };
    match app.broker.submit(req) {
        Submitted::Done(r) => signed(r),
        Submitted::Waiting {
            id,
            deadline,
            answer,
        } => {
            let guard = Withdraw {
                broker: Arc::clone(&app.broker),
                id: id.clone(),
            };
            let mut answer = answer;
            let resolution = match tokio::time::timeout_at(deadline.into(), &mut answer).await {
                Ok(Ok(r)) => Some(r),
                // Deadline: expire it, unless an answer won the race for the lock, in which
                // case that answer (already announced on the stream) is the one to return.
                Ok(Err(_)) | Err(_) => app.broker.expire(&id).or_else(|| answer.try_recv().ok()),
            };
            drop(guard);
            match resolution {
                Some(r) => signed(r),
                None => signed(Resolution {
                    id,
                    session: String::new(),
                    tool: String::new(),
                    decision: Decision::Deny,
                    scope: Scope::Once,
                    by: ResolvedBy::Timeout,
                    reason: "the request ended without an answer; it is denied".to_owned(),
                    digest,
                    proof: String::new(),
                }),
            }
        }
    }
}

async fn post_answer(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer: Answer = match parse(&headers, &body) {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    match app.broker.answer(&id, answer) {
        Ok(r) => Json(r).into_response(),
        Err(AnswerError::Unknown) => error(
            StatusCode::NOT_FOUND,
            "unknown-request",
            format!("no request `{id}` (it never existed or is long gone)"),
        ),
        Err(AnswerError::AlreadyAnswered) => error(
            StatusCode::CONFLICT,
            "already-answered",
            format!("request `{id}` was already answered (or cancelled, or its client left)"),
        ),
        Err(AnswerError::OtherContent) => error(
            StatusCode::CONFLICT,
            "other-content",
            format!(
                "request `{id}` is about other content than the answer names (its digest differs); reload and look again"
            ),
        ),
        Err(AnswerError::Expired) => error(
            StatusCode::GONE,
            "past-deadline",
            format!("request `{id}` passed its deadline and was denied"),
        ),
    }
}

async fn get_pending(State(app): State<AppState>) -> Response {
    Json(
        json!({"pending": app.broker.pending(), "recent": app.broker.recent(),
                "timeout_secs": app.broker.timeout().as_secs()}),
    )
    .into_response()
}

async fn post_cancel(State(app): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let cancel: Cancel = match parse(&headers, &body) {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    if cancel.session.is_empty() {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing-field",
            "`session` must not be empty",
        );
    }
    let denied = app.broker.cancel(&cancel.session);
    // Hook sessions have no loop here to stop: each of their calls is a process that checks
    // the audit database's kill switch, so the cancel is raised there too.
    let kill_switch = match &app.audit_db {
        Some(db) => match raise_kill_switch(db, &cancel.session).await {
            Ok(()) => json!({"raised": true, "audit_db": db}),
            Err(e) => json!({"raised": false, "error": e}),
        },
        None => json!({"raised": false,
                       "error": "this server has no audit log (`serve --audit-db`): hook sessions \
                                 are not stopped, only their asks here are denied"}),
    };
    Json(
        json!({"session": cancel.session, "cancelled": true, "denied_pending": denied,
                "kill_switch": kill_switch}),
    )
    .into_response()
}

async fn raise_kill_switch(db: &std::path::Path, session: &str) -> Result<(), String> {
    let target = db.to_string_lossy();
    let switch = perm_hooks::KillSwitch::open(&target)
        .await
        .map_err(|e| format!("cannot open the kill switch in `{target}`: {e}"))?;
    switch
        .cancel_with_reason(Some(session), "cancelled from the approval page")
        .await
        .map_err(|e| format!("cannot record the cancel in `{target}`: {e}"))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChallengeParams {
    nonce: String,
}

/// `GET /challenge?nonce=N`, without the token: the proof that this server holds it. A client
/// sends its token only after this checks out, so a process squatting on the port while the
/// server is down learns nothing and can answer nothing.
async fn get_challenge(
    State(app): State<AppState>,
    params: Result<Query<ChallengeParams>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let nonce = match params {
        Ok(Query(p))
            if (32..=128).contains(&p.nonce.len())
                && p.nonce.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            p.nonce
        }
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad-nonce",
                "`nonce` must be 32 to 128 hex digits",
            );
        }
    };
    if !app.rate.allow_challenge() {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            "too many challenges; slow down",
        );
    }
    Json(json!({"proof": super::wire::challenge_proof(&app.token, &nonce)})).into_response()
}

async fn post_report(State(app): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let report: Report = match parse(&headers, &body) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    app.broker.report(report);
    StatusCode::NO_CONTENT.into_response()
}

async fn get_sessions(State(app): State<AppState>) -> Response {
    Json(json!({"sessions": app.broker.sessions()})).into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditParams {
    session: Option<String>,
    tool: Option<String>,
    status: Option<String>,
    since: Option<i64>,
    until: Option<i64>,
    /// The oldest `limit` rows.
    limit: Option<u32>,
    /// The newest `last` rows (for "recent decisions").
    last: Option<usize>,
}

async fn get_audit(
    State(app): State<AppState>,
    params: Result<Query<AuditParams>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Query(p) = match params {
        Ok(q) => q,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad-query",
                format!(
                    "bad audit filter: {e}; use session, tool, status, since, until, limit, last"
                ),
            );
        }
    };
    let Some(db) = &app.audit_db else {
        return error(
            StatusCode::NOT_FOUND,
            "no-audit-log",
            "this server was started without an audit log (`serve --audit-db FILE`)",
        );
    };
    let status = match p
        .status
        .as_deref()
        .map(str::parse::<perm_hooks::AuditStatus>)
    {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad-query",
                "`status` is one of OK, FAIL, DENIED, SESSION_STOP",
            );
        }
    };
    if !db.exists() {
        return Json(
            json!({"rows": [], "note": format!("no audit log at `{}` yet", db.display())}),
        )
        .into_response();
    }
    let reader = match perm_hooks::AuditReader::open(db).await {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "audit-unreadable",
                format!("cannot open the audit log `{}`: {e}", db.display()),
            );
        }
    };
    let query = perm_hooks::AuditQuery {
        session_id: p.session,
        tool_name: p.tool,
        status,
        since: p.since,
        until: p.until,
        limit: p.limit,
        ..perm_hooks::AuditQuery::default()
    };
    let rows = reader.query(&query).await;
    reader.close().await;
    match rows {
        Ok(mut rows) => {
            if let Some(last) = p.last {
                let skip = rows.len().saturating_sub(last);
                rows.drain(..skip);
            }
            Json(json!({"rows": rows})).into_response()
        }
        Err(e) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "audit-unreadable",
            format!("cannot read the audit log: {e}"),
        ),
    }
}

async fn get_events(State(app): State<AppState>) -> Response {
    let stream = BroadcastStream::new(app.broker.subscribe()).map(|item| {
        Ok::<_, Infallible>(match item {
            Ok(ev) => SseEvent::default()
                .event(ev.name)
                .id(ev.seq.to_string())
                .data(ev.data.to_string()),
            // A slow reader missed events: tell it to reload the pending list.
            Err(BroadcastStreamRecvError::Lagged(n)) => SseEvent::default()
                .event("Lagged")
                .data(json!({"missed": n}).to_string()),
        })
    });
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

async fn page() -> Response {
    let mut resp = axum::response::Html(PAGE).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no-route",
        "no such endpoint (see `agent-guard serve --help`)",
    )
}

/// The router.
pub(crate) fn router(app: AppState) -> Router {
    let api = Router::new()
        .route("/events", get(get_events))
        .route("/requests", post(post_request))
        .route("/permissions", get(get_pending))
        .route("/permissions/{id}", post(post_answer))
        .route("/chat/cancel", post(post_cancel))
        .route("/sessions", get(get_sessions))
        .route("/audit", get(get_audit))
        .route("/report", post(post_report))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), require_token));
    Router::new()
        .route("/", get(page))
        .route("/challenge", get(get_challenge))
        .nest("/api", api)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(app)
}
