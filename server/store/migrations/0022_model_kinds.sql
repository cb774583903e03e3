-- Issue 22, vision, audio and LoRA. projector is the absolute path of the multimodal projector
-- (mmproj) GGUF a model loads beside it ('' for none; capabilities then name "vision" or
-- "audio"). kind is '' for a model or 'adapter' for a LoRA adapter, which is never loaded as a
-- model; base_model is the catalog id of the model it applies to ('' when not known).
ALTER TABLE models ADD COLUMN projector TEXT NOT NULL DEFAULT '';
ALTER TABLE models ADD COLUMN kind TEXT NOT NULL DEFAULT '' CHECK (kind IN ('', 'adapter'));
ALTER TABLE models ADD COLUMN base_model TEXT NOT NULL DEFAULT '';
