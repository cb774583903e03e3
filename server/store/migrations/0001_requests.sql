-- One row per chat/completion request the server answered.
-- Durations are integer microseconds; created_at is fixed-width RFC 3339 UTC
-- text with nine fractional digits, so text order is time order.
CREATE TABLE requests (
    id                  TEXT    NOT NULL PRIMARY KEY,
    model               TEXT    NOT NULL,
    endpoint            TEXT    NOT NULL,
    stream              INTEGER NOT NULL CHECK (stream IN (0, 1)),
    status              INTEGER NOT NULL,
    error               TEXT    NOT NULL DEFAULT '',
    finish_reason       TEXT    NOT NULL DEFAULT '',
    prompt_tokens       INTEGER NOT NULL DEFAULT 0,
    completion_tokens   INTEGER NOT NULL DEFAULT 0,
    cached_tokens       INTEGER NOT NULL DEFAULT 0,
    lane                INTEGER NOT NULL DEFAULT 0,
    queue_us            INTEGER NOT NULL DEFAULT 0,
    prefill_us          INTEGER NOT NULL DEFAULT 0,
    decode_us           INTEGER NOT NULL DEFAULT 0,
    total_us            INTEGER NOT NULL DEFAULT 0,
    client_disconnected INTEGER NOT NULL DEFAULT 0 CHECK (client_disconnected IN (0, 1)),
    created_at          TEXT    NOT NULL
) STRICT;

CREATE INDEX requests_created_at ON requests (created_at);
