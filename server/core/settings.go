package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/store"
)

// ErrUnsupportedRuntime is a runtime that is missing or cannot run here (400 unsupported_runtime).
var ErrUnsupportedRuntime = errors.New("unsupported runtime")

// settingsCache keeps each model's settings in memory: requests read them on every call, and
// only SetModelSettings changes them in this process.
type settingsCache struct {
	mu   sync.Mutex
	byID map[string]store.ModelSettings
}

// ModelSettings returns a catalog model's own settings (zero for none).
func (s *Service) ModelSettings(ctx context.Context, id string) (store.ModelSettings, error) {
	s.settings.mu.Lock()
	set, ok := s.settings.byID[id]
	s.settings.mu.Unlock()
	if ok || s.store == nil {
		return set, nil
	}
	set, err := s.store.ModelSettingsOf(ctx, id)
	if err != nil {
		return store.ModelSettings{ModelID: id}, err
	}
	s.settings.mu.Lock()
	defer s.settings.mu.Unlock()
	if cached, ok := s.settings.byID[id]; ok {
		return cached, nil // SetModelSettings (or another read) got there first
	}
	if s.settings.byID == nil {
		s.settings.byID = map[string]store.ModelSettings{}
	}
	s.settings.byID[id] = set
	// The first read of a model's settings hands them over (a model that joined the catalog
	// after the start), under the cache's lock so that the manager never holds other settings
	// than the cache.
	s.handOver(set)
	return set, nil
}

// SetModelSettings stores a model's settings. Sampling, cap and system prompt apply from the
// next request; a change of context, lanes, runtime, speculation, draft model or attention
// unloads the model so that its next load uses them. A draft model must share the model's
// vocabulary (checked from both files' metadata).
func (s *Service) SetModelSettings(ctx context.Context, set store.ModelSettings) error {
	m, err := s.Model(set.ModelID)
	if err != nil {
		return err
	}
	if m.Entry == nil || s.store == nil {
		return errNoCatalog
	}
	if set.ContextLength < 0 || set.Lanes < 0 || set.MaxTokens < 0 {
		return fmt.Errorf("%w: context length, lanes and max tokens cannot be negative", llm.ErrInvalidInput)
	}
	if set.Runtime != "" && s.cfg.CheckRuntime != nil {
		if err := s.cfg.CheckRuntime(set.Runtime); err != nil {
			return fmt.Errorf("%w: %v", ErrUnsupportedRuntime, err)
		}
	}
	if _, err := s.checkSpeedSettings(m, set); err != nil {
		return err
	}
	set.ModelID = m.Entry.ID
	old, _ := s.ModelSettings(ctx, set.ModelID)
	if err := s.store.PutModelSettings(ctx, set); err != nil {
		return err
	}
	s.settings.mu.Lock()
	if s.settings.byID == nil {
		s.settings.byID = map[string]store.ModelSettings{}
	}
	s.settings.byID[set.ModelID] = set
	s.handOver(set)
	s.settings.mu.Unlock()
	if old.ContextLength != set.ContextLength || old.Lanes != set.Lanes || old.Runtime != set.Runtime || !sameDuration(old.KeepAlive, set.KeepAlive) ||
		speedChanged(old, set) {
		if cat, ok := s.lib.(*catalogLibrary); ok {
			cat.forget(m.Entry) // its window is read again
		}
		return s.mgr.Reconfigure(ctx, m.Entry)
	}
	return nil
}

// handOverSettings gives the manager every catalog model's stored settings (at start, before
// any load): settings take one road, from the store through the core to the manager, which
// never calls back for them. A model that joins the catalog later has its settings handed
// over when the core first meets it (settle), before the manager is asked for its window.
func (s *Service) handOverSettings(ctx context.Context) {
	for _, e := range s.mgr.Catalog().List() {
		s.settle(ctx, e.ID)
	}
}

// settle makes sure the manager holds model id's stored settings: the first read hands them
// over (ModelSettings); a read that fails is tried again when the core next meets the model.
func (s *Service) settle(ctx context.Context, id string) {
	if _, err := s.ModelSettings(ctx, id); err != nil {
		slog.Warn("a model's settings could not be read; it loads with the server's", "model", id, "err", err)
	}
}

// handOver gives the manager what it applies of a model's settings (window, lanes, keep-alive,
// runtime, speculation, draft model, attention); the rest apply per request here. Callers hold s.settings.mu.
func (s *Service) handOver(set store.ModelSettings) {
	if s.mgr == nil {
		return
	}
	ms := models.Settings{ContextLength: set.ContextLength, Lanes: set.Lanes, KeepAlive: set.KeepAlive, Runtime: set.Runtime}
	s.speedSettings(set, &ms)
	s.mgr.SetSettings(set.ModelID, ms)
}

// forgetSettings deletes a removed model's settings: from the store, the cache and the manager.
func (s *Service) forgetSettings(ctx context.Context, id string) {
	if s.store != nil {
		_ = s.store.DeleteModelSettings(ctx, id)
	}
	s.settings.mu.Lock()
	delete(s.settings.byID, id)
	s.mgr.SetSettings(id, models.Settings{})
	s.settings.mu.Unlock()
}

// settingsOf is m's settings, or none for a model outside the catalog.
func (s *Service) settingsOf(ctx context.Context, m *Model) store.ModelSettings {
	if m.Entry == nil {
		return store.ModelSettings{}
	}
	set, _ := s.ModelSettings(ctx, m.Entry.ID)
	return set
}

// withSystemPrompt puts the model's default system prompt first unless the conversation has one.
func withSystemPrompt(msgs []chat.Message, prompt string) []chat.Message {
	if prompt == "" {
		return msgs
	}
	for _, m := range msgs {
		if m.Role == "system" {
			return msgs
		}
	}
	return append([]chat.Message{{Role: "system", Content: prompt}}, msgs...)
}

// applySettings fills what a request left unset from the model's settings.
func applySettings(gen *llm.Request, set store.ModelSettings) {
	sm := &gen.Sampling
	if sm.Temperature == nil {
		sm.Temperature = set.Temperature
	}
	if sm.TopP == nil {
		sm.TopP = set.TopP
	}
	if sm.TopK == nil {
		sm.TopK = set.TopK
	}
	if sm.MinP == nil {
		sm.MinP = set.MinP
	}
	if gen.MaxTokens == 0 {
		gen.MaxTokens = set.MaxTokens
	}
}

func sameDuration(a, b *time.Duration) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
