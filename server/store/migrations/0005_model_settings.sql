-- Per-model settings from the desktop app, applied the same way to the three APIs and the
-- playground; a request's own values still win. Zero, '' and NULL mean "the server's default".
-- keep_alive_ms: NULL default, 0 unload after each request, negative never unload.
CREATE TABLE model_settings (
    model_id       TEXT    NOT NULL PRIMARY KEY,
    context_length INTEGER NOT NULL DEFAULT 0,
    lanes          INTEGER NOT NULL DEFAULT 0,
    keep_alive_ms  INTEGER,
    runtime        TEXT    NOT NULL DEFAULT '',
    temperature    REAL,
    top_p          REAL,
    top_k          INTEGER,
    min_p          REAL,
    max_tokens     INTEGER NOT NULL DEFAULT 0,
    system_prompt  TEXT    NOT NULL DEFAULT ''
) STRICT;
