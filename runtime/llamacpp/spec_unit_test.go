package llamacpp

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestNgramDraft(t *testing.T) {
	cases := []struct {
		name   string
		tokens []int
		k      int
		want   []int
	}{
		{"longest match wins", []int{1, 2, 3, 9, 8, 2, 3, 7, 6, 1, 2, 3}, 3, []int{9, 8, 2}},
		{"most recent match first", []int{5, 6, 1, 9, 5, 6, 2, 8, 5, 6}, 2, []int{2, 8}},
		{"continuation stops at the end", []int{4, 5, 6, 4, 5}, 5, []int{6, 4, 5}},
		{"no match of two tokens", []int{1, 2, 3, 4, 5, 1}, 4, nil},
		{"k bounds the draft", []int{1, 2, 3, 4, 5, 6, 1, 2}, 2, []int{3, 4}},
		{"k zero", []int{1, 2, 1, 2}, 0, nil},
		{"too short", []int{1}, 4, nil},
	}
	for _, c := range cases {
		if got := ngramDraft(c.tokens, c.k, nil); !slices.Equal(got, c.want) {
			t.Errorf("%s: ngramDraft(%v, %d) = %v, want %v", c.name, c.tokens, c.k, got, c.want)
		}
	}
}

// TestSpecAdapt: k shrinks after rejections, grows back on full acceptance, and drafting
// pauses (longer each time) while acceptance stays low.
func TestSpecAdapt(t *testing.T) {
	ls := laneSpec{mode: llm.SpecNgram, maxK: 8, k: 8, rate: 1}
	ls.adapt(8, 2, 0)
	if ls.k >= 8 || ls.k < 3 {
		t.Fatalf("after 2 of 8 kept k = %d, want it shrunk toward 3", ls.k)
	}
	ls.adapt(ls.k, ls.k, 0)
	ls.adapt(ls.k, ls.k, 0)
	ls.adapt(ls.k, ls.k, 0)
	if ls.k != 8 {
		t.Fatalf("after full acceptances k = %d, want back at 8", ls.k)
	}
	for range 8 {
		ls.adapt(ls.k, 0, 0)
		if ls.pauseLeft > 0 {
			break
		}
	}
	if ls.pauseLeft != pauseSteps {
		t.Fatalf("after rejections pauseLeft = %d, want %d", ls.pauseLeft, pauseSteps)
	}
	ls.pauseLeft = 0
	for range 8 {
		ls.adapt(ls.k, 0, 0)
		if ls.pauseLeft > 0 {
			break
		}
	}
	if ls.pauseLeft != 2*pauseSteps {
		t.Fatalf("second pause = %d, want %d", ls.pauseLeft, 2*pauseSteps)
	}
	// A pause spends decode steps without a draft.
	l := &lane{job: &job{maxTokens: 100}, spec: laneSpec{mode: llm.SpecNgram, k: 4, pauseLeft: 2}}
	if a, b, c := l.spec.want(l, 512), l.spec.want(l, 512), l.spec.want(l, 512); a != 0 || b != 0 || c != 4 {
		t.Fatalf("want during a pause of 2 = %d, %d, then %d; want 0, 0, 4", a, b, c)
	}
	// No more than the job may still generate, nor its window holds.
	l = &lane{job: &job{maxTokens: 10, generated: 7}, spec: laneSpec{mode: llm.SpecNgram, k: 8}}
	if got := l.spec.want(l, 512); got != 2 {
		t.Fatalf("3 tokens left: want = %d, want 2", got)
	}
	l = &lane{job: &job{maxTokens: 100}, cache: make([]int, 505), spec: laneSpec{mode: llm.SpecNgram, k: 8}}
	if got := l.spec.want(l, 512); got != 5 {
		t.Fatalf("505 of 512 cached: want = %d, want 5", got)
	}
}

// TestRowCost: the break-even acceptance rate follows the measured cost of a drafted row
// against a plain tick, and pauses drafting below it.
func TestRowCost(t *testing.T) {
	var c rowCost
	if c.breakEven() != 0 {
		t.Fatal("break-even before any tick")
	}
	for range 50 {
		c.lanes, c.drafts = 1, 0
		c.observe(0, 10*time.Millisecond)
		c.lanes, c.drafts = 1, 4
		c.observe(0, 18*time.Millisecond)
	}
	c.lanes, c.drafts = 1, 0
	c.observe(3, time.Second) // a tick with prompt rows says nothing about decoding
	if got := c.breakEven(); got < 0.2 || got > 0.26 {
		t.Fatalf("a drafted row at 2 ms against 10 ms a step: break-even %.3f, want 0.23", got)
	}
	c.lanes = 2 // no plain tick of 2 lanes seen yet
	if c.breakEven() != 0 {
		t.Fatal("break-even for an unmeasured lane count")
	}
	ls := laneSpec{mode: llm.SpecNgram, maxK: 4, k: 4, rate: 1}
	for range minVerified + 8 {
		ls.adapt(4, 1, 0.5) // 25% kept: pays against the default 0.3, not against 0.5
	}
	if ls.pauses == 0 {
		t.Fatal("25% acceptance against a break-even of 50%: drafting never paused")
	}
}

func TestCheckSpeculative(t *testing.T) {
	for _, s := range []*llm.Speculative{nil, {}, {Mode: llm.SpecOff}, {Mode: llm.SpecNgram, DraftTokens: 1}, {Mode: llm.SpecDraft, DraftTokens: llm.MaxDraftTokens}} {
		if err := checkSpeculative(&llm.Request{Speculative: s}); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	for _, s := range []*llm.Speculative{{Mode: "eagle"}, {Mode: llm.SpecNgram, DraftTokens: llm.MaxDraftTokens + 1}, {DraftTokens: -1}} {
		if err := checkSpeculative(&llm.Request{Speculative: s}); !errors.Is(err, llm.ErrInvalidInput) {
			t.Errorf("%+v: error %v, want ErrInvalidInput", s, err)
		}
	}
}
