-- The kill switch: one row per cancellation; `session_id` NULL cancels every session.
-- Rows are never updated, so a reader only needs the rows after the last id it has seen.
CREATE TABLE IF NOT EXISTS agent_guard_cancellations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT,
    reason     TEXT    NOT NULL DEFAULT '',
    ts         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_guard_cancellations_session
    ON agent_guard_cancellations (session_id);
