-- The desktop app's own settings as key/value text (e.g. start_hidden = "true").
CREATE TABLE app_settings (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
