package core

import (
	"context"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/models"
)

// UnloadAll unloads every loaded catalog model at once and returns when their workers are
// gone: requests in flight get drain to finish, then are stopped (the desktop app's Stop
// gives them a second, as quitting does). The drain is the unload's own: a context would only
// stop the waiting and leave the unloads draining for the manager's DrainTimeout.
func (s *Service) UnloadAll(drain time.Duration) {
	if s.mgr == nil {
		return
	}
	var wg sync.WaitGroup
	for _, e := range s.mgr.Catalog().List() {
		if s.mgr.Status(e).State != models.StateUnloaded {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = s.mgr.UnloadWithin(context.Background(), e.ID, drain)
			}()
		}
	}
	wg.Wait()
}
