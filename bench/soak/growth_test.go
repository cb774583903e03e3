package soak

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestJudge: the growth criterion fires on curves that climb on (a leak per request, a slow
// but steady one) and not on noise, sawtooth, one step, or growth below the floors.
func TestJudge(t *testing.T) {
	const every = 10 * time.Second
	hour := int(time.Hour / every)
	mib := float64(1 << 20)
	for _, tc := range []struct {
		name  string
		n     int
		value func(i int, r *rand.Rand) float64
		grows bool
	}{
		{"flat with noise", hour, func(i int, r *rand.Rand) float64 { return 100*mib + r.NormFloat64()*4*mib }, false},
		{"flat with rare bursts", hour, func(i int, r *rand.Rand) float64 {
			if r.IntN(20) == 0 {
				return 300 * mib
			}
			return 100 * mib
		}, false},
		{"sawtooth of worker restarts", hour, func(i int, _ *rand.Rand) float64 { return 60*mib + float64(i%18)*5*mib }, false},
		{"one step then flat", hour, func(i int, _ *rand.Rand) float64 {
			if i > hour/2 {
				return 160 * mib
			}
			return 100 * mib
		}, false},
		{"warm-up growth then flat", hour, func(i int, _ *rand.Rand) float64 { return 100*mib + 80*mib*(1-math.Exp(-float64(i)/20)) }, false},
		{"slow growth under the floors", hour, func(i int, _ *rand.Rand) float64 { return 100*mib + float64(i)*0.01*mib }, false},
		{"a leak per request", hour, func(i int, r *rand.Rand) float64 { return 100*mib + float64(i)*0.5*mib + r.NormFloat64()*4*mib }, true},
		{"a slow steady leak", hour, func(i int, r *rand.Rand) float64 { return 100*mib + float64(i)*0.15*mib + r.NormFloat64()*mib }, true},
		{"a leak that starts late", hour, func(i int, _ *rand.Rand) float64 { return 100*mib + float64(max(0, i-hour/3))*0.4*mib }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			c := &curve{name: tc.name, unit: unitBytes, dayFloor: 256 << 20, stepFloor: 32 << 20}
			for i := range tc.n {
				c.add(time.Duration(i)*every, tc.value(i, r))
			}
			j := c.judge(5 * time.Minute)
			if !j.judged || j.grows != tc.grows {
				t.Errorf("judged %v, grows %v (%s); want grows %v: slope %s, late %s, thirds %s → %s", j.judged, j.grows, j.why, tc.grows,
					c.unit.formatRate(j.slope), c.unit.formatRate(j.lateSlope), c.unit.format(j.first), c.unit.format(j.last))
			}
		})
	}
}

// TestJudgeShortRun: a run too short to tell warm-up from a leak is not judged, even when it
// climbs steeply.
func TestJudgeShortRun(t *testing.T) {
	c := &curve{name: "goroutines", unit: unitCount, dayFloor: 500, stepFloor: 30}
	for i := range 30 {
		c.add(time.Duration(i)*time.Second, float64(100+50*i))
	}
	j := c.judge(6 * time.Second)
	if j.judged || j.grows || !strings.Contains(j.why, "not judged") {
		t.Errorf("a 30 s run: judged %v, grows %v (%s)", j.judged, j.grows, j.why)
	}
	if j.slope < 100_000 {
		t.Errorf("slope %v/h; want the steep climb reported anyway", j.slope)
	}
}

func TestSlopeAndMedian(t *testing.T) {
	if got := slope([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}); math.Abs(got-2) > 1e-9 {
		t.Errorf("slope of 2x+1 = %v", got)
	}
	if got := slope([]float64{5, 5}, []float64{1, 9}); got != 0 {
		t.Errorf("slope over one instant = %v, want 0", got)
	}
	if got := median([]float64{9, 1, 5}); got != 5 {
		t.Errorf("median = %v", got)
	}
	if got := median(nil); got != 0 {
		t.Errorf("median of nothing = %v", got)
	}
}
