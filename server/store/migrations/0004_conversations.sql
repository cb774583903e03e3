-- Playground conversations of the desktop app, saved after every reply so they can be listed
-- and reopened. messages is a JSON array of {"role", "content"}; system is the system prompt.
-- Times are fixed-width RFC 3339 UTC text with nine fractional digits.
CREATE TABLE conversations (
    id         TEXT NOT NULL PRIMARY KEY,
    title      TEXT NOT NULL,
    model      TEXT NOT NULL,
    system     TEXT NOT NULL DEFAULT '',
    messages   TEXT NOT NULL CHECK (json_valid(messages)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE INDEX conversations_updated_at ON conversations (updated_at);
