package llamacpp

import (
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestLoRAPrefixCache: a prefix computed under one adapter set serves only that set: the same
// prompt under another set (none, another scale, another adapter) starts cold and writes what
// a cold run writes, while the same set again reuses it. A shared prefix (team mode) crosses
// owners only within one set.
func TestLoRAPrefixCache(t *testing.T) {
	files := loraFiles(t, 2)
	e := loadLoRAEngine(t, Options{Parallel: 2})
	a, half, b := adapter("a", files[0], 1), adapter("a", files[0], 0.5), adapter("b", files[1], 1)
	cold := func(adapters ...llm.AdapterRef) string {
		req := withLoRA(loraPrompt, 24, adapters...)
		req.NoCache = true
		return mustGenerate(t, e, req).text
	}
	want := map[string]string{"bare": cold(), "a": cold(a), "half": cold(half), "b": cold(b)}
	n := len(tokenize(t, e, loraPrompt))
	steps := []struct {
		name   string
		set    []llm.AdapterRef
		cached int
	}{
		{"bare", nil, 0},
		{"a", []llm.AdapterRef{a}, 0},
		{"bare", nil, n - 1},
		{"a", []llm.AdapterRef{a}, n - 1},
		{"half", []llm.AdapterRef{half}, 0},
		{"b", []llm.AdapterRef{b}, 0},
	}
	// NoCache runs leave their lanes' caches: start from empty lanes.
	e2 := loadLoRAEngine(t, Options{Parallel: 2})
	for i, s := range steps {
		r := mustGenerate(t, e2, withLoRA(loraPrompt, 24, s.set...))
		if r.done.Usage.CachedTokens != s.cached || r.text != want[s.name] {
			t.Errorf("step %d (%s): cached %d, wrote %q; want cached %d and the cold %q", i, s.name, r.done.Usage.CachedTokens, r.text, s.cached, want[s.name])
		}
	}

	e3 := loadLoRAEngine(t, Options{Parallel: 2})
	shared := func(owner string, set ...llm.AdapterRef) result {
		req := withLoRA(loraPrompt, 24, set...)
		req.CachePartition, req.SharedPrefix = owner, loraPrompt
		return mustGenerate(t, e3, req)
	}
	shared("alice", a)
	if r := shared("bob", a); r.done.Usage.CachedTokens == 0 || r.text != want["a"] {
		t.Errorf("bob, same adapter, shared prefix: cached %d, wrote %q; want a reuse and %q", r.done.Usage.CachedTokens, r.text, want["a"])
	}
	if r := shared("bob"); r.done.Usage.CachedTokens != 0 || r.text != want["bare"] {
		t.Errorf("bob, no adapter, shared prefix: cached %d, wrote %q; want 0 and %q", r.done.Usage.CachedTokens, r.text, want["bare"])
	}
}

// TestLoRADiskCache: a prefix saved to disk under an adapter is restored only for that
// adapter, and not once the adapter file has changed (its size and time are in the key).
func TestLoRADiskCache(t *testing.T) {
	files := loraFiles(t, 1)
	dir := t.TempDir()
	e := loadKV(t, dir, 1, 0)
	prompt := story(t, e, "A dog", 2*minShare)
	a := adapter("a", files[0], 1)
	run := func(e *Engine, set ...llm.AdapterRef) result { return mustGenerate(t, e, withLoRA(prompt, 16, set...)) }
	coldBare, coldA := run(loadLoRAEngine(t, Options{Parallel: 1})), run(loadLoRAEngine(t, Options{Parallel: 1}), a)
	if first := run(e, a); first.text != coldA.text {
		t.Fatalf("with the adapter %q, cold %q", first.text, coldA.text)
	}
	e.Close() // saves the lane

	e = loadKV(t, dir, 1, 0)
	if r := run(e); r.started.RestoredTokens != 0 || r.done.Usage.CachedTokens != 0 || r.text != coldBare.text {
		t.Errorf("bare after the adapter's save: restored %d, cached %d, wrote %q; want 0, 0 and %q",
			r.started.RestoredTokens, r.done.Usage.CachedTokens, r.text, coldBare.text)
	}
	if r := run(e, a); r.started.RestoredTokens == 0 || r.text != coldA.text {
		t.Errorf("the adapter again: restored %d, wrote %q; want its prefix restored and %q", r.started.RestoredTokens, r.text, coldA.text)
	}
	e.Close()

	// The same path, another adapter: what was saved under the old file is not served.
	if err := gguftest.WriteLoRA(files[0], testModelPath, gguftest.LoRAOptions{Seed: 9}); err != nil {
		t.Fatal(err)
	}
	e = loadKV(t, dir, 1, 0)
	fresh := run(loadLoRAEngine(t, Options{Parallel: 1}), a)
	if r := run(e, a); r.started.RestoredTokens != 0 || r.text != fresh.text {
		t.Errorf("a replaced adapter file: restored %d, wrote %q; want 0 and %q", r.started.RestoredTokens, r.text, fresh.text)
	}
}

// TestReusableAcrossSets: the rule every reuse (lanes, copies, the disk) goes through.
func TestReusableAcrossSets(t *testing.T) {
	tokens := []int{1, 2, 3, 4, 5, 6}
	setA := &adapterSet{key: "\x00\"/a.gguf\" size=1 mtime=1 scale=1"}
	setB := &adapterSet{key: "\x00\"/a.gguf\" size=1 mtime=1 scale=0.5"}
	var none *adapterSet
	tests := []struct {
		name       string
		lane, job  string
		shared     int
		wantShared int
	}{
		{"same owner, same set", setA.partition(""), setA.partition(""), 0, 6},
		{"same owner, bare", none.partition(""), none.partition(""), 0, 6},
		{"same owner, set and bare", setA.partition(""), none.partition(""), 0, 0},
		{"same owner, other scale", setA.partition(""), setB.partition(""), 0, 0},
		{"other owner, same set, shared prefix", setA.partition("alice"), setA.partition("bob"), 4, 4},
		{"other owner, other set, shared prefix", setA.partition("alice"), none.partition("bob"), 4, 0},
		{"other owner, same set, no shared prefix", setA.partition("alice"), setA.partition("bob"), 0, 0},
	}
	for _, tt := range tests {
		j := &job{prompt: tokens, partition: tt.job, shared: tt.shared, req: &llm.Request{}}
		if got := reusable(&lane{partition: tt.lane}, tokens, j); got != tt.wantShared {
			t.Errorf("%s: reusable %d tokens, want %d", tt.name, got, tt.wantShared)
		}
	}
}

// TestLaneGroupsTakeTurns: busy lanes group by adapter set (idle ones in none), and the group
// that goes first (and so takes the prefill budget first) changes every tick.
func TestLaneGroupsTakeTurns(t *testing.T) {
	setA := &adapterSet{context: "1@1 "}
	setB := &adapterSet{context: "2@1 "}
	sets := []*adapterSet{setA, nil, setA, setB, nil}
	e := &Engine{}
	for i, s := range sets {
		l := &lane{id: i}
		if i != 4 {
			l.job = &job{adapters: s}
		}
		e.lanes = append(e.lanes, l)
	}
	firsts := map[string]bool{}
	for range 3 {
		groups := e.laneGroups()
		if len(groups) != 3 {
			t.Fatalf("%d groups, want 3 (A, bare, B)", len(groups))
		}
		lanes := map[string][]int{}
		for _, g := range groups {
			for _, l := range g.lanes {
				lanes[setContext(g.set)] = append(lanes[setContext(g.set)], l.id)
			}
		}
		if len(lanes[setA.context]) != 2 || len(lanes[""]) != 1 || len(lanes[setB.context]) != 1 {
			t.Errorf("groups %v, want A: lanes 0 and 2, bare: lane 1, B: lane 3", lanes)
		}
		firsts[setContext(groups[0].set)] = true
	}
	if len(firsts) != 3 {
		t.Errorf("over three ticks the first group was %v, want each set once", firsts)
	}
}
