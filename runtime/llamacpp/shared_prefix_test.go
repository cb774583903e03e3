package llamacpp

import (
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSharedPrefixAcrossPartitions: another partition's cache serves a request only for the
// tokens its prompt has in common with llm.Request.SharedPrefix: never without one, never past
// it (the first partition's private continuation is not reused), and for a shared text that
// merely starts with the prompt's characters, no more than the tokens that match.
func TestSharedPrefixAcrossPartitions(t *testing.T) {
	e := loadOwn(t, 1) // one lane: every request lands on the cache the one before left
	shared := textOfLength(t, e, 60)
	sharedTokens := len(tokenize(t, e, shared))
	prompt := shared + " once upon a time a little x. once upon a time!"
	as := func(partition, sharedPrefix string) *llm.Request {
		r := greedy(prompt, 2)
		r.CachePartition, r.SharedPrefix = partition, sharedPrefix
		return r
	}
	cached := func(r *llm.Request) int { return mustGenerate(t, e, r).done.Usage.CachedTokens }

	cached(as("alice", shared))
	if n := cached(as("bob", "")); n != 0 {
		t.Fatalf("bob after alice without a shared prefix: cached %d, want 0", n)
	}
	n := cached(as("carol", shared))
	if n == 0 || n > sharedTokens {
		t.Fatalf("carol after bob, the same prompt with %d shared tokens: cached %d, want 1..%d", sharedTokens, n, sharedTokens)
	}
	if n < sharedTokens-1 {
		t.Errorf("carol: cached %d, want about the %d shared tokens", n, sharedTokens)
	}
	if n := cached(as("carol", shared)); n != len(tokenize(t, e, prompt))-1 {
		t.Errorf("carol again: cached %d, want all but the last of her own prompt", n)
	}

	// The shared text ends inside a word the prompt goes on with: its tokens differ from the
	// prompt's past the matching ones, and nothing past those is shared.
	partial := shared + " once upon a ti"
	match := commonPrefix(tokenize(t, e, partial), tokenize(t, e, prompt))
	if match >= len(tokenize(t, e, partial)) {
		t.Fatalf("%q tokenizes as a prefix of the prompt; the test needs one that does not", partial)
	}
	if n := cached(as("dave", partial)); n == 0 || n > match {
		t.Errorf("dave with a shared text matching %d tokens: cached %d, want 1..%d", match, n, match)
	}

	noCache := as("erin", shared)
	noCache.NoCache = true
	if n := cached(noCache); n != 0 {
		t.Errorf("no_cache with a shared prefix: cached %d, want 0", n)
	}
}
