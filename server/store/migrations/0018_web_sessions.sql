-- The web API's cookie sessions (server/web/sessions): only the SHA-256 of a session's id is
-- kept (id_hash, hex), never the id. created_at is when the person signed in (the absolute
-- expiry counts from it, across rotations); last_seen_at moves with use (the idle expiry);
-- issued_at is when this id was issued (rotation after an hour of use). A rotated-out id keeps
-- working until grace_until ('' while it is current).
CREATE TABLE web_sessions (
    id_hash      TEXT NOT NULL PRIMARY KEY,
    person_id    TEXT NOT NULL,
    csrf_token   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    issued_at    TEXT NOT NULL,
    grace_until  TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX web_sessions_person ON web_sessions (person_id);

-- Failed sign-ins, for the sliding lockout: account is the name tried, lowercased; address the
-- client's IP.
CREATE TABLE web_signin_failures (
    at      TEXT NOT NULL,
    account TEXT NOT NULL,
    address TEXT NOT NULL
) STRICT;
CREATE INDEX web_signin_failures_account ON web_signin_failures (account, at);
CREATE INDEX web_signin_failures_address ON web_signin_failures (address, at);
