-- Issue 28: every secondary index is paid by every row the writer appends, and only
-- `agent-guard audit` reads these (no hook queries the log). Kept: by session (the timeline)
-- and by time (`--since`, `audit stats`). A refusal's reference is looked up through an index
-- of the rows that have one (most rows have none, so appending them costs the index nothing).
-- Dropped: by tool and by call id (`--tool` and a reference's sibling rows scan instead; the
-- siblings are found through the session index).
DROP INDEX IF EXISTS agent_audit_log_tool;
DROP INDEX IF EXISTS agent_audit_log_call;
DROP INDEX IF EXISTS agent_audit_log_ref;
CREATE INDEX IF NOT EXISTS agent_audit_log_ref ON agent_audit_log (ref_code)
    WHERE ref_code IS NOT NULL;
