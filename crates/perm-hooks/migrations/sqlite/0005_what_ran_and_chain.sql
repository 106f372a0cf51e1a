-- Issue 28: a row says what ran and who let it, and rows are chained.
-- `client` (claude-code, codex, gemini, or empty for the runtime), the client's `call_id` (the
-- PreToolUse decision row and the PostToolUse outcome row of one call share it), the `input`
-- (redacted, bounded), the deciding `layer`, who resolved an ask or decided (`resolved_by`:
-- rule, guard, person, auto, allow-once) and how (`resolution`), and the refusal's `ref_code`.
ALTER TABLE agent_audit_log ADD COLUMN client TEXT NOT NULL DEFAULT '';
ALTER TABLE agent_audit_log ADD COLUMN call_id TEXT NOT NULL DEFAULT '';
ALTER TABLE agent_audit_log ADD COLUMN input TEXT NOT NULL DEFAULT '';
ALTER TABLE agent_audit_log ADD COLUMN layer TEXT;
ALTER TABLE agent_audit_log ADD COLUMN resolved_by TEXT;
ALTER TABLE agent_audit_log ADD COLUMN resolution TEXT;
ALTER TABLE agent_audit_log ADD COLUMN ref_code TEXT;
-- The chain: `row_hash` = SHA-256 over `prev_hash` and the row's fields; rows written before
-- this migration keep NULL and are reported as unchained by `audit --verify`.
ALTER TABLE agent_audit_log ADD COLUMN prev_hash TEXT;
ALTER TABLE agent_audit_log ADD COLUMN row_hash TEXT;
CREATE INDEX IF NOT EXISTS agent_audit_log_call ON agent_audit_log (session_id, call_id);
CREATE INDEX IF NOT EXISTS agent_audit_log_ref ON agent_audit_log (ref_code);
-- Allow-once binds a call by the hash of its input; `args` keeps only the redacted text for
-- people to read. Inputs stored raw before this migration are withheld.
ALTER TABLE agent_guard_allow_once ADD COLUMN args_hash TEXT;
UPDATE agent_guard_allow_once SET args = '[withheld: stored before redaction]';
