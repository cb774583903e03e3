-- Storages: places where models and files live. kind is local (a folder), s3 (an
-- S3-compatible bucket: endpoint, bucket, region, prefix, access_key, secret), smb or nfs (a
-- share already mounted at path). secret (an S3 secret key) is write-only: no read API returns
-- it (lists say only whether one is stored). shared = 1: every person may use it; people is a
-- JSON list of the ids of the persons who may besides.
CREATE TABLE storages (
    id         TEXT NOT NULL PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    kind       TEXT NOT NULL,
    path       TEXT NOT NULL DEFAULT '',
    endpoint   TEXT NOT NULL DEFAULT '',
    bucket     TEXT NOT NULL DEFAULT '',
    region     TEXT NOT NULL DEFAULT '',
    prefix     TEXT NOT NULL DEFAULT '',
    access_key TEXT NOT NULL DEFAULT '',
    secret     TEXT NOT NULL DEFAULT '',
    shared     INTEGER NOT NULL DEFAULT 0,
    people     TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
