package llamacpp

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// laneGroup is the busy lanes of one adapter set (nil: the bare model).
type laneGroup struct {
	set   *adapterSet
	lanes []*lane
}

// tick sends this tick's batches: one llama_decode per distinct adapter set among the busy
// lanes, since llama.cpp applies adapters to the whole context. Every decoding lane gets its
// row whatever its set; the prompt chunks share what the batch budget leaves, and the sets
// take turns going first, so none starves another's prefill. Without adapters (one set) this
// is one batch, as it always was.
func (e *Engine) tick() {
	e.planDrafts()
	groups := e.laneGroups()
	decodeRows := 0
	for _, l := range e.lanes {
		if l.job != nil && !l.prefilling() {
			decodeRows += 1 + len(l.spec.draft)
		}
	}
	prefill := e.batchSize - decodeRows
	cost := e.spec.cost
	var sum tickCounts
	for _, g := range groups {
		if len(groups) > 1 {
			e.spec.cost.lanes, e.spec.cost.drafts, e.spec.cost.drafting = cost.share(g.lanes)
		}
		e.applyAdapters(g.set)
		c, ok := e.tickLanes(g.lanes, prefill)
		if !ok {
			return
		}
		if c.decodeRows+c.prefillRows > 0 {
			e.lora.decoded = e.lora.embeddings
		}
		prefill -= c.prefillRows
		sum.add(c)
	}
	if sum.decodeRows+sum.prefillRows > 0 {
		e.stats.observe(sum.decodeRows, sum.decodeRows-sum.unused, sum.prefillRows, e.batchSize, sum.elapsed)
	}
	// A media chunk goes after every set's text batch, under its own lane's set (evalChunk).
	e.evalMedia()
}

// tickCounts is what one batch of a tick carried and how long it took.
type tickCounts struct {
	decodeRows, unused, prefillRows int
	elapsed                         time.Duration
}

func (t *tickCounts) add(c tickCounts) {
	t.decodeRows += c.decodeRows
	t.unused += c.unused
	t.prefillRows += c.prefillRows
	t.elapsed += c.elapsed
}

// share is the speculation cost model's view of one group's batch: its decoding lanes, its
// drafted rows and its share of the drafting time (by drafted rows).
func (c rowCost) share(lanes []*lane) (decoding, drafts int, drafting time.Duration) {
	for _, l := range lanes {
		if !l.prefilling() {
			decoding++
			drafts += len(l.spec.draft)
		}
	}
	if c.drafts > 0 {
		drafting = c.drafting * time.Duration(drafts) / time.Duration(c.drafts)
	}
	return decoding, drafts, drafting
}

// laneGroups groups the busy lanes by adapter set, in the order of their first lanes, rotated
// by one set each tick that has more than one.
func (e *Engine) laneGroups() []laneGroup {
	var groups []laneGroup
	for _, l := range e.lanes {
		if l.job == nil {
			continue
		}
		i := 0
		for i < len(groups) && setContext(groups[i].set) != setContext(l.job.adapters) {
			i++
		}
		if i == len(groups) {
			groups = append(groups, laneGroup{set: l.job.adapters})
		}
		groups[i].lanes = append(groups[i].lanes, l)
	}
	if len(groups) > 1 {
		e.lora.mixedTicks.Add(1)
		e.lora.turn++
		first := e.lora.turn % len(groups)
		groups = append(groups[first:], groups[:first]...)
	}
	return groups
}

func setContext(s *adapterSet) string {
	if s == nil {
		return ""
	}
	return s.context
}

// applyAdapters gives the context set's adapters, unless it has them already.
func (e *Engine) applyAdapters(set *adapterSet) {
	want := setContext(set)
	if want == e.lora.applied {
		return
	}
	var applied []appliedLoRA
	if set != nil {
		for i, a := range set.adapters {
			applied = append(applied, appliedLoRA{handle: a.handle, scale: set.scales[i]})
		}
	}
	// Opposite to the flag of the last decode, not the current one: two changes before a
	// decode (an adapter freed, then loaded again) would otherwise cancel out, and the last
	// graph, with the freed adapter in it, would run again.
	e.lora.embeddings = !e.lora.decoded
	setContextAdapters(e.lctx, applied, e.lora.embeddings)
	e.lora.applied, e.lora.appliedSet = want, set
}

// freeRetired frees the released adapters no generation holds any more, first taking them
// out of the context, and drops the idle lanes whose prefixes were computed under them (unless
// the same file is loaded again). The loop calls it.
func (e *Engine) freeRetired() {
	s := &e.lora
	s.mu.Lock()
	var free []*loraAdapter
	kept := s.retired[:0]
	for _, a := range s.retired {
		if a.holds == 0 {
			free = append(free, a)
		} else {
			kept = append(kept, a)
		}
	}
	s.retired = kept
	reloaded := map[string]bool{}
	for _, a := range s.loaded {
		reloaded[a.identity] = true
	}
	s.mu.Unlock()
	for _, a := range free {
		if s.appliedSet != nil && slices.Contains(s.appliedSet.adapters, a) {
			e.applyAdapters(nil)
		}
		loraFree(a.handle)
		s.mu.Lock()
		s.frees++
		s.mu.Unlock()
		if reloaded[a.identity] {
			continue
		}
		for _, l := range e.lanes {
			if l.job == nil && len(l.cache) > 0 && strings.Contains(partitionAdapters(l.partition), "\x00"+a.identity+" scale=") {
				e.disk.dropping(e, l, 0)
				e.lctx.KvCacheSeqRm(l.id, 0, -1)
				l.cache = l.cache[:0]
			}
		}
	}
}

// closeAdapters frees every adapter; the loop has stopped.
func (e *Engine) closeAdapters() {
	s := &e.lora
	if e.lctx != nil && s.applied != "" {
		e.applyAdapters(nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.loaded {
		loraFree(a.handle)
	}
	for _, a := range s.retired {
		loraFree(a.handle)
	}
	s.loaded, s.retired = map[string]*loraAdapter{}, nil
}

// checkGraphRoom refuses a set whose ops would not fit a decode's graph. llama.cpp sizes the
// graph once, when it creates the context, for max(1024, 8 × the model's tensors) nodes (and
// tensor objects) whatever adapters come later, and aborts the process when a graph outgrows
// it. Each adapted tensor adds 4 (two products, a scale and a sum); the model's own graph is
// taken as 4.5 per tensor: a llama block measured 36 nodes for its 9 tensors in the pinned
// build, and the margin covers other architectures. So a big model takes one adapter of every
// block matrix at a time, or several smaller ones.
func (e *Engine) checkGraphRoom(set *adapterSet, ids map[string]string) error {
	pairs := 0
	var names []string
	for _, a := range set.adapters {
		pairs += a.pairs
		names = append(names, ids[a.path])
	}
	e.lora.mu.Lock()
	tensors := e.lora.tensors
	e.lora.mu.Unlock()
	room := graphRoom(e.info.Architecture, tensors)
	if pairs <= room {
		return nil
	}
	return fmt.Errorf("%w: adapters %s together change %d tensors; the model %s has room in its compute graph for adapters of %d at a time (use fewer adapters in one request)",
		llm.ErrInvalidInput, strings.Join(names, ", "), pairs, e.info.Path, room)
}

// graphRoom is how many adapted tensors a decode's graph has room for (checkGraphRoom).
func graphRoom(arch string, tensors int) int {
	nodes := max(1024, 8*tensors)
	if arch == "qwen3next" {
		nodes = 32 * tensors // llama_context::graph_max_nodes gives it at least this
	}
	return (nodes - (9*tensors+1)/2) / 4
}
