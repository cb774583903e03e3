-- Issue 22, LoRA adapters. The adapters a request ran with, as a JSON array of {"id", "scale"}
-- ('' for the bare model).
ALTER TABLE requests ADD COLUMN adapters TEXT NOT NULL DEFAULT '';
