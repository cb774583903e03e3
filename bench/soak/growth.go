package soak

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// A curve is one quantity sampled over the run (the server's RSS, its open files, ...).
type curve struct {
	name string
	unit unit
	// dayFloor is growth per day that never counts as a leak, whatever the extrapolation
	// says; stepFloor the rise between the first and last third's medians that never does.
	dayFloor, stepFloor float64
	t, v                []float64 // seconds since the start, values
}

// unit formats a curve's values.
type unit int

const (
	unitCount unit = iota
	unitBytes
)

func (u unit) format(v float64) string {
	if u == unitBytes {
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.0f", v)
}

func (u unit) formatRate(v float64) string {
	if u == unitBytes {
		return fmt.Sprintf("%+.1f MiB/h", v/(1<<20))
	}
	return fmt.Sprintf("%+.1f/h", v)
}

func (c *curve) add(t time.Duration, v float64) {
	c.t, c.v = append(c.t, t.Seconds()), append(c.v, v)
}

// Growth criterion. The samples before the warm-up ends are left out (heaps, caches and the
// first loads settle there). The rest are judged only when there are at least minJudged of
// them over at least minJudgedSpan: a shorter run cannot tell warm-up from a leak. A curve
// grows without bound when both of these hold:
//
//  1. the least-squares slope over the second half of the judged samples, extrapolated over a
//     day, exceeds max(dayFloor, dayShare × the first third's median): the curve still climbs
//     late in the run, fast enough to matter within a day;
//  2. the last third's median exceeds the first third's by more than max(stepFloor,
//     stepShare × the first third's median): the level itself moved, which one burst of
//     samples (a stream of requests in flight at one sample) cannot do to a median.
//
// Either alone fires on noise: a slope over a flat but noisy half can be steep, and a single
// step (a cache filled once) moves the medians without climbing on. Sawtooth curves (workers
// killed and restarted) keep both medians and the late slope flat.
const (
	minJudged     = 30
	minJudgedSpan = 10 * time.Minute
	dayShare      = 0.5
	stepShare     = 0.1
)

// judgement is what the criterion says of one curve.
type judgement struct {
	slope, lateSlope float64 // per hour: over the judged samples, over their second half
	first, last      float64 // medians of the first and last third
	judged, grows    bool
	samples          int
	why              string // why it grows, or why it was not judged
}

// judge applies the growth criterion to c, leaving out the samples before warm.
func (c *curve) judge(warm time.Duration) judgement {
	var t, v []float64
	for i := range c.t {
		if c.t[i] >= warm.Seconds() {
			t, v = append(t, c.t[i]), append(v, c.v[i])
		}
	}
	j := judgement{samples: len(t)}
	if len(t) < 2 {
		j.why = "too few samples"
		return j
	}
	j.slope = slope(t, v) * 3600
	half := len(t) / 2
	j.lateSlope = slope(t[half:], v[half:]) * 3600
	third := max(1, len(t)/3)
	j.first, j.last = median(v[:third]), median(v[len(v)-third:])
	span := time.Duration((t[len(t)-1] - t[0]) * float64(time.Second))
	if len(t) < minJudged || span < minJudgedSpan {
		j.why = fmt.Sprintf("not judged: %d samples over %s after the warm-up (needs %d over %s)", len(t), span.Round(time.Second), minJudged, minJudgedSpan)
		return j
	}
	j.judged = true
	dayBound := max(c.dayFloor, dayShare*j.first)
	stepBound := max(c.stepFloor, stepShare*j.first)
	perDay := j.lateSlope * 24
	if perDay > dayBound && j.last-j.first > stepBound {
		j.grows = true
		j.why = fmt.Sprintf("grows: %s over a day at the late slope (bound %s), last third's median %s above the first's (bound %s)",
			c.unit.format(perDay), c.unit.format(dayBound), c.unit.format(j.last-j.first), c.unit.format(stepBound))
	}
	return j
}

// slope is the least-squares slope of v over t (0 when t does not vary).
func slope(t, v []float64) float64 {
	n := float64(len(t))
	if n < 2 {
		return 0
	}
	var st, sv float64
	for i := range t {
		st += t[i]
		sv += v[i]
	}
	mt, mv := st/n, sv/n
	var num, den float64
	for i := range t {
		num += (t[i] - mt) * (v[i] - mv)
		den += (t[i] - mt) * (t[i] - mt)
	}
	if den == 0 || math.IsNaN(num/den) {
		return 0
	}
	return num / den
}

// median is the middle value of v (the upper middle of an even count); 0 when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
