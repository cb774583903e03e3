// Package prefixes is team mode's shared prefixes: texts an admin marks shared (a team system
// prompt, optionally for one model), the one exception to the prefix cache being partitioned by
// person. A request whose prompt begins with one may reuse the tokens of it that another
// person's request computed, and nothing past them (llm.Request.SharedPrefix; the engine
// compares tokens, not text).
//
// The Service is what the CLI (superfluid prefixes) and the admin API
// (/v1/admin/shared-prefixes) call; each write is audited through the By its caller names (the
// people's audit log: this package does not import package people). It is also the core's
// core.SharedPrefixes, answering from a copy of the stored prefixes that it rereads every
// Refresh, so a prefix added by the CLI reaches a running server within seconds.
package prefixes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/superfluid/superfluid/server/store"
)

// Limits of what may be registered.
const (
	// MaxText is the longest shared text, in bytes (32 KiB: a long system prompt, well under
	// the request body cap). Every request of the model compares its prompt with it.
	MaxText = 32 << 10
	// MaxCount is the most shared prefixes stored at once.
	MaxCount = 64
	// MaxName is the longest name, in bytes.
	MaxName = 64
)

// DefaultRefresh is how long SharedTexts answers from its copy before reading the store again.
const DefaultRefresh = 2 * time.Second

// Errors of the Service.
var (
	// ErrInvalid: an empty or too long text, a bad name or model, or too many prefixes.
	ErrInvalid = errors.New("invalid shared prefix")
	// ErrNotFound: no shared prefix has that id.
	ErrNotFound = errors.New("no such shared prefix")
)

// Audit actions.
const (
	ActionAdd    = "shared_prefix.add"
	ActionRemove = "shared_prefix.remove"
)

// Prefix is a stored shared prefix.
type Prefix = store.SharedPrefix

// NewPrefix is what Add registers.
type NewPrefix struct {
	// Text is the shared text, exactly as the prompts hold it (not trimmed: spaces are tokens).
	Text string
	// Name labels it in lists ("" for none).
	Name string
	// Model is the id of the one model it is for; "" is every model.
	Model string
}

// By is who makes a change: the name a prefix records as its creator, and where the change's
// audit entry goes (the router and the CLI bind people.Service.Record to the request's actor;
// package people stays theirs alone).
type By struct {
	// Name is the person's name, or where the change came from ("cli").
	Name string
	// Record appends an audit entry: action on target, with detail; nil records none.
	Record func(ctx context.Context, action, target string, detail map[string]any) error
}

// Config is what a Service needs.
type Config struct {
	Store *store.Store
	// Refresh is how long SharedTexts trusts its copy (0: DefaultRefresh).
	Refresh time.Duration
}

// Service registers, lists and removes shared prefixes.
type Service struct {
	cfg Config

	mu     sync.Mutex
	copy   []Prefix
	readAt time.Time // when copy was read; zero: never, or a write made it stale
}

// New returns a Service over cfg.Store.
func New(cfg Config) *Service {
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	return &Service{cfg: cfg}
}

// Add registers a shared prefix, audited as by's.
func (s *Service) Add(ctx context.Context, by By, np NewPrefix) (Prefix, error) {
	if err := check(np); err != nil {
		return Prefix{}, err
	}
	all, err := s.cfg.Store.SharedPrefixes(ctx)
	if err != nil {
		return Prefix{}, err
	}
	if len(all) >= MaxCount {
		return Prefix{}, fmt.Errorf("%w: %d shared prefixes are registered, the most there may be; remove one first", ErrInvalid, len(all))
	}
	p := Prefix{ID: newID(), Name: np.Name, Model: strings.TrimSpace(np.Model), Text: np.Text,
		CreatedBy: by.Name, CreatedAt: time.Now().UTC()}
	if err := s.cfg.Store.InsertSharedPrefix(ctx, p); err != nil {
		return Prefix{}, err
	}
	s.stale()
	return p, s.record(ctx, by, ActionAdd, p)
}

// List is every shared prefix, oldest first.
func (s *Service) List(ctx context.Context) ([]Prefix, error) {
	return s.cfg.Store.SharedPrefixes(ctx)
}

// Remove unregisters the shared prefix id, audited as by's; ErrNotFound when there is none.
func (s *Service) Remove(ctx context.Context, by By, id string) (Prefix, error) {
	id = strings.TrimSpace(id)
	all, err := s.cfg.Store.SharedPrefixes(ctx)
	if err != nil {
		return Prefix{}, err
	}
	for _, p := range all {
		if p.ID != id {
			continue
		}
		if err := s.cfg.Store.DeleteSharedPrefix(ctx, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				break // removed meanwhile
			}
			return Prefix{}, err
		}
		s.stale()
		return p, s.record(ctx, by, ActionRemove, p)
	}
	return Prefix{}, fmt.Errorf("%w %q: superfluid prefixes list shows the ids", ErrNotFound, id)
}

// SharedTexts lists the texts shared for the model whose id is model: those registered for
// every model and those for it (core.SharedPrefixes). A store that cannot be read leaves the
// last copy in use.
func (s *Service) SharedTexts(ctx context.Context, model string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readAt.IsZero() || time.Since(s.readAt) >= s.cfg.Refresh {
		all, err := s.cfg.Store.SharedPrefixes(ctx)
		if err != nil {
			slog.Warn("reading the shared prefixes", "err", err)
		} else {
			s.copy = all
		}
		s.readAt = time.Now()
	}
	var texts []string
	for _, p := range s.copy {
		if p.Model == "" || strings.EqualFold(p.Model, model) {
			texts = append(texts, p.Text)
		}
	}
	return texts
}

// stale makes the next SharedTexts read the store: this process sees its own writes at once.
func (s *Service) stale() {
	s.mu.Lock()
	s.readAt = time.Time{}
	s.mu.Unlock()
}

func (s *Service) record(ctx context.Context, by By, action string, p Prefix) error {
	if by.Record == nil {
		return nil
	}
	// The text itself is not secret, but may be long: the log keeps its size.
	return by.Record(ctx, action, p.ID, map[string]any{"name": p.Name, "model": p.Model, "bytes": len(p.Text)})
}

func check(np NewPrefix) error {
	switch {
	case strings.TrimSpace(np.Text) == "":
		return fmt.Errorf("%w: the text is empty; give the text the prompts begin with (a team system prompt)", ErrInvalid)
	case len(np.Text) > MaxText:
		return fmt.Errorf("%w: the text is %d bytes, more than %d", ErrInvalid, len(np.Text), MaxText)
	case !utf8.ValidString(np.Text):
		return fmt.Errorf("%w: the text is not valid UTF-8", ErrInvalid)
	case len(np.Name) > MaxName || !utf8.ValidString(np.Name) || strings.ContainsAny(np.Name, "\n\r\t"):
		return fmt.Errorf("%w: the name must be one line of at most %d bytes", ErrInvalid, MaxName)
	case len(np.Model) > 256 || strings.ContainsAny(np.Model, "\n\r\t"):
		return fmt.Errorf("%w: the model must be a model id as GET /v1/models lists it", ErrInvalid)
	}
	return nil
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "sp-" + hex.EncodeToString(b)
}
