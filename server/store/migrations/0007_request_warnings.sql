-- What the server noticed about a reply that was still served: e.g. text that looks like a
-- tool call but did not parse, kept as content.
ALTER TABLE requests ADD COLUMN warning TEXT NOT NULL DEFAULT '';
