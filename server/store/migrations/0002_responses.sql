-- Responses API state: one row per response created with store=true (the default).
-- input is the request's own input items and output the response's output items, both as
-- the OpenAI dialect encodes them (JSON arrays); body is the whole response object as served,
-- for GET /v1/responses/{id}. previous_response_id links a conversation's responses; it is
-- '' for the first one and deliberately no foreign key: deleting a response removes its row
-- (and its content) even when later responses continue from it.
-- created_at is fixed-width RFC 3339 UTC text with nine fractional digits.
CREATE TABLE responses (
    id                   TEXT    NOT NULL PRIMARY KEY,
    model                TEXT    NOT NULL,
    created_at           TEXT    NOT NULL,
    previous_response_id TEXT    NOT NULL DEFAULT '',
    instructions         TEXT,
    status               TEXT    NOT NULL,
    input                TEXT    NOT NULL CHECK (json_valid(input)),
    output               TEXT    NOT NULL CHECK (json_valid(output)),
    body                 TEXT    NOT NULL CHECK (json_valid(body)),
    input_tokens         INTEGER NOT NULL DEFAULT 0,
    output_tokens        INTEGER NOT NULL DEFAULT 0,
    cached_tokens        INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX responses_created_at ON responses (created_at);
