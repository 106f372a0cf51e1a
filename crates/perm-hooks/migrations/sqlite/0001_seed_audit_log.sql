-- The seed's table, as the original agent created it. `IF NOT EXISTS` lets a database written
-- by the seed's design (which never recorded migrations) be adopted as version 1.
CREATE TABLE IF NOT EXISTS agent_audit_log (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id     TEXT    NOT NULL,
    step           INTEGER NOT NULL,
    tool_name      TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    elapsed_ms     INTEGER NOT NULL,
    output_preview TEXT    NOT NULL,
    agent_name     TEXT    NOT NULL,
    created_at     TEXT    DEFAULT CURRENT_TIMESTAMP
);
