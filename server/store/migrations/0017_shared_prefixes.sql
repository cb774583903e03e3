-- Team mode's shared prefixes: texts (a team system prompt) an admin marked shared, whose
-- cached tokens every person's request may reuse although the prefix cache is otherwise
-- partitioned by person. model is the one model the prefix is for ('' for every model).
CREATE TABLE shared_prefixes (
    id         TEXT NOT NULL PRIMARY KEY,
    name       TEXT NOT NULL DEFAULT '',
    model      TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL,
    created_by TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
) STRICT;
