-- Which person (team mode) made each request: person_id is the person's stable id and
-- person_name the name when the request came; both '' for a request made without a person's
-- key. Usage sums requests by person too, hence the index.
ALTER TABLE requests ADD COLUMN person_id TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN person_name TEXT NOT NULL DEFAULT '';
CREATE INDEX requests_person_created_at ON requests (person_id, created_at);
