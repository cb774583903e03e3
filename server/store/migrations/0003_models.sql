-- The model catalog: one row per model a client can name. path is the absolute path of the
-- GGUF file (the first part of a split model). source says where it came from: 'local' (a file
-- registered in place with superfluid add), 'huggingface' (pulled: repo, file, revision and the
-- verified sha256 are set), 'bundled' (shipped inside the binary) or 'alias' (an /api/copy of
-- alias_of, sharing its file). capabilities is a JSON array of names such as "completion".
-- Times are fixed-width RFC 3339 UTC text with nine fractional digits; last_used_at is '' until
-- the model first serves a request.
CREATE TABLE models (
    id              TEXT    NOT NULL PRIMARY KEY,
    path            TEXT    NOT NULL,
    source          TEXT    NOT NULL CHECK (source IN ('local', 'huggingface', 'bundled', 'alias')),
    repo            TEXT    NOT NULL DEFAULT '',
    file            TEXT    NOT NULL DEFAULT '',
    revision        TEXT    NOT NULL DEFAULT '',
    sha256          TEXT    NOT NULL DEFAULT '',
    alias_of        TEXT    NOT NULL DEFAULT '',
    size            INTEGER NOT NULL DEFAULT 0,
    architecture    TEXT    NOT NULL DEFAULT '',
    parameter_count INTEGER NOT NULL DEFAULT 0,
    quantization    TEXT    NOT NULL DEFAULT '',
    context_length  INTEGER NOT NULL DEFAULT 0,
    capabilities    TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(capabilities)),
    added_at        TEXT    NOT NULL,
    last_used_at    TEXT    NOT NULL DEFAULT ''
) STRICT;
