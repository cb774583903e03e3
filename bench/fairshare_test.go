package bench

import "testing"

// TestPercentile: the nearest-rank percentile, whatever the order of the values.
func TestPercentile(t *testing.T) {
	xs := []float64{9, 1, 5, 3, 7, 2, 8, 4, 10, 6}
	for _, c := range []struct{ p, want float64 }{{0.5, 5}, {0.9, 9}, {1, 10}, {0.01, 1}} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of none = %v, want 0", got)
	}
	if xs[0] != 9 {
		t.Error("percentile sorted its argument")
	}
}
