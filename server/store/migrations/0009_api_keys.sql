-- API keys created with superfluid keys create, POST /v1/keys or the desktop app's Keys tab.
--
-- Only the key's SHA-256 (hash, 32 bytes) is kept: the key itself is shown once when it is
-- created. prefix is its first characters ("sk-sf-1a2b3c"), so a list can tell keys apart.
-- models is a JSON array of the model ids the key may use ([] for every model); origins a JSON
-- array of browser origins it may be used from ([] for any the server allows). qos is the
-- highest scheduling class it may ask for ('' for any); rpm, tpm and concurrency its limits
-- (0 for none). revoked_at is '' while the key is active; a revoked key stays listed.
-- An active key's name is unique, so keys can be revoked by name.
CREATE TABLE api_keys (
    id          TEXT    NOT NULL PRIMARY KEY,
    name        TEXT    NOT NULL,
    prefix      TEXT    NOT NULL,
    hash        BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
    admin       INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
    models      TEXT    NOT NULL DEFAULT '[]',
    origins     TEXT    NOT NULL DEFAULT '[]',
    qos         TEXT    NOT NULL DEFAULT '',
    rpm         INTEGER NOT NULL DEFAULT 0 CHECK (rpm >= 0),
    tpm         INTEGER NOT NULL DEFAULT 0 CHECK (tpm >= 0),
    concurrency INTEGER NOT NULL DEFAULT 0 CHECK (concurrency >= 0),
    created_at  TEXT    NOT NULL,
    revoked_at  TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at = '';
