package core

import (
	"context"
	"log/slog"
)

// RelocateModel points a catalog model (or adapter) at its files' new place, path and
// projector ("" for none), after the desktop app moved them into another models folder; the
// caller moved the files and made sure the model is not loaded.
func (s *Service) RelocateModel(ctx context.Context, id, path, projector string) error {
	if s.mgr == nil {
		return errNoCatalog
	}
	if err := s.mgr.Catalog().Relocate(ctx, id, path, projector); err != nil {
		return err
	}
	s.redraft(ctx)
	return nil
}

// redraft hands the manager again the settings of the models whose draft model (a catalog
// model, named by id) has moved: their workers would be started with its old path, gone once
// the move removes it, and fail to load. A runner made before names it too: it is made again.
func (s *Service) redraft(ctx context.Context) {
	var moved []string
	s.settings.mu.Lock()
	for id, set := range s.settings.byID {
		if set.DraftModel == "" {
			continue
		}
		if path, err := s.draftPath(set.DraftModel); err == nil && path != s.mgr.Settings(id).DraftModelPath {
			s.handOver(set)
			moved = append(moved, id)
		}
	}
	s.settings.mu.Unlock()
	for _, id := range moved {
		if e, err := s.mgr.Catalog().Lookup(id); err == nil {
			if err := s.mgr.Reconfigure(ctx, e); err != nil {
				slog.Warn("a model's draft model moved; its next load may not find it", "model", id, "err", err)
			}
		}
	}
}

// SetModelsDir makes dir the models folder from now on (pulls go there, rm deletes files only
// from there), once the desktop app moved the folder's models into it.
func (s *Service) SetModelsDir(dir string) error {
	if s.mgr == nil {
		return errNoCatalog
	}
	s.mgr.Catalog().SetDir(dir)
	return nil
}
