package sampling

import (
	"math"
	"slices"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestBest(t *testing.T) {
	inf := float32(math.Inf(-1))
	values := []float32{1, 5, inf, 3, 5, 2, 4, inf}
	s := New(llm.Sampling{}, len(values), nil, false)
	for _, tc := range []struct {
		m    int
		want []int32
	}{
		{1, []int32{1}},                 // the lower id among the two 5s
		{2, []int32{1, 4}},              // both 5s
		{3, []int32{1, 4, 6}},           // then the 4
		{10, []int32{0, 1, 3, 4, 5, 6}}, // every finite value, no more
	} {
		got := slices.Clone(s.Best(values, tc.m))
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Best(m=%d) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

func TestDecisive(t *testing.T) {
	zero, warm, k := 0.0, 0.7, 12
	for _, tc := range []struct {
		s    llm.Sampling
		want int
	}{
		{llm.Sampling{Temperature: &zero}, 1},
		{llm.Sampling{Temperature: &warm, TopK: &k}, 12},
		{llm.Sampling{Temperature: &warm}, llm.DefaultTopK},
		{llm.Sampling{Temperature: &warm, TopK: new(int)}, 0}, // top_k off: any token can be drawn
	} {
		if got := New(tc.s, 100, nil, false).Decisive(); got != tc.want {
			t.Errorf("%+v: Decisive() = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// TestSampleAdjusted: Sample is Adjusted then SampleAdjusted, bias and penalties included.
func TestSampleAdjusted(t *testing.T) {
	zero := 0.0
	s := New(llm.Sampling{Temperature: &zero, LogitBias: map[int]float64{2: 10}}, 4, nil, false)
	logits := []float32{1, 3, 2, 0}
	adj := slices.Clone(s.Adjusted(logits))
	if adj[2] != 12 || logits[2] != 2 {
		t.Fatalf("Adjusted %v (logits %v)", adj, logits)
	}
	if a, b := s.Sample(logits), s.SampleAdjusted(adj); a != 2 || b != 2 {
		t.Errorf("Sample %d, SampleAdjusted %d; want 2", a, b)
	}
}
