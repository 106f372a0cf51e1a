-- Layer 3 additions, as in the SQLite set: decision, reason code, millisecond timestamp.
ALTER TABLE agent_audit_log ADD COLUMN decision TEXT;
ALTER TABLE agent_audit_log ADD COLUMN reason_code TEXT;
ALTER TABLE agent_audit_log ADD COLUMN ts BIGINT NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS agent_audit_log_session ON agent_audit_log (session_id, id);
CREATE INDEX IF NOT EXISTS agent_audit_log_tool ON agent_audit_log (tool_name, id);
CREATE INDEX IF NOT EXISTS agent_audit_log_ts ON agent_audit_log (ts);
