package sampling

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func f64(v float64) *float64 { return &v }
func intp(v int) *int        { return &v }

// greedy is the base of the deterministic cases: temperature 0.
func greedy(s llm.Sampling) llm.Sampling {
	s.Temperature = f64(0)
	return s
}

func TestSampleDeterministic(t *testing.T) {
	logits := []float32{1, 3, 2}
	pen := []float32{2, 1.5, 0}
	var window []int
	window = append(window, 0)
	for range llm.RepeatLastN {
		window = append(window, 2)
	}
	tests := []struct {
		name      string
		s         llm.Sampling
		logits    []float32
		accept    []int
		eog       []int
		ignoreEOS bool
		want      int
	}{
		{"argmax", greedy(llm.Sampling{}), logits, nil, nil, false, 1},
		{"ties pick the lowest id", greedy(llm.Sampling{}), []float32{3, 1, 3}, nil, nil, false, 0},
		{"negative temperature is greedy", llm.Sampling{Temperature: f64(-1)}, logits, nil, nil, false, 1},
		{"bias ban", greedy(llm.Sampling{LogitBias: map[int]float64{1: -100}}), logits, nil, nil, false, 2},
		{"bias below -100 bans", greedy(llm.Sampling{LogitBias: map[int]float64{1: -1000, 2: -100}}), logits, nil, nil, false, 0},
		{"bias -99 only lowers", greedy(llm.Sampling{LogitBias: map[int]float64{1: -99}}), logits, nil, nil, false, 2},
		{"bias boost wins", greedy(llm.Sampling{LogitBias: map[int]float64{0: 2.5}}), logits, nil, nil, false, 0},
		{"bias boost too small", greedy(llm.Sampling{LogitBias: map[int]float64{0: 1.5}}), logits, nil, nil, false, 1},
		{"bias id out of range ignored", greedy(llm.Sampling{LogitBias: map[int]float64{7: 100, -1: 100}}), logits, nil, nil, false, 1},
		{"huge bias stays finite", llm.Sampling{LogitBias: map[int]float64{2: math.Inf(1)}}, logits, nil, nil, false, 2},
		{"eog kept without ignore_eos", greedy(llm.Sampling{}), []float32{1, 5, 2}, nil, []int{1}, false, 1},
		{"ignore_eos bans eog argmax", greedy(llm.Sampling{}), []float32{1, 5, 2}, nil, []int{1}, true, 2},
		{"ignore_eos beats a boost", greedy(llm.Sampling{LogitBias: map[int]float64{1: 100}}), []float32{1, 5, 2}, nil, []int{1}, true, 2},
		{"ignore_eos when sampling", llm.Sampling{TopK: intp(1)}, []float32{1, 5, 2}, nil, []int{1, 9}, true, 2},
		{"everything banned gives 0", greedy(llm.Sampling{LogitBias: map[int]float64{0: -100, 2: -100}}), []float32{1, 5, 2}, nil, []int{1}, true, 0},
		{"NaN logit never picked", greedy(llm.Sampling{}), []float32{1, float32(math.NaN()), 2}, nil, nil, false, 2},
		{"no penalty by default", greedy(llm.Sampling{}), pen, []int{0, 0, 0}, nil, false, 0},
		{"repeat 1.5 divides positive", greedy(llm.Sampling{RepeatPenalty: f64(1.5)}), pen, []int{0}, nil, false, 1},                // 2/1.5 = 1.33 < 1.5
		{"repeat 1.3 not enough", greedy(llm.Sampling{RepeatPenalty: f64(1.3)}), pen, []int{0}, nil, false, 0},                      // 2/1.3 = 1.54 > 1.5
		{"repeat multiplies negative", greedy(llm.Sampling{RepeatPenalty: f64(1.5)}), []float32{-1, -1.2}, []int{0}, nil, false, 1}, // -1.5 < -1.2
		{"repeat 0 is off", greedy(llm.Sampling{RepeatPenalty: f64(0)}), pen, []int{0}, nil, false, 0},
		{"frequency counts twice", greedy(llm.Sampling{FrequencyPenalty: 0.3}), pen, []int{0, 0}, nil, false, 1},   // 2-0.6 = 1.4
		{"frequency once", greedy(llm.Sampling{FrequencyPenalty: 0.3}), pen, []int{0}, nil, false, 0},              // 2-0.3 = 1.7
		{"frequency 0.2 twice", greedy(llm.Sampling{FrequencyPenalty: 0.2}), pen, []int{0, 0}, nil, false, 0},      // 1.6
		{"presence once for many", greedy(llm.Sampling{PresencePenalty: 0.6}), pen, []int{0, 0, 0}, nil, false, 1}, // 1.4
		{"presence 0.4", greedy(llm.Sampling{PresencePenalty: 0.4}), pen, []int{0, 0, 0}, nil, false, 0},           // 1.6
		{"window still holds token", greedy(llm.Sampling{RepeatPenalty: f64(2)}), pen, window[:llm.RepeatLastN], nil, false, 1},
		{"token left the window", greedy(llm.Sampling{RepeatPenalty: f64(2)}), pen, window, nil, false, 0},
		{"top_k 1 is greedy", llm.Sampling{TopK: intp(1), Temperature: f64(5)}, []float32{1, 3, 3, 2}, nil, nil, false, 1},
		{"min_p 1 keeps only the best", llm.Sampling{MinP: f64(1), TopK: intp(0), Temperature: f64(3)}, logits, nil, nil, false, 1},
		{"top_p 0 keeps only the best", llm.Sampling{TopP: f64(0), TopK: intp(0), MinP: f64(0)}, logits, nil, nil, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.s, len(tt.logits), tt.eog, tt.ignoreEOS)
			for _, tok := range tt.accept {
				s.Accept(tok)
			}
			for seed := range 20 { // sampling cases must hold for every draw
				s.rng = rand.New(rand.NewPCG(uint64(seed), 1))
				if got := s.Sample(tt.logits); got != tt.want {
					t.Fatalf("Sample = %d, want %d", got, tt.want)
				}
			}
		})
	}
}

func TestPenaltyValues(t *testing.T) {
	s := New(llm.Sampling{RepeatPenalty: f64(1.5), FrequencyPenalty: 0.25, PresencePenalty: 0.1}, 5, nil, false)
	for _, tok := range []int{0, 0, 1, 3, 99} { // 99 is beyond the vocabulary: ignored
		s.Accept(tok)
	}
	buf := []float32{2, -1, 0.5, 3, 0}
	s.applyPenalties(buf)
	want := []float32{2/1.5 - 0.5 - 0.1, -1.5 - 0.25 - 0.1, 0.5, 3/1.5 - 0.25 - 0.1, 0}
	for i := range want {
		if math.Abs(float64(buf[i]-want[i])) > 1e-6 {
			t.Errorf("logit %d = %v, want %v", i, buf[i], want[i])
		}
	}
}

func TestTopKOneEqualsGreedy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 1000)
	g := New(greedy(llm.Sampling{}), len(logits), nil, false)
	k := New(llm.Sampling{TopK: intp(1), Temperature: f64(2), Seed: 7}, len(logits), nil, false)
	for range 200 {
		for i := range logits {
			logits[i] = float32(r.NormFloat64() * 3)
		}
		if a, b := g.Sample(logits), k.Sample(logits); a != b {
			t.Fatalf("top_k=1 picked %d, greedy %d", b, a)
		}
	}
}

// probs4 are the logits of probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1.
var probs4 = []float32{float32(math.Log(0.5)), float32(math.Log(0.3)), float32(math.Log(0.15)), float32(math.Log(0.05))}

func TestDistribution(t *testing.T) {
	off := func(s llm.Sampling) llm.Sampling {
		if s.TopK == nil {
			s.TopK = intp(0)
		}
		if s.TopP == nil {
			s.TopP = f64(1)
		}
		if s.MinP == nil {
			s.MinP = f64(0)
		}
		s.Seed = 42
		return s
	}
	sq := []float64{math.Sqrt(0.5), math.Sqrt(0.3), math.Sqrt(0.15), math.Sqrt(0.05)}
	sqSum := sq[0] + sq[1] + sq[2] + sq[3]
	tests := []struct {
		name string
		s    llm.Sampling
		want []float64 // expected frequency per token; 0 = must never appear
	}{
		{"all off", off(llm.Sampling{Temperature: f64(1)}), []float64{0.5, 0.3, 0.15, 0.05}},
		{"top_p 0.9", off(llm.Sampling{Temperature: f64(1), TopP: f64(0.9)}), []float64{0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}},
		{"top_p 0.8", off(llm.Sampling{Temperature: f64(1), TopP: f64(0.79)}), []float64{0.5 / 0.8, 0.3 / 0.8, 0, 0}},
		{"min_p 0.2", off(llm.Sampling{Temperature: f64(1), MinP: f64(0.2)}), []float64{0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}},
		{"min_p 0.35", off(llm.Sampling{Temperature: f64(1), MinP: f64(0.35)}), []float64{0.5 / 0.8, 0.3 / 0.8, 0, 0}},
		{"top_p then min_p", off(llm.Sampling{Temperature: f64(1), TopP: f64(0.9), MinP: f64(0.35)}), []float64{0.5 / 0.8, 0.3 / 0.8, 0, 0}},
		{"top_k 2", off(llm.Sampling{Temperature: f64(1), TopK: intp(2)}), []float64{0.5 / 0.8, 0.3 / 0.8, 0, 0}},
		{"temperature 2", off(llm.Sampling{Temperature: f64(2)}), []float64{sq[0] / sqSum, sq[1] / sqSum, sq[2] / sqSum, sq[3] / sqSum}},
		{"defaults", llm.Sampling{Seed: 42}, nil}, // checked below: T=0.8, min_p 0.05 and top_p 0.95 keep all four
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.s, len(probs4), nil, false)
			const n = 10000
			var count [4]int
			for range n {
				count[s.Sample(probs4)]++
			}
			want := tt.want
			if want == nil {
				// p^(1/0.8): 0.420, 0.222, 0.093, 0.024 → cumulative 0.552, 0.844, 0.967: top_p 0.95 drops token 3.
				w := make([]float64, 3)
				var z float64
				for i := range w {
					w[i] = math.Pow([]float64{0.5, 0.3, 0.15}[i], 1.25)
					z += w[i]
				}
				want = []float64{w[0] / z, w[1] / z, w[2] / z, 0}
			}
			for i, c := range count {
				got := float64(c) / n
				if want[i] == 0 && c != 0 {
					t.Errorf("token %d drawn %d times, want never", i, c)
				}
				if math.Abs(got-want[i]) > 0.02 {
					t.Errorf("token %d frequency %.3f, want %.3f", i, got, want[i])
				}
			}
		})
	}
}

// keptSet is a naive reference: the tokens top_k, top_p and min_p leave, by a full sort.
func keptSet(logits []float32, temp, topP, minP float64, topK int) map[int]bool {
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	if topK > 0 {
		idx = idx[:topK]
	}
	w := make([]float64, len(idx))
	var z float64
	for i, id := range idx {
		w[i] = math.Exp((float64(logits[id]) - float64(logits[idx[0]])) / temp)
		z += w[i]
	}
	keep := map[int]bool{}
	var cum float64
	for i, id := range idx {
		if w[i] < minP {
			break
		}
		keep[id] = true
		cum += w[i]
		if cum >= topP*z {
			break
		}
	}
	return keep
}

func TestLargeVocabAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, 20000)
	for _, tc := range []struct {
		temp, topP, minP float64
		topK             int
	}{
		{1, 0.9, 0, 0},   // top_p over the whole vocabulary: incremental partial sorts
		{1, 0.999, 0, 0}, // many candidates
		{0.7, 0.95, 0.01, 0},
		{1.5, 0.5, 0, 500},
		{1, 1, 0.1, 0},
	} {
		s := New(llm.Sampling{Temperature: &tc.temp, TopP: &tc.topP, MinP: &tc.minP, TopK: &tc.topK, Seed: 9}, len(logits), nil, false)
		for range 20 {
			for i := range logits {
				logits[i] = float32(r.NormFloat64() * 2)
			}
			keep := keptSet(logits, tc.temp, tc.topP, tc.minP, tc.topK)
			for range 50 {
				if tok := s.Sample(logits); !keep[tok] {
					t.Fatalf("%+v: drew %d outside the %d kept tokens", tc, tok, len(keep))
				}
			}
		}
	}
}

func TestExpNeg(t *testing.T) {
	worst := 0.0
	for d := 0.0; d > minWeightExp; d -= 0.0007 {
		want := math.Exp(d)
		if rel := math.Abs(float64(expNeg(d))-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 3e-7 {
		t.Fatalf("expNeg relative error up to %g, want float32 precision", worst)
	}
	if got := expNeg(0); got != 1 {
		t.Fatalf("expNeg(0) = %v, want 1", got)
	}
}

func TestTopPBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := New(llm.Sampling{}, 1, nil, false)
	for _, n := range []int{1, 3, sortedTopP, sortedTopP + 1, 1000, 5000} {
		for _, p := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
			c := make([]cand, n)
			var z float64
			for i := range c {
				c[i] = cand{int32(i), float32(math.Exp(-float64(r.IntN(40)) / 4))} // many ties
				z += float64(c[i].v)
			}
			c[r.IntN(n)].v = 1
			want := slices.Clone(c)
			slices.SortFunc(want, compare)
			want, wantZ := cutAt(want, 0, 0, p*z)
			got, gotZ := s.nucleus(slices.Clone(c), p*z)
			slices.SortFunc(got, compare)
			if !slices.Equal(got, want) || math.Abs(gotZ-wantZ) > 1e-9*z {
				t.Fatalf("n=%d p=%v: kept %d (weight %v), want %d (weight %v)", n, p, len(got), gotZ, len(want), wantZ)
			}
		}
	}
}

func sequence(seed uint64, n int) []int {
	r := rand.New(rand.NewPCG(11, 12)) // the same logits for every sampler
	logits := make([]float32, 500)
	s := New(llm.Sampling{Seed: seed, Temperature: f64(1.5), TopK: intp(0), MinP: f64(0), RepeatPenalty: f64(1.1)}, len(logits), nil, false)
	var out []int
	for range n {
		for i := range logits {
			logits[i] = float32(r.NormFloat64())
		}
		tok := s.Sample(logits)
		s.Accept(tok)
		out = append(out, tok)
	}
	return out
}

func TestSeed(t *testing.T) {
	a, b := sequence(1234, 100), sequence(1234, 100)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed gave different tokens:\n%v\n%v", a, b)
	}
	if c := sequence(1235, 100); slices.Equal(a, c) {
		t.Fatalf("seeds 1234 and 1235 gave the same tokens: %v", a)
	}
	if c, d := sequence(0, 100), sequence(0, 100); slices.Equal(c, d) {
		t.Fatalf("seed 0 twice gave the same tokens: %v", c)
	}
}

func TestSampleDoesNotAllocate(t *testing.T) {
	logits := benchLogits(32000)
	for _, s := range []llm.Sampling{{}, {TopK: intp(0), MinP: f64(0)}, {Temperature: f64(0)}, {RepeatPenalty: f64(1.1), LogitBias: map[int]float64{5: 3}}} {
		sm := New(s, len(logits), []int{2}, true)
		for i := range 100 {
			sm.Accept(i * 7)
		}
		if n := testing.AllocsPerRun(50, func() { sm.Sample(logits) }); n != 0 {
			t.Errorf("%+v: %v allocations per Sample", s, n)
		}
	}
}

func benchLogits(n int) []float32 {
	r := rand.New(rand.NewPCG(7, 8))
	logits := make([]float32, n)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	return logits
}

func BenchmarkSample32k(b *testing.B) {
	logits := benchLogits(32000)
	for _, bc := range []struct {
		name string
		s    llm.Sampling
	}{
		{"defaults", llm.Sampling{RepeatPenalty: f64(1.1)}},
		{"greedy", llm.Sampling{Temperature: f64(0)}},
		{"topk0", llm.Sampling{TopK: intp(0)}},
		{"topk0_minp0", llm.Sampling{TopK: intp(0), MinP: f64(0)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(bc.s, len(logits), nil, false)
			for i := range llm.RepeatLastN {
				s.Accept(i * 13)
			}
			for b.Loop() {
				s.Sample(logits)
			}
		})
	}
}
