-- Issue 23, first run. The downloads the desktop app started and has not finished: a pull
-- survives quitting the app and resumes at the next start (the partial file stays on disk).
CREATE TABLE pending_pulls (
    reference  TEXT PRIMARY KEY,
    started_at INTEGER NOT NULL -- unix seconds
);
