-- As in the SQLite set: hook mode's runtime limits and allow-once grants (each hook call is its
-- own process, so what the runtime keeps in memory lives here).
-- One row per session: the calls judged so far and the run of identical consecutive calls.
-- Updated by one `INSERT .. ON CONFLICT DO UPDATE .. RETURNING` per call, so concurrent hook
-- processes of one session never lose a count.
CREATE TABLE IF NOT EXISTS agent_guard_session_calls (
    session_id TEXT    PRIMARY KEY,
    calls      BIGINT  NOT NULL,
    last_tool  TEXT    NOT NULL,
    last_hash  TEXT    NOT NULL,
    run        BIGINT  NOT NULL,
    ts         BIGINT  NOT NULL
);
-- One row per refusal a hook answered: the code shown in its reason, the exact call it binds
-- to, whether allow-once may lift it (and why not), and once granted its expiry, the grant's
-- HMAC (under a key outside the database, so a row written by other means is not a grant)
-- and its use.
CREATE TABLE IF NOT EXISTS agent_guard_allow_once (
    code        TEXT    PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    tool_name   TEXT    NOT NULL,
    args        TEXT    NOT NULL,
    cwd         TEXT    NOT NULL,
    reason_code TEXT    NOT NULL,
    summary     TEXT    NOT NULL,
    liftable    BIGINT  NOT NULL,
    not_liftable_because TEXT NOT NULL DEFAULT '',
    created_at  BIGINT  NOT NULL,
    granted_at  BIGINT,
    expires_at  BIGINT,
    grant_mac   TEXT,
    used_at     BIGINT
);
CREATE INDEX IF NOT EXISTS agent_guard_allow_once_call
    ON agent_guard_allow_once (session_id, tool_name);
