package core

import (
	"context"
)

// RelocateModel points a catalog model (or adapter) at its files' new place, path and
// projector ("" for none), after the desktop app moved them into another models folder; the
// caller moved the files and made sure the model is not loaded.
func (s *Service) RelocateModel(ctx context.Context, id, path, projector string) error {
	if s.mgr == nil {
		return errNoCatalog
	}
	return s.mgr.Catalog().Relocate(ctx, id, path, projector)
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
