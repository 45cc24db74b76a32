package bench

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestPercentile(t *testing.T) {
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]time.Duration{50: 5, 99: 10, 100: 10, 10: 1, 11: 2, 0.1: 1} {
		if got := percentile(ds, p); got != want {
			t.Errorf("p%v: %v, want %v", p, got, want)
		}
	}
	if percentile(nil, 99) != 0 {
		t.Error("percentile of nothing")
	}
}

// The nearest-rank percentile against its definition: the smallest value
// with at least p% of the values at or below it.
func TestPercentileModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ds := rapid.SliceOfN(rapid.Int64Range(0, 1000), 1, 200).Draw(t, "values")
		p := rapid.Float64Range(0.01, 100).Draw(t, "p")
		sorted := make([]time.Duration, len(ds))
		for i, d := range ds {
			sorted[i] = time.Duration(d)
		}
		slices.Sort(sorted)
		got := percentile(sorted, p)
		var want time.Duration = -1
		for _, v := range sorted {
			atOrBelow := 0
			for _, u := range sorted {
				if u <= v {
					atOrBelow++
				}
			}
			if float64(atOrBelow) >= p/100*float64(len(sorted))-1e-9 {
				want = v
				break
			}
		}
		if got != want {
			t.Fatalf("p%v of %v: %v, want %v", p, sorted, got, want)
		}
	})
}

// Readers share the reads evenly, and none is lost.
func TestReadShare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 10_000).Draw(t, "n")
		k := rapid.IntRange(1, 100).Draw(t, "k")
		total, lo, hi := 0, n, 0
		for i := range k {
			s := readShare(n, k, i)
			total += s
			lo, hi = min(lo, s), max(hi, s)
		}
		if total != n || hi-lo > 1 {
			t.Fatalf("n %d over %d readers: total %d, shares %d..%d", n, k, total, lo, hi)
		}
	})
}
