-- Issue 21, speed. What speculative decoding did for each request (drafted and kept tokens),
-- how many of its cached prompt tokens came from the prefix cache on disk, and why the prompt
-- missed the cache ('' for a full hit: cold, evicted, settings changed, cache off, diverged at
-- token N).
ALTER TABLE requests ADD COLUMN spec_proposed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN spec_accepted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN restored_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN cache_miss TEXT NOT NULL DEFAULT '';
-- A model's speculative decoding and attention kernel: speculative is off, ngram, draft or ''
-- (the server's --speculative); draft_model a catalog id or a .gguf path ('' none);
-- draft_tokens 0 for the engine's default; flash_attention on, off, auto or '' (auto).
ALTER TABLE model_settings ADD COLUMN speculative TEXT NOT NULL DEFAULT '';
ALTER TABLE model_settings ADD COLUMN draft_model TEXT NOT NULL DEFAULT '';
ALTER TABLE model_settings ADD COLUMN draft_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_settings ADD COLUMN flash_attention TEXT NOT NULL DEFAULT '';
