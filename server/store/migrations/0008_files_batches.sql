-- Files (POST /v1/files) and batches (POST /v1/batches).
--
-- files: one row per stored file; the content is <data>/files/<id>, written to a temporary file,
-- synced and renamed before the row is inserted, so a row always has its content. bytes is the
-- content's length (the store's quota sums it). expires_at is '' for a file that never expires.
CREATE TABLE files (
    id         TEXT    NOT NULL PRIMARY KEY,
    filename   TEXT    NOT NULL,
    purpose    TEXT    NOT NULL,
    bytes      INTEGER NOT NULL CHECK (bytes >= 0),
    created_at TEXT    NOT NULL,
    expires_at TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX files_created_at ON files (created_at, id);
CREATE INDEX files_expires_at ON files (expires_at) WHERE expires_at <> '';

-- batches: one row per batch. status is validating, in_progress, cancelling, completed, failed
-- or cancelled. Times the batch has not reached are ''. errors is the JSON array of validation
-- errors of a failed batch; metadata the client's JSON object (or null).
-- total is the number of lines (known once validated); completed and failed count the lines
-- done so far, and the token counts sum their usage: each is updated in the transaction that
-- stores the line's result (batch_lines), so they always agree with it.
CREATE TABLE batches (
    id                TEXT    NOT NULL PRIMARY KEY,
    endpoint          TEXT    NOT NULL,
    input_file_id     TEXT    NOT NULL,
    completion_window TEXT    NOT NULL,
    status            TEXT    NOT NULL,
    model             TEXT    NOT NULL DEFAULT '',
    metadata          TEXT    CHECK (metadata IS NULL OR json_valid(metadata)),
    errors            TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(errors)),
    output_file_id    TEXT    NOT NULL DEFAULT '',
    error_file_id     TEXT    NOT NULL DEFAULT '',
    output_expires    INTEGER NOT NULL DEFAULT 0, -- seconds the output files are kept; 0: the default
    total             INTEGER NOT NULL DEFAULT 0,
    completed         INTEGER NOT NULL DEFAULT 0,
    failed            INTEGER NOT NULL DEFAULT 0,
    input_tokens      INTEGER NOT NULL DEFAULT 0,
    cached_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens     INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT    NOT NULL,
    expires_at        TEXT    NOT NULL DEFAULT '',
    in_progress_at    TEXT    NOT NULL DEFAULT '',
    finalizing_at     TEXT    NOT NULL DEFAULT '',
    completed_at      TEXT    NOT NULL DEFAULT '',
    failed_at         TEXT    NOT NULL DEFAULT '',
    cancelling_at     TEXT    NOT NULL DEFAULT '',
    cancelled_at      TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX batches_created_at ON batches (created_at, id);
CREATE INDEX batches_status ON batches (status, created_at, id);

-- batch_lines: the result of each line of a batch still running, as the line of the output
-- file (failed = 0) or the error file (failed = 1) it becomes. A line's row is its progress:
-- a line with a row is never run again. The rows go when the batch's files are written.
CREATE TABLE batch_lines (
    batch_id TEXT    NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    line     INTEGER NOT NULL,
    failed   INTEGER NOT NULL CHECK (failed IN (0, 1)),
    result   TEXT    NOT NULL CHECK (json_valid(result)),
    PRIMARY KEY (batch_id, line)
) STRICT, WITHOUT ROWID;
