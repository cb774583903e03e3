package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// loadOwn loads a private engine so a test can count its prefill work alone.
func loadOwn(t *testing.T, parallel int) *Engine {
	t.Helper()
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: parallel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func totals(t *testing.T, e *Engine) llm.Totals {
	t.Helper()
	s, err := e.Slots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.Totals
}

// TestSharedPrefixComputedOnce: many concurrent requests sharing a long prefix compute it about
// once, not once per request or per lane.
func TestSharedPrefixComputedOnce(t *testing.T) {
	e := loadOwn(t, 4)
	shared := textOfLength(t, e, 300)
	const n = 16
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := generate(t, e, greedy(fmt.Sprintf("%s Question %d:", shared, i), 8))
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	tot := totals(t, e)
	sharedTokens := len(tokenize(t, e, shared))
	if tot.PromptTokens < n*sharedTokens {
		t.Fatalf("prompt tokens %d, want ≥ %d", tot.PromptTokens, n*sharedTokens)
	}
	// Each request adds a short tail (a few tokens); the shared part should run once.
	tails := tot.PromptTokens - n*sharedTokens
	if limit := sharedTokens + tails + n; tot.PrefillComputed > limit {
		t.Fatalf("computed %d prefill tokens for %d prompt tokens; want ≤ %d (the shared %d once plus the tails)",
			tot.PrefillComputed, tot.PromptTokens, limit, sharedTokens)
	}
	if tot.CachedTokens != tot.PromptTokens-tot.PrefillComputed {
		t.Fatalf("cached %d + computed %d != prompt %d", tot.CachedTokens, tot.PrefillComputed, tot.PromptTokens)
	}
	cachedSum := 0
	for _, r := range results {
		cachedSum += r.done.Usage.CachedTokens
	}
	if cachedSum != tot.CachedTokens {
		t.Fatalf("requests report %d cached tokens, the engine %d", cachedSum, tot.CachedTokens)
	}
}

// TestPrefixCopiedFromBusyLane: a request whose prefix sits in a lane that is still decoding
// gets a copy of it, and the copy is right: the greedy reply matches a cold run.
func TestPrefixCopiedFromBusyLane(t *testing.T) {
	e := loadOwn(t, 2)
	shared := textOfLength(t, e, 200)
	long := greedy(shared+" The end.", 300)
	long.IgnoreEOS = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	decoding := make(chan struct{})
	ended := make(chan error, 1) // the long generation's result, whenever it ends
	go func() {
		once := sync.Once{}
		ended <- e.Generate(ctx, long, func(ev llm.Event) error {
			if ev.Tokens > 0 {
				once.Do(func() { close(decoding) })
			}
			return nil
		})
	}()
	select {
	case <-decoding:
	case err := <-ended:
		t.Fatalf("the long generation ended before its first token: %v", err)
	}
	probe := greedy(shared+" Once upon a time", 16)
	warm := mustGenerate(t, e, probe)
	cancel()
	if err := <-ended; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the long generation: %v", err)
	}
	if got := totals(t, e).PrefixCopies; got != 1 {
		t.Fatalf("prefix copies %d, want 1", got)
	}
	sharedTokens := len(tokenize(t, e, shared))
	if warm.done.Usage.CachedTokens < sharedTokens-1 {
		t.Fatalf("cached %d tokens, want the shared %d", warm.done.Usage.CachedTokens, sharedTokens)
	}
	cold := mustGenerate(t, loadOwn(t, 1), probe)
	if cold.done.Usage.CachedTokens != 0 {
		t.Fatalf("cold run cached %d", cold.done.Usage.CachedTokens)
	}
	if warm.text != cold.text {
		t.Fatalf("reply from the copied prefix %q differs from the cold reply %q", warm.text, cold.text)
	}
}

// TestCacheSurvivesSettings: the prefix cache is keyed by tokens only, so different sampling
// settings and caps reuse it.
func TestCacheSurvivesSettings(t *testing.T) {
	e := loadOwn(t, 2)
	prompt := textOfLength(t, e, 120)
	mustGenerate(t, e, greedy(prompt, 4))
	hot := greedy(prompt, 9)
	hot.Sampling = llm.Sampling{Temperature: ptr(1.3), TopK: ptr(5), Seed: 7}
	r := mustGenerate(t, e, hot)
	if r.done.Usage.CachedTokens != r.done.Usage.PromptTokens-1 {
		t.Fatalf("cached %d of %d", r.done.Usage.CachedTokens, r.done.Usage.PromptTokens)
	}
}

// TestNoCache: cache_prompt=false computes the whole prompt even when a lane holds it.
func TestNoCache(t *testing.T) {
	e := loadOwn(t, 2)
	prompt := textOfLength(t, e, 100)
	mustGenerate(t, e, greedy(prompt, 2))
	cold := greedy(prompt, 2)
	cold.NoCache = true
	before := totals(t, e).PrefillComputed
	r := mustGenerate(t, e, cold)
	if r.done.Usage.CachedTokens != 0 || totals(t, e).PrefillComputed-before != 100 {
		t.Fatalf("cached %d, computed %d; want 0 and 100", r.done.Usage.CachedTokens, totals(t, e).PrefillComputed-before)
	}
}

// TestCachePartitions: a prompt another partition computed is not served from the cache (no
// cached tokens, no copy from its lane, no waiting for it), and each partition keeps its own.
func TestCachePartitions(t *testing.T) {
	e := loadOwn(t, 2)
	prompt := textOfLength(t, e, 100)
	as := func(partition string) *llm.Request {
		r := greedy(prompt, 2)
		r.CachePartition = partition
		return r
	}
	alice := mustGenerate(t, e, as("alice"))
	before := totals(t, e).PrefillComputed
	bob := mustGenerate(t, e, as("bob"))
	if bob.done.Usage.CachedTokens != 0 || totals(t, e).PrefillComputed-before != 100 {
		t.Fatalf("another partition's prompt: cached %d, computed %d; want 0 and 100", bob.done.Usage.CachedTokens, totals(t, e).PrefillComputed-before)
	}
	if bob.started.Lane == alice.started.Lane {
		t.Errorf("bob took alice's lane %d while another was free; her cache is gone", alice.started.Lane)
	}
	for _, who := range []string{"alice", "bob"} {
		r := mustGenerate(t, e, as(who))
		if r.done.Usage.CachedTokens != r.done.Usage.PromptTokens-1 {
			t.Errorf("%s again: cached %d of %d, want all but the last", who, r.done.Usage.CachedTokens, r.done.Usage.PromptTokens)
		}
	}
	if r := mustGenerate(t, e, greedy(prompt, 2)); r.done.Usage.CachedTokens != 0 {
		t.Errorf("no partition after two named ones: cached %d, want 0", r.done.Usage.CachedTokens)
	}
}
