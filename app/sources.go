package app

import (
	"path/filepath"

	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/source"
)

// defaultHFEndpoint is the Hugging Face endpoint when HF_ENDPOINT is not set.
const defaultHFEndpoint = hf.DefaultEndpoint

// newSources are the places models are pulled from, tried in order: Hugging Face (cfg's
// endpoint and token; its download locks live in the models folder). This is the one file of
// app that knows a source by name: a new source is registered here.
func newSources(cfg Config, modelsDir string) source.List {
	return source.List{
		hf.NewSource(hf.Config{Endpoint: cfg.HFEndpoint, Token: cfg.HFToken, LockDir: filepath.Join(modelsDir, ".locks")}),
	}
}

// catalogSources are cat's sources: the catalog answers to the names they know its models by
// ("OWNER/REPO:QUANT" for "hf.co/OWNER/REPO:QUANT"), from before serve resolves its model.
func catalogSources(cfg Config, cat *models.Catalog) models.Source {
	l := newSources(cfg, cat.Dir())
	cat.NameBy(l)
	return l
}

// isReference reports whether name is a reference one of the sources pulls rather than a
// catalog id or a path (reading a reference needs no endpoint).
func isReference(name string) bool {
	_, err := newSources(Config{}, "").Parse(name)
	return err == nil
}

// searcher is the first of src's sources that can be searched (the Discover tab's), or nil.
func searcher(src models.Source) source.Searcher {
	l, _ := src.(source.List)
	for _, s := range l {
		if se, ok := s.(source.Searcher); ok {
			return se
		}
	}
	return nil
}
