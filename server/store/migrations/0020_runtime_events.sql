-- The runtime's load history (team mode's admin pages): each model load begun, load done,
-- failed load and unload, with the lanes serving the model then ('' for none) and a detail (a
-- failure's reason). Lane switches are not repeated here: the audit log has them (lane.*).
-- Only the newest rows are kept (store.AppendRuntimeEvent prunes), so the table stays small.
CREATE TABLE runtime_events (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     TEXT NOT NULL,
    event  TEXT NOT NULL,
    lane   TEXT NOT NULL DEFAULT '',
    model  TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX runtime_events_at ON runtime_events (at);
