-- Team mode's lanes: a named slot on a device that serves one model at a time through an
-- engine (local: the built-in worker; openai: a server at a URL; command: a process superfluid
-- supervises).
--
-- config is JSON: {"url", "command", "served_model"}. upstream_key is the key sent to an openai
-- engine; it is write-only: no read API returns it (lists say only whether one is stored).
CREATE TABLE lanes (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    device       TEXT NOT NULL,
    engine       TEXT NOT NULL,
    model        TEXT NOT NULL,
    config       TEXT NOT NULL DEFAULT '{}',
    upstream_key TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
