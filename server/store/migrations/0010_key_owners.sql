-- Which API key made each request, file, batch and stored response.
--
-- key_id is the key's stable id ("key-<hex>" for a stored key, "policy:<name>" for a
-- --key-policy key, "api-key" for --api-key) and key_name its name when the request came; both
-- are '' for a request made while no key was configured. Usage sums requests by key, model and
-- day (UTC), hence the index.
ALTER TABLE requests ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN key_name TEXT NOT NULL DEFAULT '';
CREATE INDEX requests_key_created_at ON requests (key_id, created_at);

-- owner is the id of the key that created the row ('' when made without a key); a key sees only
-- its own files, batches and stored responses. A batch keeps its owner's name as well, for the
-- request records of its lines.
ALTER TABLE files ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN owner_name TEXT NOT NULL DEFAULT '';
ALTER TABLE responses ADD COLUMN owner TEXT NOT NULL DEFAULT '';
