-- Team mode's token quotas: what one person, or one key, may spend in a UTC day and a UTC
-- month (prompt and completion tokens, cached prompt tokens at the server's fraction).
--
-- owner_kind is person or key, owner_id the person's or the key's id. daily_tokens and
-- monthly_tokens: NULL is "not set" (a person then has the server's --quota-daily-tokens /
-- --quota-monthly-tokens; a key, no quota of its own), 0 is unlimited (a person exempted from
-- the server's default), N the most tokens. A row whose two fields are NULL is deleted instead.
CREATE TABLE token_quotas (
    owner_kind     TEXT    NOT NULL CHECK (owner_kind IN ('person', 'key')),
    owner_id       TEXT    NOT NULL,
    daily_tokens   INTEGER CHECK (daily_tokens >= 0),
    monthly_tokens INTEGER CHECK (monthly_tokens >= 0),
    updated_at     TEXT    NOT NULL,
    PRIMARY KEY (owner_kind, owner_id)
) STRICT;

-- Admission sums a person's and a key's tokens since the start of the UTC month at every
-- request: these indexes hold the token counts beside (owner, created_at), so the sums read
-- the index alone, never the rows. They replace the indexes of 0010 and 0014, which are
-- their prefixes (every query those served, these serve).
DROP INDEX requests_person_created_at;
CREATE INDEX requests_person_tokens ON requests (person_id, created_at, prompt_tokens, cached_tokens, completion_tokens);
DROP INDEX requests_key_created_at;
CREATE INDEX requests_key_tokens ON requests (key_id, created_at, prompt_tokens, cached_tokens, completion_tokens);
