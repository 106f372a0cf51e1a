-- Layer 3 additions: the permission decision, its reason code and a millisecond timestamp.
ALTER TABLE agent_audit_log ADD COLUMN decision TEXT;
ALTER TABLE agent_audit_log ADD COLUMN reason_code TEXT;
ALTER TABLE agent_audit_log ADD COLUMN ts INTEGER NOT NULL DEFAULT 0;
-- Rows from the seed's design only have `created_at` (UTC, second resolution).
UPDATE agent_audit_log
   SET ts = CAST(strftime('%s', created_at) AS INTEGER) * 1000
 WHERE ts = 0 AND created_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS agent_audit_log_session ON agent_audit_log (session_id, id);
CREATE INDEX IF NOT EXISTS agent_audit_log_tool ON agent_audit_log (tool_name, id);
CREATE INDEX IF NOT EXISTS agent_audit_log_ts ON agent_audit_log (ts);
