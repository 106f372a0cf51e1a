#![doc = include_str!("../README.md")]

mod audit;
mod builtin;
mod command;
mod config;
mod error;
mod hook;
mod redact;
mod registry;

/// Re-exported so implementors need not depend on `async-trait` by version.
pub use async_trait::async_trait;
pub use audit::{
    ALLOW_ONCE_WINDOW, AUDIT_KEY_FILE, AuditLog, AuditLogHook, AuditOptions, AuditQuery,
    AuditReader, AuditRecord, AuditRow, AuditStatus, AuditTarget, CallEntry, CallKey, ChainKey,
    DEFAULT_AUDIT_DB, GRANT_KEY_FILE, GRANT_KEY_VAR, GrantOutcome, INPUT_CHARS, KillSwitch, Ledger,
    OUTPUT_PREVIEW_CHARS, Offer, Outcome, Recorded, Refusal, Resolver, STATE_DIR_VAR, Tally,
    ToolSummary, USED_JOURNAL_FILE, VerifyReport, chain_hash, default_audit_db, is_postgres_url,
    normalize_code, output_preview, set_lock_wait, state_dir, timeline,
};
pub use builtin::{
    CancellationHook, CancellationSource, CancelledSet, MetricsHook, MetricsSnapshot, ToolMetrics,
};
pub use command::{CommandHook, HookEvent, ToolMatcher};
pub use config::{CommandHookConfig, ExtraDetector, HooksConfig, RedactionConfig};
pub use error::Error;
pub use hook::{
    AgentHook, CompactContext, HookError, HookResult, PostToolUseAction, PostToolUseContext,
    PreToolUseAction, PreToolUseContext, SessionStartContext, SessionStopContext, StepContext,
    SubagentStartContext, SubagentStopContext,
};
pub use redact::{
    Redacted, RedactionHook, SecretFinding, SecretScanner, call_path, redact_secrets,
};
pub use registry::{
    Blocked, DEFAULT_HOOK_TIMEOUT, FailureKind, HookFailure, HookOptions, HookRegistry, Mutation,
    OnError, PermissionRequest, PostToolUseResult, PreToolUseResult,
};
