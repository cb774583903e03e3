package core

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
)

// CodeModelsMoving is the error code of a request refused while the models folder is moved.
const CodeModelsMoving = "models_moving"

// moveGuard is the one place that knows a move of the models folder runs: pulls, deletes,
// copies, adapter loads and model loads (from any client: the dialects, the web API, the
// desktop) are refused while it does, and a move does not start while any of them runs. A
// refusal is a 409 Conflict rather than a 503: the server is fine, the request conflicts with
// an operation its owner started, whose end no Retry-After could promise (a copy of many GB).
type moveGuard struct {
	mu      sync.Mutex
	moving  bool
	running map[string]int // what runs, as the move's refusal names it ("the download of X")
	ended   chan struct{}  // closed when the move ends; nil before the first
}

// movingError refuses an operation during a move; then says what to do ("load the model").
func movingError(then string) error {
	return &llm.StatusError{Status: http.StatusConflict, Code: CodeModelsMoving,
		Message: fmt.Sprintf("the models folder is being moved; %s once the move is done", then)}
}

// IsModelsMoving reports whether err is a refusal because the models folder is being moved.
func IsModelsMoving(err error) bool {
	var se *llm.StatusError
	return errors.As(err, &se) && se.Code == CodeModelsMoving
}

// begin counts the operation what until done, or refuses it during a move.
func (g *moveGuard) begin(what, then string) (done func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.moving {
		return nil, movingError(then)
	}
	if g.running == nil {
		g.running = map[string]int{}
	}
	g.running[what]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.running[what]--; g.running[what] <= 0 {
			delete(g.running, what)
		}
	}, nil
}

// refusal is movingError(then) during a move, else nil.
func (g *moveGuard) refusal(then string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.moving {
		return movingError(then)
	}
	return nil
}

// loadGate is the manager's gate (models.Manager.SetLoadGate); it holds the manager's lock, so
// it takes only the guard's.
func (g *moveGuard) loadGate(string) error { return g.refusal("load the model") }

// GuardModels counts work on the catalog's files as what (a pull, a delete, a copy, an
// adapter load; or a web pull's download and upload, which span more than one core call), so
// that a move waits for it; during a move it is refused (then: what to do after it). A core
// without a catalog moves nothing.
func (s *Service) GuardModels(what, then string) (done func(), err error) {
	if s.mgr == nil {
		return func() {}, nil
	}
	return s.move.begin(what, then)
}

// BeginModelsMove marks a move of the models folder, so that every client's pull, delete,
// copy and load is refused until end is called. It refuses while one of those runs, or a
// model is loaded or loading, naming it.
func (s *Service) BeginModelsMove() (end func(), err error) {
	if s.mgr == nil {
		return nil, errNoCatalog
	}
	g := &s.move
	g.mu.Lock()
	if g.moving {
		g.mu.Unlock()
		return nil, errors.New("the models folder is already being moved")
	}
	if len(g.running) > 0 {
		ops := make([]string, 0, len(g.running))
		for op := range g.running {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		g.mu.Unlock()
		return nil, fmt.Errorf("%s running; wait for it to finish or cancel it, then move the models", strings.Join(ops, ", ")+isAre(len(ops)))
	}
	g.moving, g.ended = true, make(chan struct{})
	ended := g.ended
	g.mu.Unlock()
	var once sync.Once // a second call must not end a later move
	end = func() {
		once.Do(func() {
			g.mu.Lock()
			g.moving = false
			close(ended)
			g.mu.Unlock()
		})
	}
	// Read after moving is set, without the guard's lock (the manager's gate takes it under
	// the manager's): a load that passed the gate before is seen loading here, and none
	// starts after.
	if busy := s.busyModel(); busy != "" {
		end()
		return nil, fmt.Errorf("%s is loaded; unload it first, then move the models", busy)
	}
	// An adapter loaded over /v1/lora/load names its file by the path it had: moved, the
	// model's adapters would be dropped (or name a file no longer there).
	if a, ok := s.lora.any(); ok {
		end()
		return nil, fmt.Errorf("the adapter %s is loaded for %s; unload it (POST /v1/lora/unload), then move the models", a.ID, a.Model)
	}
	// A count of tokens on an unloaded model left a tokenizer-only worker with its file open:
	// not a loaded model to the user, so stopped rather than refused (the gate keeps it so).
	s.mgr.CloseTokenizers()
	return end, nil
}

func isAre(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

// busyModel names a catalog model that is not unloaded (loaded, loading, unloading), "" for
// none.
func (s *Service) busyModel() string {
	for _, e := range s.mgr.Catalog().List() {
		switch s.mgr.Status(e).State {
		case models.StateUnloaded, models.StateFailed, models.StateMissing:
		default:
			return e.ID
		}
	}
	return ""
}

// CheckModelsMove is the refusal a pull started now would get during a move (then: what to
// do after it), nil when no move runs: for a route that answers before its work begins (the
// web API's pulls run in the background).
func (s *Service) CheckModelsMove(then string) error {
	if s.mgr == nil {
		return nil
	}
	return s.move.refusal(then)
}

// closedChan is the end of no move.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// ModelsMoveEnded is closed once no move of the models folder runs (at once when none does):
// for work that waits out a move rather than fail (a batch's lines).
func (s *Service) ModelsMoveEnded() <-chan struct{} {
	if s.mgr == nil {
		return closedChan
	}
	s.move.mu.Lock()
	defer s.move.mu.Unlock()
	if !s.move.moving {
		return closedChan
	}
	return s.move.ended
}
