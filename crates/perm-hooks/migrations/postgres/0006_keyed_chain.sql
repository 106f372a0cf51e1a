-- Issue 28: the chain is keyed. `row_hash` is now an HMAC-SHA256 under the user's key
-- (`~/.agent-guard/audit.key`), and `chain_key` names that key (a public id: a hash of it), so
-- `audit --verify` tells a row linked under another key from a changed one. Rows linked before
-- (plain SHA-256, `chain_key` NULL) are re-linked under the key by the first writer that opens
-- the database, once their unkeyed chain has checked; see `AuditLog::open`.
ALTER TABLE agent_audit_log ADD COLUMN chain_key TEXT;
