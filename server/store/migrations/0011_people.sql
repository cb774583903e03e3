-- Team mode (superfluid serve --team): the people who use the server, the owner of each API key
-- and the audit log of every administrative write.
--
-- A person's name is unique without regard to case (Alice and alice are one person);
-- password_hash is an argon2id PHC string ($argon2id$v=19$m=...,t=...,p=...$salt$hash), never
-- the password. role is admin or member; state is active or disabled (a disabled person's keys
-- stop working and their password is refused; the row stays, so the audit log and usage keep
-- naming them).
CREATE TABLE people (
    id            TEXT NOT NULL PRIMARY KEY,
    name          TEXT NOT NULL COLLATE NOCASE UNIQUE,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    state         TEXT NOT NULL CHECK (state IN ('active', 'disabled')),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;

-- person_id is the person a key belongs to (sk-ss- keys made for a person); NULL for the keys
-- of single-user mode, which belong to nobody.
ALTER TABLE api_keys ADD COLUMN person_id TEXT REFERENCES people (id);

-- One row per administrative write: at is when, actor_person / actor_name the person who did it
-- ('' when no person: the CLI, a key of nobody, a loopback request without keys), actor_key the
-- name of the key the request carried ('' for none), action what was done ("user.create",
-- "user.disable", "key.create", ...), target what it was done to (a person's or a key's name),
-- detail a JSON object of the rest (never a password or a key).
CREATE TABLE audit_log (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at           TEXT    NOT NULL,
    actor_person TEXT    NOT NULL DEFAULT '',
    actor_name   TEXT    NOT NULL DEFAULT '',
    actor_key    TEXT    NOT NULL DEFAULT '',
    action       TEXT    NOT NULL,
    target       TEXT    NOT NULL DEFAULT '',
    detail       TEXT    NOT NULL DEFAULT '{}'
) STRICT;

CREATE INDEX audit_log_at ON audit_log (at);
