package sampling

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// refLogSoftmax is the textbook log-softmax in float64, with a full sort for the ranking.
func refLogSoftmax(logits []float32) ([]float64, []int) {
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(float64(v) - m)
	}
	lp := make([]float64, len(logits))
	order := make([]int, len(logits))
	for i, v := range logits {
		lp[i] = float64(v) - m - math.Log(z)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	return lp, order
}

func TestLogSoftmaxAgainstReference(t *testing.T) {
	for _, tc := range []struct {
		name   string
		logits []float32
		n      int
	}{
		{"32k vocabulary, top 5", benchLogits(32000), 5},
		{"32k vocabulary, top 20", benchLogits(32000), 20},
		{"no alternatives", benchLogits(1000), 0},
		{"ties rank the lower id first", []float32{1, 3, 3, 2, 3}, 4},
		{"n past the vocabulary", []float32{0.5, -1}, 20},
		{"ascending (a new maximum every step)", ascending(5000), 3},
		{"one token", []float32{-7}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d LogSoftmax
			d.Compute(tc.logits, tc.n)
			want, order := refLogSoftmax(tc.logits)
			var sum float64
			for id := range tc.logits {
				got := d.Logprob(id)
				if got > 0 || math.Abs(got-want[id]) > 1e-5 {
					t.Fatalf("Logprob(%d) = %g, want %g (and <= 0)", id, got, want[id])
				}
				sum += math.Exp(got)
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Errorf("probabilities sum to %g", sum)
			}
			top := d.Top(nil)
			if len(top) != min(tc.n, len(tc.logits)) {
				t.Fatalf("Top has %d entries, want %d", len(top), min(tc.n, len(tc.logits)))
			}
			for k, r := range top {
				if r.ID != order[k] || r.Logprob != d.Logprob(r.ID) {
					t.Fatalf("Top[%d] = %+v, want token %d with %g", k, r, order[k], d.Logprob(order[k]))
				}
			}
			if len(top) > 0 && top[0].Logprob != d.Logprob(argmax(tc.logits)) {
				t.Errorf("the greedy token's logprob %g differs from Top[0] %+v", d.Logprob(argmax(tc.logits)), top[0])
			}
		})
	}
}

func ascending(n int) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(i) / 100
	}
	return l
}

// TestLogSoftmaxDegenerate: tokens without a chance report MinLogprob (never -Inf or NaN, which
// JSON cannot carry) and stay out of Top; +Inf logits share the probability.
func TestLogSoftmaxDegenerate(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, tc := range []struct {
		name    string
		logits  []float32
		n       int
		want    []float64
		wantTop []int
	}{
		{"-Inf and NaN", []float32{negInf, 0, nan, 0}, 4, []float64{MinLogprob, -math.Ln2, MinLogprob, -math.Ln2}, []int{1, 3}},
		{"nothing has a chance", []float32{negInf, nan}, 2, []float64{MinLogprob, MinLogprob}, nil},
		{"+Inf", []float32{inf, 5, inf}, 3, []float64{-math.Ln2, MinLogprob, -math.Ln2}, []int{0, 2, 1}},
		{"far below the best", []float32{0, -1e30}, 2, []float64{0, MinLogprob}, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d LogSoftmax
			d.Compute(tc.logits, tc.n)
			for id, want := range tc.want {
				if got := d.Logprob(id); math.Abs(got-want) > 1e-9 {
					t.Errorf("Logprob(%d) = %g, want %g", id, got, want)
				}
			}
			var ids []int
			for _, r := range d.Top(nil) {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tc.wantTop) {
				t.Errorf("Top ids %v, want %v", ids, tc.wantTop)
			}
			if got := d.Logprob(len(tc.logits)); got != MinLogprob {
				t.Errorf("Logprob past the vocabulary = %g", got)
			}
		})
	}
}

func TestExpTable(t *testing.T) {
	worst := 0.0
	for d := 0.0; d >= minWeightExp; d -= 0.00037 {
		want := math.Exp(d)
		worst = max(worst, math.Abs(expTable(d)-want)/want)
	}
	if worst > 1e-10 {
		t.Fatalf("expTable relative error up to %g", worst)
	}
	if got := expTable(0); got != 1 {
		t.Fatalf("expTable(0) = %v, want 1", got)
	}
}

func TestLogSoftmaxDoesNotAllocate(t *testing.T) {
	logits := benchLogits(32000)
	var d LogSoftmax
	top := make([]Ranked, 0, 5)
	d.Compute(logits, 5)
	if n := testing.AllocsPerRun(20, func() {
		d.Compute(logits, 5)
		top = d.Top(top[:0])
	}); n != 0 {
		t.Errorf("%v allocations per position", n)
	}
}

func TestCheck(t *testing.T) {
	const vocab = 32000
	bias := func(b map[int]float64) *llm.Request { return &llm.Request{Sampling: llm.Sampling{LogitBias: b}} }
	for _, tc := range []struct {
		name string
		req  *llm.Request
		want string // "" accepts
	}{
		{"nothing asked", &llm.Request{}, ""},
		{"top_logprobs 20", &llm.Request{Logprobs: true, TopLogprobs: 20}, ""},
		{"top_logprobs without logprobs", &llm.Request{TopLogprobs: 3}, ""},
		{"top_logprobs 21", &llm.Request{Logprobs: true, TopLogprobs: 21}, "top_logprobs must be between 0 and 20, got 21"},
		{"top_logprobs -1", &llm.Request{Logprobs: true, TopLogprobs: -1}, "got -1"},
		{"bias at the vocabulary's ends", bias(map[int]float64{0: -100, vocab - 1: 100}), ""},
		{"bias past the vocabulary", bias(map[int]float64{50000: 1}), "logit_bias token 50000 is outside the vocabulary (0-31999)"},
		{"bias at the vocabulary size", bias(map[int]float64{vocab: 1}), "logit_bias token 32000 is outside"},
		{"negative bias id", bias(map[int]float64{-1: 1}), "logit_bias token -1 is outside"},
		{"NaN bias", bias(map[int]float64{7: math.NaN()}), "logit_bias token 7 has the value NaN"},
		{"+Inf bias", bias(map[int]float64{7: math.Inf(1)}), "logit_bias token 7 has the value +Inf"},
		{"-Inf bias", bias(map[int]float64{7: math.Inf(-1)}), "-Inf"},
		{"the lowest bad id is named", bias(map[int]float64{40000: 1, 9: math.NaN(), 50000: 2, 3: 1}), "logit_bias token 9 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.req, vocab)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want llm.ErrInvalidInput saying %q", err, tc.want)
			}
		})
	}
}

func TestWantsLogprobs(t *testing.T) {
	for _, tc := range []struct {
		req  llm.Request
		want bool
	}{
		{llm.Request{}, false},
		{llm.Request{Logprobs: true}, true},
		{llm.Request{TopLogprobs: 2}, true},
		{llm.Request{Logprobs: true, TopLogprobs: 2}, true},
	} {
		if got := WantsLogprobs(&tc.req); got != tc.want {
			t.Errorf("WantsLogprobs(%+v) = %v", tc.req, got)
		}
	}
}

// BenchmarkLogSoftmax32k is the per-token cost of logprobs on a 32k vocabulary; compare it
// with BenchmarkSample32k, which every token pays anyway.
func BenchmarkLogSoftmax32k(b *testing.B) {
	logits := benchLogits(32000)
	for _, n := range []int{0, 5, 20} {
		b.Run(fmt.Sprintf("top%d", n), func(b *testing.B) {
			var d LogSoftmax
			top := make([]Ranked, 0, n)
			for b.Loop() {
				d.Compute(logits, n)
				top = d.Top(top[:0])
				_ = d.Logprob(7)
			}
		})
	}
}
